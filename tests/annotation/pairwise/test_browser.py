"""A pairwise participant's whole run in headless Chromium, at 1,440 and at 390 px: from the Prolific URL
through consent, training and the comprehension check to the item page, where the goal is acknowledged and
every step of both L2s read in order before the form opens; a verdict without the failures it implies is
refused and kept, a failure linked to its side and steps is accepted, and Prolific's completion code follows.
Screenshots of each stage; no page error; nothing scrolls sideways."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotation.base.models import Annotation, Assignment
from annotation.kinds.pairwise.guidelines import SIDE_WORDS
from tests.annotation.conftest import pid
from tests.annotation.test_annotator_browser import htmx_ready
from tests.browser.conftest import DESKTOP, PAGE_OVERFLOW, PHONE, PROLIFIC, screenshot

from .helpers import STEPS, make_generators, make_pairwise_study

pytestmark = pytest.mark.browser


def qualify(page: Any, live_server: Any, study: Any, width: int) -> None:
    page.goto(f"{live_server.url}/a/{study.slug}/?PROLIFIC_PID={pid(7)}&STUDY_ID=abc&SESSION_ID=s1")
    page.get_by_role("button", name="I agree").click()
    page.get_by_role("button", name=re.compile("I have read the training")).wait_for()
    screenshot(page, f"pairwise/00-training-{width}")
    page.get_by_role("button", name=re.compile("I have read the training")).click()
    page.get_by_role("heading", name="A short check").wait_for()
    for i, question in enumerate(study.comprehension_questions):
        page.locator(f"input[name=q{i}][value='{question['answer']}']").check()
    page.get_by_role("button", name="Check my answers").click()
    page.get_by_text("Reading progress: 0/5 steps (0%)").wait_for()


def read_both(page: Any, total: int) -> None:
    page.locator("#ack-goal").click()
    for n in range(1, total + 1):
        htmx_ready(page, f"#l2-step-{n} button").click()
        page.get_by_text(f"Reading progress: {n}/{total} steps").wait_for()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_a_pairwise_participant_from_prolific_to_the_completion_code(
    new_tab: Any, live_server: Any, viewport: dict[str, int]
) -> None:
    width = viewport["width"]
    study = make_pairwise_study(
        n_goals=1, k=1, generators=make_generators(("gen-a", "gen-b")), items_per_participant=1
    )
    study.min_dwell_seconds = 2
    study.completion_code = "PAIRS0K"
    study.save()
    page = new_tab()
    page.set_viewport_size(viewport)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    qualify(page, live_server, study, width)
    screenshot(page, f"pairwise/01-item-start-{width}")
    total = len(STEPS["gen-a"]) + len(STEPS["gen-b"])
    read_both(page, total)
    assert page.locator("#l2-step-1.step-read").is_visible()
    overflow = page.evaluate(PAGE_OVERFLOW)
    assert overflow <= 0, f"the item page scrolls sideways by {overflow} px at {width} px"

    # #31 item 8: "first" and "second" name the L2s, true side by side and stacked (a phone) alike
    first, second = (page.locator(f"#{side}-heading").bounding_box() for side in ("left", "right"))
    assert first is not None and second is not None
    stacked = second["y"] > first["y"] + first["height"]
    assert stacked == (width < 700), f"at {width} px: {first}, {second}"
    assert [page.inner_text(f"#{side}-heading") for side in ("left", "right")] == [
        "First L2 (to compare)",
        "Second L2 (to compare)",
    ]
    assert not re.search(r"\b(left|right) L2", page.inner_text("#item-form"), re.IGNORECASE)

    # gen-a (steps like L1) is better; gen-b pours cold water. Its side was drawn for this participant.
    left = Assignment.objects.get().presentation["left"]
    better, worse = ("left", "right") if left == "a" else ("right", "left")
    page.locator(f"input[name=verdict][value={better}]").check()
    screenshot(page, f"pairwise/02-verdict-{width}")
    page.wait_for_function("!document.getElementById('submit-button').disabled", timeout=10_000)
    page.get_by_role("button", name="Submit & Continue").click()
    page.get_by_text(f"list the critical failures of the {SIDE_WORDS[worse]} L2").first.wait_for()
    assert page.locator(f"input[name=verdict][value={better}]").is_checked()  # kept on refusal
    screenshot(page, f"pairwise/03-refused-{width}")

    entry = page.locator(".pair-failure").first
    entry.locator(f"input[name='failure-0-side'][value={worse}]").check()
    entry.locator("textarea").fill("Pours cold water: the tea never brews.")
    entry.locator("label:has(input[name='failure-0-l1'][value='1'])").click()
    entry.locator("label:has(input[name='failure-0-l2'][value='1'])").click()
    page.locator("#add-pair-failure").click()
    assert page.locator(".pair-failure").count() == 2
    page.locator(".pair-failure").nth(1).locator(".remove-pair-failure").click()
    assert page.locator(".pair-failure").count() == 1
    overflow = page.evaluate(PAGE_OVERFLOW)
    assert overflow <= 0, f"the filled form scrolls sideways by {overflow} px at {width} px"
    screenshot(page, f"pairwise/04-filled-{width}")
    page.get_by_role("button", name="Submit & Continue").click()
    page.wait_for_url(f"{PROLIFIC}submissions/complete?cc=PAIRS0K")

    annotation = Annotation.objects.get()
    assert annotation.answer["verdict"] == better and annotation.answer["left"] == left
    assert annotation.answer["failures"] == [
        {
            "side": worse,
            "description": "Pours cold water: the tea never brews.",
            "l1_steps": [1],
            "l2_steps": [1],
        }
    ]
    assert len(annotation.step_revealed_at) == total
    assert not errors, errors
