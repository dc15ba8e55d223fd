"""Building a goal-step task set as a job (kind build_tasks): the Django side of build.py.

task_set_create() fixes the selection (splits, topics), names the set and queues a BUILD_TASKS job; the thin
Celery task (mining/tasks.py) calls build_job_run(), which runs BuildWork in the core's loop
(h2e_site.jobs.loop.job_run: lock, status, cancel check, error summary). BuildWork:

1. reads the selected procedures (pk order; one with an empty goal or step is left out and counted);
2. embeds every distinct goal and step with the embedding model (mining.embedding.embedder_for), a batch at a
   time, each batch counted in the job's progress (total = texts to embed + the three tasks) and followed by
   the cancel check;
3. builds Step Inference, Goal Inference and Step Ordering (build.py, seeded; Step Ordering from the
   procedures whose `ordered` is True), one progress unit each;
4. splits each task into test and train (build.split_train_test, test_share of its examples), then drops
   every train example sharing a prompt or candidate text with a test example of *any* task;
5. runs the candidates-only artifact check (artifacts.py) on the stored examples of each task, reusing the
   vectors of step 2;
6. writes the examples (bulk, one transaction, after deleting any of an earlier attempt: a resumed job
   builds the same set again) with TaskSet.funnel and TaskSet.artifacts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db import transaction

from h2e_site.bounds import OutOfRange, model_range
from h2e_site.jobs.loop import JobWork, Progress, job_run
from h2e_site.jobs.models import Job, JobKind
from h2e_site.jobs.services import job_create

from ..embedding import DEFAULT_EMBEDDING_MODEL, Embedder, embedder_for
from ..models import GoalStepTask, Procedure, Split, TaskExample, TaskSet, TaskSplit, Topic
from .artifacts import ArtifactReport, candidates_only_baseline
from .build import (
    N_CANDIDATES,
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
from .filters import DEFAULT_FILTERS, ORDERING_FILTERS, filter_name
from .names import task_set_name_check

if TYPE_CHECKING:
    from django.contrib.auth.models import User

EMBED_BATCH = 256  # texts per progress step while embedding
DEFAULT_TEST_SHARE = 0.2
SOURCE_BUILT = "built"
BUILDERS: dict[str, Callable[..., tuple[list[Example], Funnel]]] = {
    GoalStepTask.STEP_INFERENCE: build_step_inference,
    GoalStepTask.GOAL_INFERENCE: build_goal_inference,
    GoalStepTask.STEP_ORDERING: build_step_ordering,
}


class TaskSetRefused(ValueError):
    """A task set that cannot be built as asked (name taken or not a slug, no procedures, a bad share)."""


# --- creating -----------------------------------------------------------------------------------------


def task_set_create(
    name: str,
    *,
    seed: int = 0,
    splits: Sequence[str] = (Split.BENCH,),
    topic_ids: Sequence[int] = (),
    test_share: float = DEFAULT_TEST_SHARE,
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    created_by: User | None = None,
    enqueue: bool = True,
) -> TaskSet:
    """A new task set over the procedures of `splits` (and of `topic_ids`, when given; else every topic and
    those without one) and its BUILD_TASKS job, queued once the transaction commits (enqueue=False: created,
    not queued, for a caller that runs it here). TaskSetRefused when it cannot be built."""
    try:
        task_set_name_check(name)
    except ValueError as refused:
        raise TaskSetRefused(str(refused)) from None
    try:
        model_range(TaskSet, "seed").check("seed", seed)
    except OutOfRange as bad:
        raise TaskSetRefused(bad.message) from None
    unknown_splits = sorted(set(splits) - set(Split.values))
    if not splits or unknown_splits:
        raise TaskSetRefused(f"splits: expected some of {', '.join(Split.values)}, got {list(splits)}")
    if not 0 < test_share < 1:
        raise TaskSetRefused(f"test_share: expected a share between 0 and 1, got {test_share}")
    topics = sorted(set(topic_ids))
    found = dict(Topic.objects.filter(pk__in=topics).values_list("pk", "name"))
    if len(found) != len(topics):
        raise TaskSetRefused(f"topics: no topic with id {sorted(set(topics) - set(found))}")
    selection = {
        "splits": sorted(set(splits)),
        "topics": topics,
        "topic_names": [found[pk] for pk in topics],
        "test_share": test_share,
    }
    if not _selected(selection).exists():
        raise TaskSetRefused("no procedure in the chosen splits and topics")
    settings = {
        "n_candidates": N_CANDIDATES,
        "filters": [filter_name(f) for f in DEFAULT_FILTERS],
        "ordering_filters": [filter_name(f) for f in ORDERING_FILTERS],
        "reassign": True,
        "label_blind": True,
        "embedding_model": embedding_model,
        "test_share": test_share,
    }
    with transaction.atomic():
        task_set = TaskSet.objects.create(
            name=name, source=SOURCE_BUILT, seed=seed, selection=selection, settings=settings
        )
        task_set.job = job_create(
            kind=JobKind.BUILD_TASKS,
            parameters={"task_set": task_set.pk, "name": name, "seed": seed, **selection},
            created_by=created_by,
            enqueue=enqueue,
        )
        task_set.save(update_fields=["job"])
    return task_set


def _selected(selection: dict[str, Any]) -> Any:
    procedures = Procedure.objects.filter(split__in=selection["splits"])
    if selection.get("topics"):
        procedures = procedures.filter(topic_id__in=selection["topics"])
    return procedures


# Where `Procedure.ordered` is unknown, a registered source may know from human labels (the annotation app
# registers the step-types studies' SEQUENTIAL majorities): procedure pks -> {pk: ordered}.
OrderSource = Callable[[list[int]], dict[int, bool]]
_order_source: list[OrderSource] = []


def order_source_register(source: OrderSource | None) -> None:
    """Set (or, with None, clear) the source of `ordered` for procedures whose field is empty."""
    _order_source[:] = [source] if source is not None else []


def selected_procedures(selection: dict[str, Any]) -> tuple[list[ProcedureText], int]:
    """The selection's procedures as build.py reads them (pk order), and how many were left out for an
    empty goal, no steps or an empty step. `ordered`: the procedure's field, else the order source's."""
    rows = _selected(selection).order_by("pk").values_list("pk", "goal", "steps", "topic__name", "ordered")
    procedures, skipped = [], 0
    for pk, goal, steps, topic, ordered in rows.iterator(chunk_size=2000):
        if not goal.strip() or not steps or not all(isinstance(s, str) and s.strip() for s in steps):
            skipped += 1
            continue
        procedures.append(ProcedureText(pk, goal, list(steps), topic, ordered))
    unknown = [int(p.pk) for p in procedures if p.ordered is None]  # database pks
    if unknown and _order_source:
        known = _order_source[0](unknown)
        procedures = [
            replace(p, ordered=known.get(int(p.pk))) if p.ordered is None else p for p in procedures
        ]
    return procedures, skipped


# --- running ------------------------------------------------------------------------------------------


def build_job_run(
    *, job_id: int, embedder: Embedder | None = None, on_progress: Callable[[Job], None] | None = None
) -> Job | None:
    """Run (or run again) a BUILD_TASKS job; `embedder` for callers that bring a loaded model,
    `on_progress(job)` after each progress write (the command's progress bar)."""
    return job_run(job_id, JobKind.BUILD_TASKS, lambda job: BuildWork(job, embedder, on_progress))


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
