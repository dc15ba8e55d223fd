"""Crowd validation of a task set's test examples (the wikiHow paper §3.4, Table 2): every example is
answered by k workers of a multiple-choice study (attention checks left out); per task:

- the distribution of how many workers chose the gold answer (0 … k), over the examples with all k answers;
- the **yield**: the share of those examples that every worker answered correctly (the paper: .543 / .408 /
  .356), k of n with its 95 % Wilson interval; those examples are the validated test set;
- **human accuracy**: correct answers over all answers (Wilson interval); "None of the above" / "Neutral"
  is an answer, and a wrong one;
- **Krippendorff's alpha**, nominal, over the workers' choices (each candidate its own category, "none"
  another), the `krippendorff` package through h2e_site.stats.agreement.nominal_alpha
  (undefined by h2e_site.stats' one rule: fewer than 2 examples with two answers, or one choice throughout).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from annotation.base.models import Annotation, Study
from annotation.kinds.multiple_choice.name import KIND
from h2e_site.stats import Share
from h2e_site.stats.agreement import nominal_alpha, rating_counts

NONE_CODE = -1.0


@dataclass
class TaskValidation:
    task: str
    k: int
    by_correct: dict[int, int]  # workers choosing the gold -> examples
    kept: Share  # examples all k answered correctly, of those with k answers
    accuracy: Share  # correct answers, of all answers
    alpha: float | None
    n_examples_answered: int  # with at least one answer
    alpha_undefined: str = ""  # why alpha is None (h2e_site.stats' rule)

    def as_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "k": self.k,
            "workers_choosing_gold": {str(n): count for n, count in sorted(self.by_correct.items())},
            "yield": self.kept.as_json(),
            "human_accuracy": self.accuracy.as_json(),
            "krippendorff_alpha": self.alpha,
            "krippendorff_alpha_undefined": self.alpha_undefined,
            "n_examples_answered": self.n_examples_answered,
        }


@dataclass(frozen=True)
class Answer:
    example_id: int
    task: str
    worker: str
    choice: int | str | None
    correct: bool


def study_answers(study: Study) -> list[Answer]:
    """The study's answers on regular items (one query)."""
    rows = (
        Annotation.objects.filter(study=study, item__is_attention_check=False)
        .order_by("item_id", "pk")
        .values_list("item__example_id", "item__example__task", "participant__prolific_pid", "answer")
    )
    return [
        Answer(example_id, task, pid, answer.get("choice"), bool(answer.get("correct")))
        for example_id, task, pid, answer in rows
    ]


def validate(answers: list[Answer], *, k: int) -> list[TaskValidation]:
    """The figures of each task, in the tasks' order of first appearance."""
    by_task: dict[str, list[Answer]] = defaultdict(list)
    for answer in answers:
        by_task[answer.task].append(answer)
    return [_task_validation(task, given, k) for task, given in by_task.items()]


def _task_validation(task: str, answers: list[Answer], k: int) -> TaskValidation:
    by_example: dict[int, list[Answer]] = defaultdict(list)
    for answer in answers:
        by_example[answer.example_id].append(answer)
    complete = [given for given in by_example.values() if len(given) >= k]
    by_correct = Counter(sum(a.correct for a in given) for given in complete)
    kept = sum(all(a.correct for a in given) for given in complete)
    ratings: dict[str, dict[int, float]] = defaultdict(dict)
    for answer in answers:
        ratings[answer.worker][answer.example_id] = _code(answer.choice)
    alpha = nominal_alpha(rating_counts(ratings))
    return TaskValidation(
        task=task,
        k=k,
        by_correct={n: by_correct.get(n, 0) for n in range(k + 1)},
        kept=Share(kept, len(complete)),
        accuracy=Share(sum(a.correct for a in answers), len(answers)),
        alpha=alpha.value,
        n_examples_answered=len(by_example),
        alpha_undefined=alpha.undefined,
    )


def _code(choice: int | str | None) -> float:
    return float(choice) if isinstance(choice, int) else NONE_CODE


def kept_example_ids(answers: list[Answer], *, k: int) -> set[int]:
    """The examples every one of their (at least k) workers answered correctly: the validated test set."""
    by_example: dict[int, list[Answer]] = defaultdict(list)
    for answer in answers:
        by_example[answer.example_id].append(answer)
    return {pk for pk, given in by_example.items() if len(given) >= k and all(a.correct for a in given)}


def study_validation(study: Study) -> list[TaskValidation]:
    return validate(study_answers(study), k=study.annotators_per_item)


def validation_studies(task_set_name: str) -> list[Study]:
    """The multiple-choice studies over a task set that have answers."""
    studies = Study.objects.filter(kind=KIND, selection__task_set=task_set_name, annotations__isnull=False)
    return list(studies.distinct().order_by("created_at", "pk"))


def task_set_validated_pks(task_set: Any) -> set[int] | None:
    """The validated test examples of a task set: those every worker answered correctly in any of its
    multiple-choice studies (None: no study has answers yet). Registered as goal_step.human_labels'
    `validated` (annotation's AppConfig.ready()): the goal-step app serves the validated test set and scores
    models on it."""
    studies = validation_studies(task_set.name)
    if not studies:
        return None
    kept: set[int] = set()
    for study in studies:
        kept |= kept_example_ids(study_answers(study), k=study.annotators_per_item)
    return kept


__all__ = [
    "Answer",
    "TaskValidation",
    "kept_example_ids",
    "study_answers",
    "study_validation",
    "task_set_validated_pks",
    "validate",
    "validation_studies",
]
