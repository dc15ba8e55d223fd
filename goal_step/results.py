"""Model accuracy on a task set (issue #14, item 4; the paper's Table 1 for models): per model and task, the
share of examples answered right with its 95 % Wilson interval, overall and per topic, and the same model's
candidates-only run beside it as its own artifact check (it must sit at chance, 25 % / 50 %).

- An answer is right when its choice is the example's answer. An unparsable answer (choice None) counts as
  wrong and is counted apart (`unparsable`); an example without an answer (a failed request, a run not
  finished) counts nowhere: `n` is the answered examples, `n_examples` all examples of the task in the split,
  and the pages show both.
- Chance is the mean of 1 / candidates over the answered examples (over all of them before any answer).
- `accuracy_table` is pure over the rows (examples and answers as tuples); `task_models_results` reads a task
  set's split in three queries (examples, answers, models) and hands them to it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from h2e_site.stats import wilson_interval

from .models import GoalStepTask, TaskAnswer, TaskExample, TaskModel, TaskSet, TaskSplit

__all__ = [
    "NO_TOPIC",
    "Accuracy",
    "AnswerRow",
    "ExampleRow",
    "ModelResults",
    "TaskAccuracy",
    "TaskModelsTable",
    "TopicAccuracy",
    "accuracy_of",
    "accuracy_table",
    "task_models_results",
]

NO_TOPIC = "(no topic)"


class ExampleRow(NamedTuple):
    pk: int
    task: str
    topic: str
    answer: int
    n_candidates: int


class AnswerRow(NamedTuple):
    model: int  # TaskModel pk
    example: int  # TaskExample pk
    candidates_only: bool
    choice: int | None


@dataclass(frozen=True)
class Accuracy:
    """k right of n answered (unparsable ones among the wrong), out of n_examples."""

    correct: int
    n: int
    unparsable: int
    n_examples: int
    chance: float

    @property
    def share(self) -> float | None:
        return self.correct / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.correct, self.n)

    @property
    def missing(self) -> int:
        return self.n_examples - self.n

    @property
    def at_chance(self) -> bool:
        """Chance lies inside the 95 % interval (False with no answers)."""
        interval = self.interval
        return interval is not None and interval[0] <= self.chance <= interval[1]

    # For the templates: percent and the interval's whisker (left edge and width, in percent).
    @property
    def percent(self) -> float | None:
        share = self.share
        return None if share is None else 100 * share

    @property
    def interval_percent(self) -> tuple[float, float] | None:
        interval = self.interval
        return None if interval is None else (100 * interval[0], 100 * interval[1])

    @property
    def interval_width_percent(self) -> float | None:
        interval = self.interval
        return None if interval is None else 100 * (interval[1] - interval[0])

    @property
    def chance_percent(self) -> float:
        return 100 * self.chance


@dataclass(frozen=True)
class TopicAccuracy:
    topic: str
    accuracy: Accuracy


@dataclass(frozen=True)
class TaskAccuracy:
    task: str
    overall: Accuracy
    by_topic: list[TopicAccuracy]
    candidates_only: Accuracy | None  # None: the model never answered this task from the candidates alone

    @property
    def label(self) -> str:
        return _label(self.task)


def _label(task: str) -> str:
    return str(GoalStepTask(task).label) if task in GoalStepTask.values else task


@dataclass(frozen=True)
class ModelResults:
    model: TaskModel
    tasks: list[TaskAccuracy]

    @property
    def unparsable(self) -> int:
        return sum(t.overall.unparsable for t in self.tasks)

    @property
    def topic_rows(self) -> list[tuple[str, list[Accuracy | None]]]:
        """Per topic, its accuracy in each task of `tasks` (None: the task has no example of the topic)."""
        cells = {t.task: {c.topic: c.accuracy for c in t.by_topic} for t in self.tasks}
        topics = sorted({c.topic for t in self.tasks for c in t.by_topic}, key=_topic_order)
        return [(topic, [cells[t.task].get(topic) for t in self.tasks]) for topic in topics]


@dataclass(frozen=True)
class TaskModelsTable:
    task_set: TaskSet | None
    split: str
    tasks: list[str]  # the tasks the split has examples of, in GoalStepTask order
    n_examples: dict[str, int]
    topics: list[str]
    models: list[ModelResults] = field(default_factory=list)

    @property
    def columns(self) -> list[tuple[str, str, int]]:
        """(task, its label, its examples) per task, for a table's header."""
        return [(task, _label(task), self.n_examples[task]) for task in self.tasks]

    @property
    def has_demo_model(self) -> bool:
        return any(results.model.is_demo_model for results in self.models)


