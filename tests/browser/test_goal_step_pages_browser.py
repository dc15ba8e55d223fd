"""The goal-step pages of #14 in Chromium at 1440 and 390 px, with screenshots: the task sets page with its
build form, a built task set (funnel, artifact check, models, sample), and the crowd validation page of a
multiple-choice study over it with the models on the validated examples."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from annotation.base.registry import StudyKind
from annotation.flow import services
from annotation.kinds.multiple_choice.spec import MultipleChoiceSubmission
from goal_step.models import TaskAnswer, TaskModel
from tests.annotation.conftest import annotate_all, qualified
from tests.browser.conftest import both_widths
from tests.goal_step.task_sets import build, make_procedures

pytestmark = pytest.mark.browser


def test_the_goal_step_pages(staff_page: Any, live_server: Any) -> None:
    make_procedures()
    task_set = build("pages")
    examples = list(task_set.examples.filter(split="test", task="step_inference").order_by("position"))
    model = TaskModel.objects.create(model_id="m1", model="org/answerer")
    for i, example in enumerate(examples):
        TaskAnswer.objects.create(model=model, example=example, choice=example.answer if i % 3 else None)
    study = services.study_create(
        title="Validate pages", slug="validate-pages", kind=StudyKind.MULTIPLE_CHOICE,
        selection=services.Selection(task_set="pages", tasks=["step_inference", "step_ordering"]),
        annotators_per_item=2, min_dwell_seconds=0, items_per_participant=0, attention_check_every=0,
    )  # fmt: skip
    for worker in (1, 2):  # both answer every example; worker 2 misses every third one
        taken = itertools.count()

        def choose(assignment: Any, worker: int = worker, taken: Iterator[int] = taken) -> Any:
            example = assignment.item.example
            wrong = worker == 2 and next(taken) % 3 == 0
            choice = (example.answer + 1) % len(example.candidates) if wrong else example.answer
            return MultipleChoiceSubmission(choice)

        annotate_all(qualified(study, worker), choose)
    errors: list[str] = []
    staff_page.on("pageerror", lambda error: errors.append(str(error)))
    for name, path, text in [
        ("task-sets", "/tasks/", "pages"),
        ("task-set", "/tasks/pages/", "Artifact check"),
        ("validation", f"/agreement/{study.slug}/", "Models on the"),
    ]:
        staff_page.goto(f"{live_server.url}{path}")
        staff_page.get_by_text(text).first.wait_for()
        both_widths(staff_page, f"goal-step-{name}")
    assert not errors, errors
