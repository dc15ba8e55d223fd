"""Celery tasks of the mining app: ids in, the service does the work."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready

from judging.tasks import resume_at_worker_start

from .runs import mine_job_run, resume_orphaned_mine_jobs


@shared_task(name="mining.run_mine_job", acks_late=True, reject_on_worker_lost=True)
def run_mine_job(job_id: int) -> None:
    """Run or resume a MINE job (a redelivered message resumes it; a finished one is left)."""
    mine_job_run(job_id=job_id)


@worker_ready.connect
def resume_mining_jobs_of_dead_workers(**_: object) -> None:
    """A starting worker re-enqueues MINE jobs left RUNNING by a worker that was killed."""
    resume_at_worker_start(resume_orphaned_mine_jobs, "mining")
