"""A step-types participant's whole run in headless Chromium (#13 item 6): from the Prolific URL through
consent, the SIO training and its comprehension check to the item page, where every step is read before the
candidates appear, marked candidates ask for their expert answer, a refused submission keeps the marks, and
the completion redirect; the item page at a laptop width and at 390 px, with screenshots."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotation.base.models import Annotation
from annotation.base.registry import StudyKind
from annotation.flow import services
from annotation.kinds.step_types.models import StepTypeLabel
from mining.models import Split
from tests.annotation.conftest import pid
from tests.browser.conftest import PAGE_OVERFLOW, PHONE, PROLIFIC, screenshot
from tests.factories import make_procedure, make_topic

pytestmark = pytest.mark.browser

PATCH = [
    "Lay the base item on a flat, heat-resistant surface",
    "Place the patch in the position you chose",
    "Heat up an iron",
    "Place a thin towel over the patch",
    "Position the heated iron over the patch and press down",
    "Remove the iron and allow the patch to cool",
]


def make_patch_study(n: int = 1) -> Any:
    topic = make_topic("Home and Garden")
    for i in range(n):
        make_procedure(goal=f"How to Iron on a Patch ({i})", steps=PATCH, topic=topic, resources=["iron"])
    return services.study_create(
        title="Iron on a patch",
        slug="patch",
        kind=StudyKind.STEP_TYPES,
        selection=services.Selection(splits=[Split.BENCH]),
        annotators_per_item=3,
        min_dwell_seconds=3,
        items_per_participant=n,
        attention_check_every=0,
        completion_code="STEPS0K",
        screenout_code="SCREEN0UT",
    )


def qualify(page: Any, live_server: Any, study: Any, n: int = 7) -> None:
    page.goto(f"{live_server.url}/a/{study.slug}/?PROLIFIC_PID={pid(n)}&STUDY_ID=abc&SESSION_ID=s1")
    page.get_by_role("button", name="I agree").click()
    page.get_by_role("button", name=re.compile("I have read the training")).wait_for()
    screenshot(page, f"step-types/00-training-{page.viewport_size['width']}")
    page.get_by_role("button", name=re.compile("I have read the training")).click()
    page.get_by_role("heading", name="A short check").wait_for()
    screenshot(page, f"step-types/00-check-{page.viewport_size['width']}")
    for i, question in enumerate(study.comprehension_questions):
        page.locator(f"input[name=q{i}][value='{question['answer']}']").check()
    page.get_by_role("button", name="Check my answers").click()
    page.get_by_text("Reading progress: 0/6 steps (0%)").wait_for()


def read_all(page: Any) -> None:
    page.locator("#ack-goal").click()
    for n in range(1, len(PATCH) + 1):
        page.locator(f"#step-{n} button").click()
        page.get_by_text(f"Reading progress: {n}/6 steps").wait_for()


def test_a_participant_marks_step_types_from_prolific_to_the_completion_code(
    new_tab: Any,
    live_server: Any,
) -> None:
    study = make_patch_study()
    page = new_tab()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    qualify(page, live_server, study)
    assert page.get_by_text("Read every step to see the questions.").is_visible()
    assert page.locator("input[name=mark]").count() == 0
    screenshot(page, "step-types/01-item-start")
    read_all(page)

    # Every step read: the candidates of the three types, 5 + 4 + 4 for six steps.
    assert page.locator("input[name=mark]").count() == 13
    page.get_by_label("Step 0 → step 1").check()
    page.get_by_label("At step 0: steps 1 and 2").check()
    expert = page.locator(".candidate-expert[data-for='sequential:0-1']")
    assert expert.is_visible()
    assert not page.locator(".candidate-expert[data-for='sequential:1-2']").is_visible()  # not marked
    expert.get_by_label("No").check()
    page.locator("#task-expert-no, input[name=expert_knowledge][value=no]").first.check()
    screenshot(page, "step-types/02-item-marked")

    # The interchangeable pair has no expert answer: refused, shown next to it, marks kept.
    page.wait_for_function("!document.getElementById('submit-button').disabled", timeout=10_000)
    page.get_by_role("button", name="Submit & Continue").click()
    refusal = page.locator(".candidate.has-error")
    refusal.get_by_text("say whether it needs expert or domain knowledge").wait_for()
    assert page.get_by_label("Step 0 → step 1").is_checked()
    assert page.get_by_label("At step 0: steps 1 and 2").is_checked()
    screenshot(page, "step-types/03-item-refused")
    refusal.locator(".candidate-expert").get_by_label("No").check()
    page.get_by_role("button", name="Submit & Continue").click()
    page.wait_for_url(f"{PROLIFIC}submissions/complete?cc=STEPS0K")

    annotation = Annotation.objects.get()
    held = StepTypeLabel.objects.filter(annotation=annotation, holds=True)
    assert sorted(held.values_list("candidate__key", flat=True)) == [
        "interchangeable@0:1-2",
        "sequential:0-1",
    ]
    assert StepTypeLabel.objects.filter(annotation=annotation).count() == 13
    assert annotation.answer == {"expert_knowledge": False} and len(annotation.step_revealed_at) == 6
    assert not errors, errors


def test_the_step_types_item_page_fits_a_phone(
    browser: Any, live_server: Any, transactional_db: None
) -> None:
    study = make_patch_study()
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        qualify(page, live_server, study)
        read_all(page)
        page.get_by_label("At step 2: step 3").check()
        overflow = page.evaluate(PAGE_OVERFLOW)
        assert overflow <= 0, f"the page scrolls sideways by {overflow} px at 390 px"
        for box in page.locator("label.candidate-mark").all():
            size = box.bounding_box()
            assert size is not None and size["height"] >= 24
        screenshot(page, "step-types/04-phone-item")
    finally:
        context.close()
