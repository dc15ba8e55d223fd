"""Running a BUILD_TASKS job (jobs.py creates the set and queues the job; see its docstring for the steps):
BuildWork embeds the selected procedures' texts, builds the three tasks (build.py), splits them, runs the
artifact check and stores the examples. Imported only when a job runs (jobs.build_job_run: a lazy import of
a module with numpy), so numpy and the embedding model stay out of the start-up of the web and Celery
processes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from django.db import transaction

from h2e_site.jobs.loop import JobWork, Progress
from h2e_site.jobs.models import Job
from mining.embedding import DEFAULT_EMBEDDING_MODEL, Embedder
from mining.encoders import embedder_for
from mining.models import Procedure

from .artifacts import ArtifactReport, candidates_only_baseline
from .build import (
    TASKS,
    Example,
    Funnel,
    ProcedureText,
    build_goal_inference,
    build_step_inference,
    build_step_ordering,
    normalise,
    prepare_corpus,
    split_train_test,
)
from .models import GoalStepTask, TaskExample, TaskSet, TaskSplit
from .selection import selected_procedures

EMBED_BATCH = 256  # texts per progress step while embedding
BUILDERS: dict[str, Callable[..., tuple[list[Example], Funnel]]] = {
    GoalStepTask.STEP_INFERENCE: build_step_inference,
    GoalStepTask.GOAL_INFERENCE: build_goal_inference,
    GoalStepTask.STEP_ORDERING: build_step_ordering,
}


class BuildStopped(Exception):
    """The job was cancelled while embedding."""


class ProgressEmbed:
    """An embedding function for build.py: each text not embedded yet is embedded once, in batches (short
    texts together), and `on_batch(n)` is called after each (it may raise BuildStopped). Vectors are kept,
    so the artifact check, which embeds the candidates again, costs nothing."""

    def __init__(
        self, encode: Callable[[Sequence[str]], np.ndarray], on_batch: Callable[[int], None]
    ) -> None:
        self.encode = encode
        self.on_batch = on_batch
        self.vectors: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = sorted((t for t in dict.fromkeys(texts) if t not in self.vectors), key=len)
        for start in range(0, len(missing), EMBED_BATCH):
            chunk = missing[start : start + EMBED_BATCH]
            rows = np.asarray(self.encode(chunk), dtype=np.float32)
            self.vectors.update(zip(chunk, rows, strict=True))
            self.on_batch(len(chunk))
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])


class BuildWork(JobWork):
    """One build of a task set (see the module's docstring). Progress: texts embedded, then tasks built."""

    def __init__(
        self,
        job: Job,
        embedder: Embedder | None = None,
        on_progress: Callable[[Job], None] | None = None,
    ) -> None:
        super().__init__(job)
        self.task_set = TaskSet.objects.filter(pk=job.parameters.get("task_set")).first()
        self.embedder = embedder
        self.on_progress = on_progress

    def write_progress(self, *, force: bool = False) -> None:
        """The row at most every PROGRESS_WRITE_S (the core's rule); on_progress sees every step."""
        super().write_progress(force=force)
        if self.on_progress is not None:
            self.job.done, self.job.failed = self.progress.done, self.progress.failed
            self.on_progress(self.job)

    def run(self) -> None:
        task_set = self.task_set
        if task_set is None:
            self.failure = "the task set was deleted"
            return
        procedures, skipped = selected_procedures(task_set.selection)
        n_texts = len({text for p in procedures for text in (p.goal, *p.steps)})
        self.job.total = n_texts + len(TASKS)
        Job.objects.filter(pk=self.job.pk).update(total=self.job.total)
        self.progress = Progress()
        self.write_progress(force=True)
        encoder = self.embedder or embedder_for(
            task_set.settings.get("embedding_model", DEFAULT_EMBEDDING_MODEL)
        )
        embed = ProgressEmbed(encoder.encode, self._embedded)
        try:
            corpus = prepare_corpus(procedures, embed=embed)
        except BuildStopped:
            return
        built: dict[str, list[Example]] = {}
        funnels: dict[str, Funnel] = {}
        for task in TASKS:
            if self.should_stop():
                return
            built[task], funnels[task] = BUILDERS[task](corpus, seed=task_set.seed)
            self.progress.done += 1
            self.write_progress()
        splits = _split(built, test_share=float(task_set.selection["test_share"]), seed=task_set.seed)
        stored = [e for task in TASKS for e in (*splits[task][0], *splits[task][1])]
        reports = candidates_only_baseline(stored, embed=embed)
        funnel = {task: _funnel_json(funnels[task], splits[task], built[task]) for task in TASKS}
        artifacts = {task: _artifact_json(reports.get(task)) for task in TASKS}
        settings = {
            **task_set.settings,
            "procedures": len(procedures),
            "skipped_procedures": skipped,
            "texts_embedded": n_texts,
        }
        if self.should_stop():
            return
        _store(task_set, splits, procedures, funnel=funnel, artifacts=artifacts, settings=settings)

    def _embedded(self, n: int) -> None:
        self.progress.done += n
        self.write_progress()
        if self.should_stop():
            raise BuildStopped

    def summary(self) -> str:
        return ""


def _split(
    built: dict[str, list[Example]], *, test_share: float, seed: int
) -> dict[str, tuple[list[Example], list[Example], int]]:
    """Per task (test, train, train examples dropped for sharing a text with the test set of any task)."""
    per_task = {
        task: split_train_test(examples, test_size=round(test_share * len(examples)), seed=seed)
        for task, examples in built.items()
    }
    test_texts = {normalise(t) for s in per_task.values() for e in s.test for t in (e.prompt, *e.candidates)}
    result = {}
    for task, split in per_task.items():
        train = [e for e in split.train if not _shares(e, test_texts)]
        result[task] = (split.test, train, split.dropped + len(split.train) - len(train))
    return result


def _shares(example: Example, texts: set[str]) -> bool:
    return any(normalise(t) in texts for t in (example.prompt, *example.candidates))


def _funnel_json(
    funnel: Funnel, split: tuple[list[Example], list[Example], int], examples: list[Example]
) -> dict[str, Any]:
    """Candidates in, removed by each stage in order (a list: jsonb does not keep key order), kept, and
    what the test/train split made of them."""
    return {
        "in": funnel.candidates_in,
        "removed": [
            {"stage": stage, "count": count, "reasons": funnel.reasons.get(stage, [])}
            for stage, count in funnel.removed.items()
        ],
        "kept": funnel.kept,
        "test": len(split[0]),
        "train": len(split[1]),
        "shared_with_test": split[2],
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
    splits: dict[str, tuple[list[Example], list[Example], int]],
    procedures: Iterable[ProcedureText],
    *,
    funnel: dict[str, Any],
    artifacts: dict[str, Any],
    settings: dict[str, Any],
) -> None:
    topic_of = dict(Procedure.objects.filter(pk__in=[p.pk for p in procedures]).values_list("pk", "topic_id"))
    rows = []
    for task in TASKS:
        test, train, _ = splits[task]
        labelled = [(TaskSplit.TEST, e) for e in test] + [(TaskSplit.TRAIN, e) for e in train]
        for position, (split, example) in enumerate(labelled):
            pk = example.source_pk if isinstance(example.source_pk, int) else None
            rows.append(
                TaskExample(
                    task_set=task_set,
                    task=task,
                    split=split,
                    position=position,
                    prompt=example.prompt,
                    candidates=example.candidates,
                    answer=example.answer,
                    procedure_id=pk,
                    topic_id=topic_of.get(pk) if pk is not None else None,
                    meta=example.meta,
                )
            )
    with transaction.atomic():
        TaskExample.objects.filter(task_set=task_set).delete()
        TaskExample.objects.bulk_create(rows, batch_size=2000)
        TaskSet.objects.filter(pk=task_set.pk).update(funnel=funnel, artifacts=artifacts, settings=settings)
