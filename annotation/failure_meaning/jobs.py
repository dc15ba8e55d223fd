"""The `failure_patterns` job: a topic's failure descriptions clustered with faiss k-means (work.py) and the
clusters stored as a FailurePatternRun.

failure_patterns_job_create() checks the parameters against the bounds of FailurePatternRun's fields (k and
seed: the one place the form, the API's serializer and the command read them from) and queues the job; the
Celery task (annotation/tasks.py) calls failure_patterns_job_run(), which runs PatternWork in the core's loop.
A run is stored in one transaction at the end: a job redelivered after its worker died computes it again
(same seed, same failures: the same clusters), and a job that already stored its run stores nothing more.

Started from a topic's failure-patterns page, `manage.py failure_patterns`, or POST /api/jobs/
{"kind": "failure_patterns", "topic": ..., "k": ..., "seed": ...}.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from h2e_site.bounds import model_range
from h2e_site.jobs.loop import job_run
from h2e_site.jobs.models import Job
from h2e_site.jobs.services import job_create
from mining.models import Topic

from ..job_kinds import FAILURE_PATTERNS
from .models import FailurePatternRun

if TYPE_CHECKING:
    from django.contrib.auth.models import User

DEFAULT_K = 12
DEFAULT_SEED = 0


def pattern_k_range() -> tuple[int, int]:
    bounds = model_range(FailurePatternRun, "k")
    return int(bounds.low), int(bounds.high)


def failure_patterns_job_create(
    *, topic: Topic, k: int, seed: int, created_by: User | None = None, enqueue: bool = True
) -> Job:
    """A queued job clustering `topic`'s failures into k patterns with `seed`; OutOfRange naming k or seed
    when either is outside FailurePatternRun's bounds."""
    for name in ("k", "seed"):
        model_range(FailurePatternRun, name).check(name, {"k": k, "seed": seed}[name])
    parameters = {"topic": topic.pk, "topic_name": topic.name, "k": k, "seed": seed}
    return job_create(kind=FAILURE_PATTERNS, parameters=parameters, created_by=created_by, enqueue=enqueue)


def failure_patterns_job_run(*, job_id: int, on_progress: Callable[[Job], None] | None = None) -> Job | None:
    """Run (or run again) the failure_patterns job `job_id`."""
    from .work import PatternWork  # numpy and faiss: only where a job runs

    return job_run(job_id, FAILURE_PATTERNS, lambda job: PatternWork(job, on_progress=on_progress))
