"""A multiple-choice study's categorical questions for Dawid-Skene (annotation/base/beyond_majority.py): per
task,
the option each worker chose on each example (a candidate's letter, or the task's "none" answer), the
categories of the task's alpha (validation.py); attention checks left out."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable

from annotation.base.beyond_majority import CategoricalQuestion, UnitRef
from annotation.base.models import Study
from annotation.kinds.multiple_choice.guidelines import NONE_LABELS
from annotation.kinds.multiple_choice.validation import study_answers
from goal_step.options import option_letter
from h2e_site.stats.dawid_skene import CrowdLabel

NO_CHOICE = "none of the options"


def choice_questions(study: Study) -> list[CategoricalQuestion]:
    labels: dict[str, list[CrowdLabel]] = defaultdict(list)
    units: dict[str, dict[Hashable, UnitRef]] = defaultdict(dict)
    for answer in study_answers(study):
        labels[answer.task].append(
            CrowdLabel(answer.example_id, answer.worker, _option(answer.task, answer.choice))
        )
        units[answer.task][answer.example_id] = UnitRef(f"{answer.task} example {answer.example_id}")
    return [
        CategoricalQuestion(task, f"{task}: which option?", given, units[task])
        for task, given in labels.items()
    ]


def _option(task: str, choice: int | str | None) -> str:
    if isinstance(choice, int):
        return f"option {option_letter(choice)}"
    return str(NONE_LABELS.get(task, NO_CHOICE))
