"""Celery tasks of the judging app: ids in, fetch the row, call the service."""

from __future__ import annotations

import logging
from collections.abc import Callable

from celery import shared_task
from celery.signals import worker_ready
from django import db

from .models import Job, JobStatus
from .runs import generate_job_run, judge_job_run, resume_orphaned_jobs
from .services import import_job_run

logger = logging.getLogger(__name__)


@shared_task(name="judging.run_import_job", acks_late=True)
def run_import_job(job_pk: int) -> None:
    """Run an import Job. A job row that is gone (deleted) or already finished is logged and left."""
    job = Job.objects.filter(pk=job_pk).first()
    if job is None:
        logger.warning("import job %s no longer exists; nothing to do", job_pk)
        return
    if job.status != JobStatus.QUEUED:
        logger.warning("import job %s is %s, not queued; not running it again", job_pk, job.status)
        return
    import_job_run(job=job)


@shared_task(name="judging.run_generate_job", acks_late=True, reject_on_worker_lost=True)
def run_generate_job(job_id: int) -> None:
    """Run or resume a generate Job (a redelivered message resumes it; a finished one is left)."""
    generate_job_run(job_id=job_id)


@shared_task(name="judging.run_judge_job", acks_late=True, reject_on_worker_lost=True)
def run_judge_job(job_id: int) -> None:
    """Run or resume a judge Job."""
    judge_job_run(job_id=job_id)


def resume_at_worker_start(resume: Callable[[], list[int]], what: str) -> None:
    """Run `resume` (re-enqueue the `what` jobs a killed worker left RUNNING) as a worker starts; a failure
    is logged, never allowed to keep the worker from starting."""
    try:
        resumed = resume()
    except Exception:
        logger.exception("could not check for orphaned %s jobs", what)
        return
    finally:
        db.connections.close_all()
    if resumed:
        logger.warning("resumed orphaned %s jobs %s", what, resumed)


@worker_ready.connect
def resume_jobs_of_dead_workers(**_: object) -> None:
    """A starting worker re-enqueues generate/judge jobs left RUNNING by a worker that was killed."""
    resume_at_worker_start(resume_orphaned_jobs, "generate/judge")
