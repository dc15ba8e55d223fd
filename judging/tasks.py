"""Celery tasks of the judging app: ids in, fetch the row, call the service."""

from __future__ import annotations

import logging

from celery import shared_task

from .models import Job, JobStatus
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
