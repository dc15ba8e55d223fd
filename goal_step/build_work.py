"""Running a BUILD_TASKS job (jobs.py creates the set and queues the job; see its docstring for the steps):
BuildWork embeds the selected procedures' texts, builds the three tasks (build.py), splits them, runs the
artifact check and stores the examples. Imported only when a job runs (jobs.build_job_run: a lazy import of
a module with numpy), so numpy and the embedding model stay out of the start-up of the web and Celery
processes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction

from h2e_site.embeddings.specs import DEFAULT_EMBEDDING_MODEL, Embedder
from h2e_site.embeddings.store import StoredEmbed
from h2e_site.jobs.loop import JobWork, Progress
from h2e_site.jobs.models import Job

from .artifacts import ArtifactReport, kept_baseline
from .build import (
    TASKS,
    Example,
    ProcedureText,
    draft_goal_inference,
    draft_step_inference,
    draft_step_ordering,
    prepare_corpus,
)
from .corpus import Corpus
from .kept import Funnel, Kept
from .models import GoalStepTask, TaskExample, TaskSet, TaskSplit
from .selection import SplitBy, procedures_selected, selected_procedures
from .split import procedures_split, split_kept

HALF_PRECISION_ABOVE = 300_000  # texts: a larger corpus holds its vectors in float16 (half the memory)
STORE_BATCH = 2_000  # examples per INSERT
MIN_TRAIN_KEPT = 0.5  # a split by text that keeps less of train than this is warned about
DRAFTERS: dict[str, Callable[..., tuple[Kept, Funnel]]] = {
    GoalStepTask.STEP_INFERENCE: draft_step_inference,
    GoalStepTask.GOAL_INFERENCE: draft_goal_inference,
    GoalStepTask.STEP_ORDERING: draft_step_ordering,
}


class BuildStopped(Exception):
    """The job was cancelled while embedding."""


class BuildWork(JobWork):
    """One build of a task set (see the module's docstring). Progress: texts embedded, then tasks built."""

    def __init__(
        self,
        job: Job,
        embedder: Embedder | None = None,
        on_progress: Callable[[Job], None] | None = None,
    ) -> None:
        super().__init__(job, on_progress)
        self.task_set = TaskSet.objects.filter(pk=job.parameters.get("task_set")).first()
        self.embedder = embedder

    def run(self) -> None:
        task_set = self.task_set
        if task_set is None:
            self.failure = "the task set was deleted"
            return
        procedures, skipped = selected_procedures(task_set.selection)
        key = task_set.settings.get("embedding_model", DEFAULT_EMBEDDING_MODEL)
        texts = [text for p in procedures for text in (p.goal, *p.steps)]
        dtype = np.float16 if len(texts) > HALF_PRECISION_ABOVE else np.float32
        embed = StoredEmbed(key, encoder=self.embedder, on_batch=self._embedded, dtype=dtype)
        missing = embed.missing(texts)
        self.job.total = len(missing) + len(TASKS)
        Job.objects.filter(pk=self.job.pk).update(total=self.job.total)
        self.progress = Progress()
        self.write_progress(force=True)
        try:
            embed.fill(missing)  # only texts never embedded under the model: the rest are read from the store
        except BuildStopped:
            return
        test_share = float(task_set.selection["test_share"])
        if task_set.selection.get("split_by") == SplitBy.PROCEDURE:
            funnels, splits = self._by_procedure(procedures, embed, test_share)
        else:
            kept, funnels, _ = self._build(procedures, embed)
            splits = _split(kept, test_share=test_share, seed=task_set.seed)
        if self.should_stop():
            return
        funnel = {task: _funnel_json(funnels[task], splits[task]) for task in TASKS}
        artifacts = {task: _artifact_json(kept_baseline(task, splits[task].parts())) for task in TASKS}
        settings = {
            **task_set.settings,
            "procedures": len(procedures),
            "skipped_procedures": skipped,
            "texts": len(set(texts)),
            "texts_embedded": embed.embedded,
        }
        if self.should_stop():
            return
        _store(task_set, splits, funnel=funnel, artifacts=artifacts, settings=settings)

    def _build(
        self, procedures: Sequence[ProcedureText], embed: StoredEmbed, *, count: bool = True
    ) -> tuple[dict[str, Kept], dict[str, Funnel], Corpus]:
        """The three tasks from `procedures` (examples not made yet), a progress unit each (when counted),
        and their corpus."""
        assert self.task_set is not None
        corpus = prepare_corpus(procedures, embed=embed)
        kept: dict[str, Kept] = {}
        funnels: dict[str, Funnel] = {}
        for task in TASKS:
            kept[task], funnels[task] = DRAFTERS[task](corpus, seed=self.task_set.seed)
            if count:
                self.progress.done += 1
                self.write_progress()
        return kept, funnels, corpus

    def _by_procedure(
        self, procedures: Sequence[ProcedureText], embed: StoredEmbed, test_share: float
    ) -> tuple[dict[str, Funnel], dict[str, TaskSplitRows]]:
        """The split by procedure: test_share of the procedures (drawn with the seed) make the test set's
        tasks, the others the training set's, each built on its own, so no test procedure is seen in train."""
        assert self.task_set is not None
        test, train = procedures_split(procedures, test_share=test_share, seed=self.task_set.seed)
        kept_test, funnels_test, _ = self._build(test, embed, count=False)
        kept_train, funnels_train, _ = self._build(train, embed)
        funnels = {task: funnels_test[task].merged(funnels_train[task]) for task in TASKS}
        splits = {task: TaskSplitRows.whole(kept_test[task], kept_train[task]) for task in TASKS}
        return funnels, splits

    def _embedded(self, n: int) -> None:
        self.progress.done += n
        self.write_progress()
        if self.should_stop():
            raise BuildStopped

    def summary(self) -> str:
        return ""


@dataclass(frozen=True)
class TaskSplitRows:
    """A task's test and train examples, not made yet: positions into the Kept they come from (one Kept for
    the split by text, one per half for the split by procedure), and the train examples dropped for sharing
    a text with a test example."""

    test: tuple[Kept, np.ndarray]
    train: tuple[Kept, np.ndarray]
    dropped: int

    @classmethod
    def whole(cls, test: Kept, train: Kept) -> TaskSplitRows:
        return cls((test, np.arange(len(test))), (train, np.arange(len(train))), 0)

    def parts(self) -> list[tuple[Kept, np.ndarray]]:
        return [self.test, self.train]

    def counts(self) -> tuple[int, int]:
        return len(self.test[1]), len(self.train[1])


def _split(kept: dict[str, Kept], *, test_share: float, seed: int) -> dict[str, TaskSplitRows]:
    """Per task, its test and train rows (split.split_kept: train examples sharing a text with the test set
    of any task are dropped)."""
    splits = split_kept(kept, test_share=test_share, seed=seed)
    return {
        task: TaskSplitRows((kept[task], split.test), (kept[task], split.train), split.dropped)
        for task, split in splits.items()
    }


def train_warning(train: int, shared_with_test: int, *, task: str) -> str:
    """A sentence when the split by text left train less than MIN_TRAIN_KEPT of the examples not drawn for
    test ("" otherwise)."""
    candidates = train + shared_with_test
    if not candidates or train / candidates >= MIN_TRAIN_KEPT:
        return ""
    return (
        f"{task}: train keeps {train:,} of {candidates:,} examples ({train / candidates:.0%}, under "
        f"{MIN_TRAIN_KEPT:.0%}): the others share a text with a test example. A split by procedure keeps "
        "every example of the training procedures."
    )


def _funnel_json(funnel: Funnel, split: TaskSplitRows) -> dict[str, Any]:
    """Candidates in, removed by each stage in order (a list: jsonb does not keep key order), kept, and
    what the test/train split made of them, with a warning when train kept too little."""
    return {
        "in": funnel.candidates_in,
        "removed": [
            {"stage": stage, "count": count, "reasons": funnel.reasons.get(stage, [])}
            for stage, count in funnel.removed.items()
        ],
        "kept": funnel.kept,
        "test": split.counts()[0],
        "train": split.counts()[1],
        "shared_with_test": split.dropped,
        "warning": train_warning(split.counts()[1], split.dropped, task=funnel.task),
    }


def _artifact_json(report: ArtifactReport | None) -> dict[str, Any]:
    if report is None or not report.n:
        return {
            "k": 0,
            "n": 0,
            "share": None,
            "ci_low": None,
            "ci_high": None,
            "chance": None,
            "at_chance": None,
        }
    low, high = report.interval or (None, None)
    return {
        "k": report.correct,
        "n": report.n,
        "share": report.share,
        "ci_low": low,
        "ci_high": high,
        "chance": report.chance,
        "at_chance": report.at_chance,
    }


def _store(
    task_set: TaskSet,
    splits: dict[str, TaskSplitRows],
    *,
    funnel: dict[str, Any],
    artifacts: dict[str, Any],
    settings: dict[str, Any],
) -> None:
    """Replace the set's examples (made and written STORE_BATCH at a time: no list of every example) and its
    figures."""
    topic_of = dict(procedures_selected(task_set.selection).values_list("pk", "topic_id").iterator(20_000))
    with transaction.atomic():
        TaskExample.objects.filter(task_set=task_set).delete()
        for task in TASKS:
            _store_task(task_set, splits[task], topic_of)
        TaskSet.objects.filter(pk=task_set.pk).update(funnel=funnel, artifacts=artifacts, settings=settings)


def _store_task(task_set: TaskSet, split_rows: TaskSplitRows, topic_of: dict[int, int]) -> None:
    """A task's test examples, then its train ones, numbered on (position) through both."""
    position = 0
    for split, (kept, positions) in zip((TaskSplit.TEST, TaskSplit.TRAIN), split_rows.parts(), strict=True):
        for start in range(0, len(positions), STORE_BATCH):
            examples = kept.examples(positions[start : start + STORE_BATCH])
            TaskExample.objects.bulk_create(
                [_example_row(task_set, split, position + i, e, topic_of) for i, e in enumerate(examples)]
            )
            position += len(examples)


def _example_row(
    task_set: TaskSet, split: str, position: int, example: Example, topic_of: dict[int, int]
) -> TaskExample:
    pk = example.source_pk if isinstance(example.source_pk, int) else None
    return TaskExample(
        task_set=task_set,
        task=example.task,
        split=split,
        position=position,
        prompt=example.prompt,
        candidates=example.candidates,
        answer=example.answer,
        procedure_id=pk,
        topic_id=topic_of.get(pk) if pk is not None else None,
        meta=example.meta,
    )
