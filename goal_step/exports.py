"""Task sets out and in: JSONL of the test and train examples, BIG-bench JSON per task, and BIG-bench import.

Validation (issue #14, item 3) is computed by the annotation app from its multiple-choice studies, which
this app may not import. The seam: whoever knows which test examples were validated passes their pks
(`validated=`) to test_examples() / examples_jsonl(); by default they are human_labels.validated_pks (what
annotation's AppConfig.ready() registered). Without either, the test JSONL carries `"validated": null` and
asking for validated examples only is refused (NoValidation).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import Any, BinaryIO

import orjson
from django.db import reset_queries, transaction
from django.db.models import QuerySet

from .bigbench import BigBenchFormatError, BigBenchReader, BigBenchTask, dumps_bigbench
from .examples import STEP_ORDERING, TASKS, Example
from .human_labels import validated_pks
from .models import GoalStepTask, TaskExample, TaskSet, TaskSplit
from .names import task_set_name_check

SOURCE_BIGBENCH = "bigbench"
_IMPORT_BATCH = 2000


class NoValidation(ValueError):
    """Validated examples were asked for, and no validation results are known for the set."""


def test_examples(
    task_set: TaskSet, validated_only: bool, *, validated: Collection[int] | None = None
) -> QuerySet[TaskExample]:
    """The set's test examples in task and position order; validated_only: only those in `validated` (by
    default human_labels.validated_pks; NoValidation when there is none)."""
    examples = task_set.examples.filter(split=TaskSplit.TEST).select_related("topic", "procedure")
    if not validated_only:
        return examples
    chosen = validated if validated is not None else validated_pks(task_set)
    if chosen is None:
        raise NoValidation(f"task set {task_set.name!r} has no validation results yet")
    return examples.filter(pk__in=list(chosen))


test_examples.__test__ = False  # type: ignore[attr-defined]  # a selector, not a test for pytest


def train_examples(task_set: TaskSet) -> QuerySet[TaskExample]:
    return task_set.examples.filter(split=TaskSplit.TRAIN).select_related("topic", "procedure")


def example_row(example: TaskExample, *, validated: Collection[int] | None = None) -> dict[str, Any]:
    """One JSONL record. `validated` (test examples only): true/false by membership, null when unknown."""
    row: dict[str, Any] = {
        "task": example.task,
        "split": example.split,
        "position": example.position,
        "prompt": example.prompt,
        "candidates": example.candidates,
        "answer": example.answer,
        "topic": example.topic.name if example.topic else None,
        "source_example_id": example.procedure.source_example_id if example.procedure else None,
    }
    if example.split == TaskSplit.TEST:
        row["validated"] = None if validated is None else example.pk in validated
    return row


def examples_jsonl(
    examples: QuerySet[TaskExample], *, validated: Collection[int] | None = None
) -> Iterator[bytes]:
    """JSON lines, streamed a chunk of rows at a time."""
    for example in examples.iterator(chunk_size=2000):
        yield orjson.dumps(example_row(example, validated=validated)) + b"\n"


def as_example(row: TaskExample) -> Example:
    return Example(row.task, row.prompt, list(row.candidates), row.answer, source_pk=row.procedure_id)


def task_set_bigbench(task_set: TaskSet, task: str, *, validated: Collection[int] | None = None) -> str:
    """The set's test examples of `task` as a BIG-bench JSON task (named after the task, so that import
    reads it back as that task); only the `validated` ones when given."""
    if task not in TASKS:
        raise ValueError(f"task: expected one of {', '.join(TASKS)}, got {task!r}")
    examples = test_examples(task_set, validated is not None, validated=validated).filter(task=task)
    return dumps_bigbench([as_example(row) for row in examples], name=task)


def task_set_import_bigbench(
    *,
    source: BinaryIO,
    name: str,
    task: str,
    path: str = "",
    progress: Callable[[int], None] | None = None,
) -> TaskSet:
    """A BIG-bench multiple-choice task file, streamed from `source`, as a new task set (source "bigbench"),
    every example a test example of `task`, stored a batch at a time in one transaction: a bad file stores
    nothing. BigBenchFormatError naming the example and field (`examples[3].input`) when the file is not a
    valid task (bigbench.BigBenchReader) or its examples are not `task` examples; ValueError naming the
    name or task. `progress(n)` is called with the number of examples read after each batch."""
    task_set_name_check(name)
    with transaction.atomic():
        task_set = TaskSet.objects.create(
            name=name, source=SOURCE_BIGBENCH, selection={"file": path[:1000], "task": task}
        )
        parsed = bigbench_examples_add(task_set, source=source, task=task, progress=progress)
        task_set.settings = {
            "bigbench_name": parsed.name,
            "description": parsed.description,
            "keywords": parsed.keywords,
        }
        task_set.save(update_fields=["settings"])
    return task_set


def bigbench_examples_add(
    task_set: TaskSet, *, source: BinaryIO, task: str, progress: Callable[[int], None] | None = None
) -> BigBenchTask:
    """A BIG-bench task file's examples added to `task_set` as test examples of `task` (which it must have
    none of yet), read and checked as task_set_import_bigbench reads them, in one transaction: a bad file
    adds nothing. The file's header (name, description, keywords; its `examples` left empty)."""
    if task not in TASKS:
        raise ValueError(f"task: expected one of {', '.join(TASKS)}, got {task!r}")
    if task_set.examples.filter(task=task).exists():
        raise ValueError(f"task: task set {task_set.name!r} already has {task} examples")
    reader = BigBenchReader(source)
    with transaction.atomic():
        batch: list[TaskExample] = []
        shapeless: int | None = None  # the first example whose input has no task's shape
        for position, example in enumerate(reader.examples()):
            _check_task(example, position, task)
            if not example.task and shapeless is None:
                shapeless = position
            batch.append(_task_example(task_set, task, position, example))
            if len(batch) >= _IMPORT_BATCH:
                _store(batch, progress, reader.n_examples)
        _store(batch, progress, reader.n_examples)
        parsed = reader.task
        if shapeless is not None and parsed.name in TASKS and parsed.name != task:
            raise BigBenchFormatError(
                f"examples[{shapeless}].input: reads as a {parsed.name} example (the file's name), not {task}"
            )
    return parsed


def _check_task(example: Example, number: int, task: str) -> None:
    if example.task and example.task != task:
        raise BigBenchFormatError(
            f"examples[{number}].input: reads as a {example.task} example (its question), not {task}"
        )
    if task == STEP_ORDERING and len(example.candidates) != 2:
        raise BigBenchFormatError(
            f"examples[{number}].target_scores: step_ordering takes 2 candidates, got "
            f"{len(example.candidates)}"
        )


def _task_example(task_set: TaskSet, task: str, position: int, example: Example) -> TaskExample:
    return TaskExample(
        task_set=task_set,
        task=GoalStepTask(task),
        split=TaskSplit.TEST,
        position=position,
        prompt=example.prompt,
        candidates=example.candidates,
        answer=example.answer,
    )


def _store(batch: list[TaskExample], progress: Callable[[int], None] | None, n_read: int) -> None:
    TaskExample.objects.bulk_create(batch)
    batch.clear()
    reset_queries()  # with DEBUG on, Django would keep every INSERT
    if progress is not None:
        progress(n_read)
