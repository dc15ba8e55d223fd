"""The annotator's whole flow in headless Chromium: from the Prolific URL to the completion redirect, with
the dwell gate, a refused early POST, keyboard reading, resume in a fresh browser, and screenshots."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotation.base.models import Annotation
from tests.annotation.conftest import make_study, pid
from tests.browser.conftest import PROLIFIC, STAFF_PASSWORD, screenshot
from tests.factories import make_user

pytestmark = pytest.mark.browser

COCONUT_L1 = [
    "Place a spoonful of coconut oil in your mouth.",
    "Swish the oil around your mouth for 10-20 minutes without swallowing it.",
    "Spit the oil into the trash to avoid clogging drains.",
    "Rinse your mouth thoroughly with water after spitting out the oil.",
]
COCONUT_L2 = [
    "Use a spoon to measure 1 tablespoon of coconut oil.",
    "Swish the coconut oil in your mouth for 10-20 minutes.",
    "Spit the coconut oil out in the trash.",
    "Rinse your mouth with water.",
]


def entry(live_server: Any, slug: str) -> str:
    return f"{live_server.url}/a/{slug}/?PROLIFIC_PID={pid(7)}&STUDY_ID=abc123&SESSION_ID=sess42"


def qualify(page: Any, live_server: Any, slug: str) -> None:
    page.goto(entry(live_server, slug))
    page.get_by_role("heading", name="Before you start").wait_for()
    screenshot(page, "annotation/01-consent")
    page.get_by_role("button", name="I agree").click()
    page.get_by_role("heading", name="How to judge a procedure").wait_for()
    screenshot(page, "annotation/02-training")
    page.get_by_role("button", name=re.compile("I have read the training")).click()
    page.get_by_role("heading", name="A short check").wait_for()
    page.get_by_label("No: both are valid ways to achieve the goal").check()
    page.get_by_label("Yes: L2 contradicts itself").check()
    page.get_by_label("Whether L2 achieves the goal").check()
    screenshot(page, "annotation/03-comprehension")
    page.get_by_role("button", name="Check my answers").click()
    page.get_by_text("Do you see any critical failures in L2?").wait_for()


def htmx_ready(page: Any, selector: str) -> Any:
    """The element once htmx has taken it over: a click before that posts the page's form without htmx (the
    progressive fallback) and answers a whole page, not the fragment a test waits for."""
    page.locator(selector).wait_for()
    page.wait_for_function(
        "s => { const e = document.querySelector(s); return !!e && !!e['htmx-internal-data']"
        " && !document.querySelector('.htmx-settling, .htmx-swapping, .htmx-request'); }",
        arg=selector,
    )
    return page.locator(selector)


def read_steps(page: Any, upto: int, total: int) -> None:
    for n in range(page_read_count(page) + 1, upto + 1):
        htmx_ready(page, f"#l2-step-{n} button").click()
        page.get_by_text(f"Reading progress: {n}/{total} steps").wait_for()


def page_read_count(page: Any) -> int:
    text = page.locator(".reading-progress strong").inner_text()
    match = re.search(r"(\d+)/\d+ steps", text)
    assert match
    return int(match.group(1))


def direct_submit(page: Any, live_server: Any) -> Any:
    """POST the item form as a script would, with the page's cookies and CSRF token, bypassing the UI."""
    token = page.locator("input[name=csrfmiddlewaretoken]").first.get_attribute("value")
    action = page.locator("#item-form").get_attribute("action")
    return page.request.post(
        f"{live_server.url}{action}",
        form={"csrfmiddlewaretoken": token, "has_failure": "no"},
        headers={"X-CSRFToken": token, "Referer": page.url},
    )


