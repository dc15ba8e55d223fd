"""A multiple-choice worker's run in headless Chromium (#14 item 3, the paper's HIT): the prompt is
acknowledged, Tab moves between the candidates and Space selects one (one at a time), the server's refusal
of no choice is shown, and the completion redirect; screenshots at a laptop width and at 390 px."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotation.base.models import Annotation
from annotation.base.registry import StudyKind
from annotation.flow import services
from goal_step.models import TaskExample
from tests.annotation.conftest import pid
from tests.annotation.goal_step.conftest import make_task_set
from tests.browser.conftest import PAGE_OVERFLOW, PHONE, PROLIFIC, screenshot

pytestmark = pytest.mark.browser


def test_a_worker_answers_with_the_keyboard_to_the_completion_code(new_tab: Any, live_server: Any) -> None:
    make_task_set()
    study = services.study_create(
        title="Validate the tasks", slug="mc", kind=StudyKind.MULTIPLE_CHOICE,
        selection=services.Selection(task_set="tasks", tasks=["step_inference"]), annotators_per_item=3,
        min_dwell_seconds=0, items_per_participant=2, attention_check_every=0, completion_code="MC0K",
    )  # fmt: skip
    page = new_tab()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/a/{study.slug}/?PROLIFIC_PID={pid(5)}&STUDY_ID=a&SESSION_ID=b")
    page.get_by_role("button", name="I agree").click()
    page.get_by_role("button", name=re.compile("I have read the training")).click()
    for i, question in enumerate(study.comprehension_questions):
        page.locator(f"input[name=q{i}][value='{question['answer']}']").check()
    page.get_by_role("button", name="Check my answers").click()

    for n in range(2):
        page.locator("#ack-goal").wait_for()
        page.wait_for_load_state("load")  # htmx and the page's script are in place before any key
        if n == 0:
            screenshot(page, "multiple-choice/01-item-start")
            # Submitting without a choice is refused, and said so.
            page.locator("#ack-goal").focus()
            page.keyboard.press("Enter")
            page.locator("input.mc-choice").first.wait_for()
            page.get_by_role("button", name="Submit & Continue").click()
            page.get_by_text("Choose one of the options.").first.wait_for()
            page.wait_for_load_state("load")  # the refusal is a page of its own: its script in place
        else:
            page.locator("#ack-goal").focus()
            page.keyboard.press("Enter")
            page.locator("input.mc-choice").first.wait_for()
        # Keyboard: the first option takes the focus (autofocus, once htmx has settled the swap); Tab, Tab
        # reaches the third; Space selects it; then Shift+Tab and Space select the second instead.
        page.wait_for_function(
            "document.activeElement && document.activeElement.matches('input.mc-choice[value=\"0\"]')"
        )
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.value") == "2"
        page.keyboard.press("Space")
        assert page.locator("input.mc-choice").nth(2).is_checked()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Space")
        checked = [box.is_checked() for box in page.locator("input.mc-choice").all()]
        assert checked == [False, True, False, False, False], (n, checked)
        if n == 0:
            screenshot(page, "multiple-choice/02-item-chosen")
        page.get_by_role("button", name="Submit & Continue").click()
    page.wait_for_url(f"{PROLIFIC}submissions/complete?cc=MC0K")
    assert [a.answer["choice"] for a in Annotation.objects.order_by("pk")] == [1, 1]
    assert not errors, errors


def test_the_item_fits_a_phone(browser: Any, live_server: Any, transactional_db: None) -> None:
    make_task_set()
    study = services.study_create(
        title="Validate", slug="mc-phone", kind=StudyKind.MULTIPLE_CHOICE,
        selection=services.Selection(task_set="tasks"), min_dwell_seconds=0, attention_check_every=0,
    )  # fmt: skip
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/a/{study.slug}/?PROLIFIC_PID={pid(6)}&STUDY_ID=a&SESSION_ID=b")
        page.get_by_role("button", name="I agree").click()
        page.get_by_role("button", name=re.compile("I have read the training")).click()
        for i, question in enumerate(study.comprehension_questions):
            page.locator(f"input[name=q{i}][value='{question['answer']}']").check()
        page.get_by_role("button", name="Check my answers").click()
        page.locator("#ack-goal").click()
        page.locator("label.mc-option").first.click()
        overflow = page.evaluate(PAGE_OVERFLOW)
        assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
        for option in page.locator("label.mc-option").all():
            box = option.bounding_box()
            assert box is not None and box["height"] >= 24
        screenshot(page, "multiple-choice/03-phone")
    finally:
        context.close()


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)])
def test_an_example_with_more_options_than_letters_still_shows_every_one(
    browser: Any, live_server: Any, transactional_db: None, width: int, height: int
) -> None:
    """#19 item 4: an example changed to 30 candidates after the study was built (the importer and the
    builder refuse more than 26): AA to AD follow Z, and the page neither fails nor scrolls sideways."""
    make_task_set()
    study = services.study_create(
        title="Validate", slug=f"mc-many-{width}", kind=StudyKind.MULTIPLE_CHOICE,
        selection=services.Selection(task_set="tasks"), min_dwell_seconds=0, attention_check_every=0,
    )  # fmt: skip
    TaskExample.objects.update(candidates=[f"Candidate step number {i + 1}" for i in range(30)])
    context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=width < 500)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/a/{study.slug}/?PROLIFIC_PID={pid(7)}&STUDY_ID=a&SESSION_ID=b")
        page.get_by_role("button", name="I agree").click()
        page.get_by_role("button", name=re.compile("I have read the training")).click()
        for i, question in enumerate(study.comprehension_questions):
            page.locator(f"input[name=q{i}][value='{question['answer']}']").check()
        page.get_by_role("button", name="Check my answers").click()
        page.locator("#ack-goal").click()
        page.locator(".mc-letter").last.wait_for()  # htmx swapped the options in
        letters = page.locator(".mc-letter").all_inner_texts()
        assert letters[:2] == ["A", "B"] and letters[25:] == ["Z", "AA", "AB", "AC", "AD"]
        overflow = page.evaluate(PAGE_OVERFLOW)
        assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
        screenshot(page, f"multiple-choice/04-thirty-options-{width}")
    finally:
        context.close()
