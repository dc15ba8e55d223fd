"""Creating, enqueueing, cancelling, retrying and resuming jobs of every kind; their elapsed time and ETA."""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

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
    caller that runs it in-process)."""
    job = Job.objects.create(kind=kind, parameters=parameters, total=total, created_by=created_by)
    if enqueue:
        transaction.on_commit(lambda: job_enqueue(job))
    return job


def job_queue(job: Job) -> str:
    """vLLM jobs go to the `gpu` queue (a worker with the engine), everything else to `default`."""
    return GPU_QUEUE if job.parameters.get("backend") == "vllm" else DEFAULT_QUEUE


def job_enqueue(job: Job) -> None:
    """Send the job to a worker through its kind's task; the task id is kept on the row."""
    task = job_type_for(job.kind).task
    result = task.apply_async(args=[job.pk], queue=job_queue(job))
    Job.objects.filter(pk=job.pk).update(celery_task_id=result.id or "")


def job_cancel(*, job: Job) -> Job:
    """Cancel a queued or running job: a running one stops starting requests within about a second."""
    now = timezone.now()
    Job.objects.filter(pk=job.pk).active().update(status=JobStatus.CANCELLED, finished_at=now, updated_at=now)
    job.refresh_from_db()
    return job


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
