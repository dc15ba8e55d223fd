"""Building a goal-step task set as a job (kind build_tasks): the Django side of build.py.

task_set_create() fixes the selection (splits, topics), names the set and queues a BUILD_TASKS job; the thin
Celery task (tasks.py) calls build_job_run(), which runs BuildWork in the core's loop
(h2e_site.jobs.loop.job_run: lock, status, cancel check, error summary). BuildWork:

1. reads the selected procedures (pk order; one with an empty goal or step is left out and counted);
2. embeds the distinct goals and steps that have no vector in the embedding store yet (h2e_site.embeddings;
   usually none: an `embed` job runs after every import), a batch at a time, each batch counted in the job's
   progress (total = texts to embed + the three tasks) and followed by the cancel check; the others' vectors
   are read from the store;
3. builds Step Inference, Goal Inference and Step Ordering (build.py, seeded; Step Ordering from the
   procedures whose `ordered` is True), one progress unit each;
4. splits each task into test and train (split.split_kept, test_share of its examples), then drops
   every train example sharing a prompt or candidate text with a test example of *any* task (split by text);
   or, split by procedure, draws test_share of the procedures for test and builds each side on its own;
5. runs the candidates-only artifact check (artifacts.py) on the stored examples of each task, the vectors
   read from the store;
6. writes the examples (bulk, one transaction, after deleting any of an earlier attempt: a resumed job
   builds the same set again) with TaskSet.funnel and TaskSet.artifacts.

This module (creating a set) imports no numpy: the admin, the pages and the Celery app load it at start-up.
The running (BuildWork, numpy and the embedding model) is in build_work.py, imported when a job runs (a lazy
import of a heavy module); the procedures a set selects are read by selection.py, which both use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from django.db import transaction

from h2e_site.bounds import OutOfRange, model_range
from h2e_site.embeddings.specs import DEFAULT_EMBEDDING_MODEL
from h2e_site.jobs.loop import job_run
from h2e_site.jobs.models import Job
from h2e_site.jobs.services import job_create
from mining.models import Split, Topic

from .examples import N_CANDIDATES
from .filters import DEFAULT_FILTERS, ORDERING_FILTERS, filter_name
from .job_kinds import BUILD_TASKS
from .models import TaskSet
from .names import task_set_name_check
from .selection import SplitBy, procedures_selected

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from h2e_site.embeddings.specs import Embedder

DEFAULT_TEST_SHARE = 0.2
SOURCE_BUILT = "built"


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
    split_by: str = SplitBy.TEXT,
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
    if split_by not in SplitBy.values:
        raise TaskSetRefused(f"split_by: expected one of {', '.join(SplitBy.values)}, got {split_by!r}")
    topics = sorted(set(topic_ids))
    found = dict(Topic.objects.filter(pk__in=topics).values_list("pk", "name"))
    if len(found) != len(topics):
        raise TaskSetRefused(f"topics: no topic with id {sorted(set(topics) - set(found))}")
    selection = {
        "splits": sorted(set(splits)),
        "topics": topics,
        "topic_names": [found[pk] for pk in topics],
        "test_share": test_share,
        "split_by": str(split_by),
    }
    if not procedures_selected(selection).exists():
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
            kind=BUILD_TASKS,
            parameters={"task_set": task_set.pk, "name": name, "seed": seed, **selection},
            created_by=created_by,
            enqueue=enqueue,
        )
        task_set.save(update_fields=["job"])
    return task_set


# --- running ------------------------------------------------------------------------------------------


def build_job_run(
    *, job_id: int, embedder: Embedder | None = None, on_progress: Callable[[Job], None] | None = None
) -> Job | None:
    """Run (or run again) a BUILD_TASKS job; `embedder` for callers that bring a loaded model,
    `on_progress(job)` after each progress write (the command's progress bar)."""
    from .build_work import BuildWork

    return job_run(job_id, BUILD_TASKS, lambda job: BuildWork(job, embedder, on_progress))
