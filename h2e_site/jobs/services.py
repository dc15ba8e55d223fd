"""Creating, enqueueing, cancelling, retrying and resuming jobs of every kind; their elapsed time and ETA."""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from h2e_site.web import RUN_PERMISSION

from .locks import job_lock
from .models import Job, JobStatus
from .registry import job_type_for, job_types

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

GPU_QUEUE = "gpu"
DEFAULT_QUEUE = "default"


def job_create(
    *,
    kind: str,
    parameters: dict[str, Any],
    total: int = 0,
    created_by: User | None = None,
    enqueue: bool = True,
) -> Job:
    """A queued job, enqueued once the surrounding transaction commits (enqueue=False: not at all, for a
    caller that runs it in-process). A job started by a user needs the user's jobs.add_job permission
    (PermissionDenied, which pages and the API answer with a 403): every page, API endpoint and admin action
    that starts work checks it first, and this is where none can forget it; commands start jobs as nobody.
    The kind must be one an app registered (LookupError naming it)."""
    job_type_for(kind)
    if created_by is not None and not created_by.has_perm(RUN_PERMISSION):
        raise PermissionDenied(
            f"{created_by.username} may not start jobs: that needs the 'add job' permission."
        )
    job = Job.objects.create(kind=kind, parameters=parameters, total=total, created_by=created_by)
    if enqueue:
        transaction.on_commit(lambda: job_enqueue(job))
    return job


def job_queue(job: Job) -> str:
    """vLLM jobs and jobs that ask for it (parameters["queue"] == "gpu", e.g. embedding on a GPU) go to the
    `gpu` queue (a worker with the engine or the device), everything else to `default`."""
    wants_gpu = job.parameters.get("backend") == "vllm" or job.parameters.get("queue") == GPU_QUEUE
    return GPU_QUEUE if wants_gpu else DEFAULT_QUEUE


def job_enqueue(job: Job) -> bool:
    """Send the job to a worker through its kind's task; the task id is kept on the row (True).

    With the broker unreachable (kombu's OperationalError once Celery's publish retries are spent), never an
    exception: this runs after the caller's transaction committed, so what it stored is stored, and a
    traceback from a commit hook would hide that (and skip the hooks after it). A queued job is then marked
    failed with a message saying that it never ran and how to run it (job_not_queued_message; a running
    one, which a worker's resume or sweep is sending again, is left to the next sweep), a warning is
    logged, and the job is added to the enclosing jobs_not_queued() list, so that the command, page or API
    call that caused it can say so (False)."""
    task = job_type_for(job.kind).task
    try:
        result = task.apply_async(args=[job.pk], queue=job_queue(job))
    except BrokerUnreachable as unreachable:
        _not_queued(job, unreachable)
        return False
    Job.objects.filter(pk=job.pk).update(celery_task_id=result.id or "")
    return True


_NOT_QUEUED: ContextVar[list[Job] | None] = ContextVar("jobs_not_queued", default=None)
NOT_QUEUED_PREFIX = "Not queued"


@contextmanager
def jobs_not_queued() -> Iterator[list[Job]]:
    """The jobs that could not be queued inside the block (the broker unreachable), in order, each
    refreshed (failed, its error saying how to run it): an import that queued its embed job, a page or an
    API call that started one, says which were not queued and how to run them."""
    found: list[Job] = []
    token = _NOT_QUEUED.set(found)
    try:
        yield found
    finally:
        _NOT_QUEUED.reset(token)


def job_not_queued_message(job: Job, reason: object) -> str:
    """What a job that could not be queued says: it never ran, why, and how to run it (its kind's
    run_hint, else where jobs of its kind are started)."""
    job_type = job_type_for(job.kind)
    how = job_type.run_hint(job) if job_type.run_hint else job_type.start_hint
    return (
        f"{NOT_QUEUED_PREFIX}: the job broker could not be reached ({str(reason)[:300]}), so "
        f"{job.kind_label.lower()} job #{job.pk} never ran. {how}".strip()
    )


def _not_queued(job: Job, unreachable: BaseException) -> None:
    message = job_not_queued_message(job, unreachable)
    now = timezone.now()
    failed = Job.objects.filter(pk=job.pk, status=JobStatus.QUEUED).update(
        status=JobStatus.FAILED, error=message, finished_at=now, updated_at=now
    )
    logger.warning("%s", message)
    if failed:
        job.refresh_from_db()
        found = _NOT_QUEUED.get()
        if found is not None:
            found.append(job)


