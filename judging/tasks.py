"""Celery tasks of the judging app: ids in, the service does the work (h2e_site.jobs runs the loop)."""

from __future__ import annotations

import logging

from celery import shared_task

from h2e_site.jobs.answering_tasks import answering_task
from h2e_site.jobs.models import Job, JobStatus

from .generate_jobs import GenerateWork
from .import_jobs import import_job_run
from .judge_jobs import JudgeWork
from .pairwise_jobs import pairwise_judge_job_run
from .probes.jobs import judge_probe_job_run

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


run_generate_job = answering_task("judging.run_generate_job", GenerateWork)
run_judge_job = answering_task("judging.run_judge_job", JudgeWork)


@shared_task(name="judging.run_pairwise_judge_job", acks_late=True, reject_on_worker_lost=True)
def run_pairwise_judge_job(job_id: int) -> None:
    """Run or resume a pairwise judge Job."""
    pairwise_judge_job_run(job_id=job_id)


@shared_task(name="judging.run_judge_probe_job", acks_late=True, reject_on_worker_lost=True)
def run_judge_probe_job(job_id: int) -> None:
    """Run or resume a judge probe Job."""
    judge_probe_job_run(job_id=job_id)
