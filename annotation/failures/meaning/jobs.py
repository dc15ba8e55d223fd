"""The `failure_patterns` job: a topic's failure descriptions clustered with faiss k-means (work.py) and the
clusters stored as a FailurePatternRun.

failure_patterns_job_create() checks the parameters against the bounds of FailurePatternRun's fields (k and
seed: the one place the form, the API's serializer and the command read them from) and against the topic's
failures with a stored vector: without k, k is chosen from their number n (k_from_failures: ⌊√(n/2)⌋, from 2
to DEFAULT_K); a k above n, or a topic with fewer than 2, is refused before anything is queued, saying the
largest k that works. Then it queues the job; the
Celery task (annotation/mounting/tasks.py) calls failure_patterns_job_run(), which runs PatternWork in the
core's loop.
A run is stored in one transaction at the end: a job redelivered after its worker died computes it again
(same seed, same failures: the same clusters), and a job that already stored its run stores nothing more.

Started from a topic's failure-patterns page, `manage.py failure_patterns`, or POST /api/jobs/
{"kind": "failure_patterns", "topic": ..., "k": ..., "seed": ...}.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from annotation.base.job_kinds import FAILURE_PATTERNS
from annotation.failures.meaning.models import FailurePatternRun
from h2e_site.bounds import OutOfRange, model_range
from h2e_site.jobs.loop import job_run
from h2e_site.jobs.models import Job
from h2e_site.jobs.services import job_create
from mining.models import Topic

EMBED_FAILURES = "python manage.py embed --source judge_failures --source human_failures"

if TYPE_CHECKING:
    from django.contrib.auth.models import User

DEFAULT_K = 12  # the most clusters chosen from the data
DEFAULT_SEED = 0


class TooFewFailures(ValueError):
    """A topic with fewer failures with a stored vector than the fewest clusters a run makes."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.field = "topic"
        self.message = message


def pattern_k_range() -> tuple[int, int]:
    bounds = model_range(FailurePatternRun, "k")
    return int(bounds.low), int(bounds.high)


def k_from_failures(n: int) -> int:
    """The clusters of a run over n failures when none is asked for: ⌊√(n/2)⌋ (the usual rule of thumb),
    at least the fewest a run makes (2, never more than n when n >= 2) and at most DEFAULT_K (12)."""
    return max(pattern_k_range()[0], min(DEFAULT_K, math.isqrt(n // 2)))


def failure_patterns_job_create(
    *, topic: Topic, k: int | None, seed: int, created_by: User | None = None, enqueue: bool = True
) -> Job:
    """A queued job clustering `topic`'s failures into k patterns with `seed` (k None: k_from_failures of
    the topic's failures with a stored vector). Refused before anything is queued: OutOfRange naming k or
    seed outside FailurePatternRun's bounds, or k above the topic's failures with a vector (saying how many
    there are: the largest k that works); TooFewFailures when there are fewer than 2."""
    low, _ = pattern_k_range()
    if k is not None:
        model_range(FailurePatternRun, "k").check("k", k)
    model_range(FailurePatternRun, "seed").check("seed", seed)
    from annotation.failures.meaning.work import topic_failure_counts  # numpy: only where vectors are read

    n, n_all = topic_failure_counts(topic)
    have = f"topic {topic.name!r} has {n} failure{'s' if n != 1 else ''} with a stored vector (of {n_all})"
    if n < low:
        embed = f"; run the embed job first ({EMBED_FAILURES})" if n < n_all else ""
        raise TooFewFailures(f"{have}: failure patterns need at least {low}{embed}")
    if k is not None and k > n:
        raise OutOfRange("k", k, f"at most {n}: {have}; leave k empty to choose it from the data")
    chosen = k is None
    k = k_from_failures(n) if k is None else k
    parameters = {"topic": topic.pk, "topic_name": topic.name, "k": k, "k_chosen": chosen, "seed": seed}
    return job_create(kind=FAILURE_PATTERNS, parameters=parameters, created_by=created_by, enqueue=enqueue)


def failure_patterns_job_run(*, job_id: int, on_progress: Callable[[Job], None] | None = None) -> Job | None:
    """Run (or run again) the failure_patterns job `job_id`."""
    from annotation.failures.meaning.work import PatternWork  # numpy and faiss: only where a job runs

    return job_run(job_id, FAILURE_PATTERNS, lambda job: PatternWork(job, on_progress=on_progress))