def job_cancel(*, job: Job) -> Job:
    """Cancel a queued or running job: a running one stops starting requests within about a second."""
    now = timezone.now()
    Job.objects.filter(pk=job.pk).active().update(status=JobStatus.CANCELLED, finished_at=now, updated_at=now)
    job.refresh_from_db()
    return job


class NothingToRetry(ValueError):
    """A retry asked for a job whose failed items have all been run again since."""


def job_can_retry(job: Job) -> bool:
    """A job of a retryable kind with failed items."""
    try:
        retry = job_type_for(job.kind).retry
    except LookupError:
        return False
    return retry is not None and job.failed > 0


def job_retry_failed(*, job: Job, created_by: User | None = None) -> Job:
    """A new job over the items of `job` that failed (API errors after retries)."""
    retry = job_type_for(job.kind).retry
    if retry is None:
        raise ValueError(f"a {job.kind} job cannot be retried this way")
    return retry(job, created_by or job.created_by)


def resume_orphaned_jobs() -> list[int]:
    """Re-enqueue the resumable jobs left RUNNING by a worker that died (no one holds their lock). Called
    when a worker starts; a job still running elsewhere is left alone."""
    kinds = [job_type.kind for job_type in job_types() if job_type.resumable]
    resumed = []
    for job in Job.objects.filter(status=JobStatus.RUNNING, kind__in=kinds):
        with job_lock(job.pk) as held:
            if not held:
                continue
        logger.warning("%s job %s was left running by a worker that died: resuming it", job.kind, job.pk)
        job_enqueue(job)
        resumed.append(job.pk)
    return resumed


def jobs_sweep_stale(*, stale_after: float | None = None) -> list[int]:
    """Re-enqueue the resumable RUNNING jobs nobody is running any more: no heartbeat for `stale_after`
    seconds (H2E_JOB_STALE_SECONDS, default 120; a running job touches its row every 20 s) and, on
    PostgreSQL, nobody holding their lock. This catches a job whose Celery task is gone while its worker
    lives on (a task cancelled when the broker connection was lost, a pool process killed), which the
    resume at worker start would only find at the next restart. Run by every worker every
    H2E_JOB_SWEEP_SECONDS (tasks.py); a job re-enqueued twice runs once (the lock turns the second away)."""
    stale_after = stale_after if stale_after is not None else _seconds("H2E_JOB_STALE_SECONDS", 120.0)
    kinds = [job_type.kind for job_type in job_types() if job_type.resumable]
    quiet_since = timezone.now() - datetime.timedelta(seconds=stale_after)
    swept = []
    for job in Job.objects.filter(status=JobStatus.RUNNING, kind__in=kinds, updated_at__lt=quiet_since):
        with job_lock(job.pk) as held:
            if not held:
                continue
        logger.warning(
            "%s job %s has had no runner for %.0f s: enqueueing it again", job.kind, job.pk, stale_after
        )
        Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING).update(updated_at=timezone.now())
        job_enqueue(job)
        swept.append(job.pk)
    return swept


def _seconds(name: str, default: float) -> float:
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        return default


def job_elapsed_seconds(job: Job, *, now: datetime.datetime | None = None) -> float | None:
    """Seconds since the job started, to its end if finished (None if it never started)."""
    if job.started_at is None:
        return None
    end = job.finished_at if job.is_finished and job.finished_at else (now or timezone.now())
    return max(0.0, (end - job.started_at).total_seconds())


def job_seconds_remaining(job: Job, *, now: datetime.datetime | None = None) -> float | None:
    """Seconds a running job should still take, from its rate so far (None until it has done something)."""
    processed = job.done + job.failed
    if job.status != JobStatus.RUNNING or job.started_at is None or processed == 0:
        return None
    elapsed = ((now or timezone.now()) - job.started_at).total_seconds()
    # Resumed jobs count rows done before the crash; the rate is still a fair estimate.
    return max(0.0, elapsed / processed * (job.total - processed))


def job_eta(job: Job, *, now: datetime.datetime | None = None) -> datetime.datetime | None:
    """When a running job should finish (None until it has done something)."""
    seconds = job_seconds_remaining(job, now=now)
    if seconds is None:
        return None
    return (now or timezone.now()) + datetime.timedelta(seconds=seconds)