def accuracy_of(examples: Iterable[ExampleRow], choices: Mapping[int, int | None]) -> Accuracy:
    """The accuracy of the answers `choices` (example pk -> choice, None: unparsable) over `examples`."""
    correct = n = unparsable = n_examples = 0
    chance_all = chance_answered = 0.0
    for example in examples:
        n_examples += 1
        one_in = 1 / example.n_candidates if example.n_candidates else 0.0
        chance_all += one_in
        if example.pk not in choices:
            continue
        n += 1
        chance_answered += one_in
        choice = choices[example.pk]
        if choice is None:
            unparsable += 1
        elif choice == example.answer:
            correct += 1
    chance = chance_answered / n if n else (chance_all / n_examples if n_examples else 0.0)
    return Accuracy(correct=correct, n=n, unparsable=unparsable, n_examples=n_examples, chance=chance)


def _task_order(task: str) -> tuple[int, str]:
    order = list(GoalStepTask.values)
    return (order.index(task), task) if task in order else (len(order), task)


def _topic_order(topic: str) -> tuple[bool, str]:
    return (topic == NO_TOPIC, topic.casefold())


def accuracy_table(
    examples: Sequence[ExampleRow],
    answers: Iterable[AnswerRow],
    models: Mapping[int, TaskModel],
    *,
    task_set: TaskSet | None = None,
    split: str = TaskSplit.TEST,
) -> TaskModelsTable:
    """Every model with an answer on these examples: per task, its accuracy overall and per topic (from the
    full prompt) and from the candidates alone. Models by name and model_id; answers to other examples, or by
    models not in `models`, are left out."""
    by_task: dict[str, list[ExampleRow]] = defaultdict(list)
    for example in examples:
        by_task[example.task].append(example)
    tasks = sorted(by_task, key=_task_order)
    topics = sorted({example.topic for example in examples}, key=_topic_order)
    known = {example.pk for example in examples}
    choices: dict[tuple[int, bool], dict[int, int | None]] = defaultdict(dict)
    for row in answers:
        if row.example in known and row.model in models:
            choices[(row.model, row.candidates_only)][row.example] = row.choice
    answering = sorted(
        {model for model, _ in choices}, key=lambda pk: (models[pk].model, models[pk].model_id)
    )
    results = []
    for pk in answering:
        full, alone = choices.get((pk, False), {}), choices.get((pk, True), {})
        rows = []
        for task in tasks:
            task_examples = by_task[task]
            by_topic: dict[str, list[ExampleRow]] = defaultdict(list)
            for example in task_examples:
                by_topic[example.topic].append(example)
            only = accuracy_of(task_examples, alone)
            rows.append(
                TaskAccuracy(
                    task=task,
                    overall=accuracy_of(task_examples, full),
                    by_topic=[
                        TopicAccuracy(topic, accuracy_of(by_topic[topic], full))
                        for topic in sorted(by_topic, key=_topic_order)
                    ],
                    candidates_only=only if only.n else None,
                )
            )
        results.append(ModelResults(model=models[pk], tasks=rows))
    return TaskModelsTable(
        task_set=task_set,
        split=split,
        tasks=tasks,
        n_examples={task: len(by_task[task]) for task in tasks},
        topics=topics,
        models=results,
    )


def task_models_results(
    task_set: TaskSet, *, split: str = TaskSplit.TEST, only: Collection[int] | None = None
) -> TaskModelsTable:
    """The accuracy table of every model that answered examples of the set's split (of those in `only` when
    given, e.g. the validated test examples): three queries."""
    examples_qs = TaskExample.objects.filter(task_set=task_set, split=split).order_by()
    answers_qs = TaskAnswer.objects.filter(example__task_set=task_set, example__split=split).order_by()
    if only is not None:
        examples_qs = examples_qs.filter(pk__in=list(only))
        answers_qs = answers_qs.filter(example_id__in=list(only))
    examples = [
        ExampleRow(
            pk, task, topic or NO_TOPIC, answer, len(candidates) if isinstance(candidates, list) else 0
        )
        for pk, task, topic, answer, candidates in examples_qs.values_list(
            "pk", "task", "topic__name", "answer", "candidates"
        )
    ]
    answers = [
        AnswerRow(*row)
        for row in answers_qs.values_list("model_id", "example_id", "candidates_only", "choice")
    ]
    model_pks = {row.model for row in answers}
    models = TaskModel.objects.in_bulk(list(model_pks)) if model_pks else {}
    return accuracy_table(examples, answers, models, task_set=task_set, split=split)