def test_it_walks_an_annotator_from_prolific_to_the_completion_code(new_tab: Any, live_server: Any) -> None:
    study = make_study(n_items=2, k=3, dwell=6, l1=COCONUT_L1, l2=COCONUT_L2, items_per_participant=2)
    page = new_tab()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.on("pageerror", lambda error: console.append(str(error)))
    qualify(page, live_server, study.slug)

    # The item as first shown: L2 hidden, submission closed until the dwell time has passed.
    submit = page.get_by_role("button", name="Submit & Continue")
    assert submit.is_disabled(), (page.locator("#clock").inner_text(), console)
    assert "until submission becomes open" in page.locator("#clock").inner_text()
    assert page.locator("#l2-step-1").count() == 0
    screenshot(page, "annotation/04-item-start")

    # A direct POST before the dwell time is refused by the server.
    early = direct_submit(page, live_server)
    assert early.status == 400 and "Submission opens 6 s after the item was shown" in early.text()

    # Keyboard: acknowledge the goal, then read the first L2 step with Enter (it takes the focus).
    page.locator("#ack-goal").focus()
    page.keyboard.press("Enter")
    page.get_by_text("Reading progress: 0/4 steps (0%)").wait_for()
    page.locator("#l2-step-1 button").wait_for()
    # The swapped-in step takes the focus once htmx has settled it (a moment after the button appears).
    page.wait_for_function("document.activeElement && document.activeElement.closest('#l2-step-1') !== null")
    page.keyboard.press("Enter")
    page.get_by_text("Reading progress: 1/4 steps (25%)").wait_for()
    read_steps(page, 3, 4)
    screenshot(page, "annotation/05-item-reading")

    # Close the tab; the same PID in a fresh browser resumes with its reading and its clock.
    page.context.close()
    page = new_tab()
    page.goto(entry(live_server, study.slug))
    page.get_by_text("Reading progress: 3/4 steps (75%)").wait_for()
    assert page.locator("#l2-step-4 button").count() == 1

    # Once the dwell time has passed, a direct POST with an L2 step unread is still refused.
    page.wait_for_function("!document.getElementById('submit-button').disabled", timeout=15_000)
    unread = direct_submit(page, live_server)
    assert unread.status == 400 and "Read every L2 step before submitting (3 of 4 read)" in unread.text()
    read_steps(page, 4, 4)

    # Critical failures: two entries with step chips.
    page.get_by_label("Your answer").select_option("yes")
    page.get_by_text("Selecting this option means that: L2 has major incoherence").wait_for()
    page.locator("#failure-0-description").fill("L2 measures a tablespoon <b>not</b> a spoonful")
    page.locator("label.step-chip", has_text="L1.1").first.click()
    page.locator("label.step-chip", has_text="L2.1").first.click()
    page.get_by_role("button", name="+ Add another critical failure").click()
    page.locator("#failure-1-description").fill("second example (not a real failure)")
    page.locator(".failure-entry").nth(1).locator("label.step-chip", has_text="L2.4").click()
    page.get_by_label("Comments (optional)").fill("Demo of the interface")
    assert page.get_by_text("You have unsubmitted changes").is_visible()

    # A reload keeps what was typed (a draft in this browser); the leave-page warning is accepted.
    page.once("dialog", lambda dialog: dialog.accept())
    page.reload()
    page.get_by_text("Reading progress: 4/4 steps (100%)").wait_for()
    assert page.locator("#failure-1-description").input_value() == "second example (not a real failure)"
    assert page.locator(".failure-entry").nth(1).locator("input[value='4'][name$='-l2']").is_checked()
    assert page.get_by_label("Comments (optional)").input_value() == "Demo of the interface"
    page.wait_for_function("!document.getElementById('submit-button').disabled", timeout=15_000)
    assert "Time elapsed" in page.locator("#clock").inner_text()
    screenshot(page, "annotation/06-item-failures")
    page.get_by_role("button", name="Submit & Continue").click()

    # Second item: no critical failure, then the completion redirect.
    page.get_by_text("Reading progress: 0/4 steps (0%)").wait_for()
    page.locator("#ack-goal").click()
    read_steps(page, 4, 4)
    page.get_by_label("Your answer").select_option("no")
    page.get_by_text("Selecting this option means that: L2 reasonably achieves the goal.").wait_for()
    screenshot(page, "annotation/07-item-no-failure")
    page.wait_for_function("!document.getElementById('submit-button').disabled", timeout=15_000)
    page.get_by_role("button", name="Submit & Continue").click()
    page.wait_for_url(f"{PROLIFIC}submissions/complete?cc=C0MPLETE")

    first, second = Annotation.objects.order_by("submitted_at")
    assert first.has_failure and [f.l2_steps for f in first.failures.all()] == [[1], [4]]
    assert first.failures.first().description == "L2 measures a tablespoon <b>not</b> a spoonful"  # type: ignore[union-attr]
    assert first.elapsed_seconds >= 6 and len(first.step_revealed_at) == 4 and "Chrom" in first.user_agent
    assert not second.has_failure and second.active_seconds is not None

    # The finished PID sees its completion code again.
    page.goto(entry(live_server, study.slug))
    page.get_by_text("C0MPLETE").wait_for()
    screenshot(page, "annotation/08-done")


def test_it_shows_the_researcher_the_study_progress(new_tab: Any, live_server: Any) -> None:
    study = make_study(n_items=3, k=3, attention_checks=1)
    make_user(username="researcher", is_staff=True, password=STAFF_PASSWORD)
    page = new_tab()
    page.goto(f"{live_server.url}/accounts/login/?next=/studies/{study.slug}/")
    page.fill("#id_username", "researcher")
    page.fill("#id_password", STAFF_PASSWORD)
    page.click("button[type=submit]")
    page.get_by_role("heading", name=study.title).wait_for()
    assert page.get_by_role("link", name="Export JSONL").is_visible()
    screenshot(page, "annotation/09-study-detail")
    page.goto(f"{live_server.url}/studies/new/")
    screenshot(page, "annotation/10-study-form")
