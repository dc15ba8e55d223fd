"""Celery tasks of the mining app: ids in, the service does the work (h2e_site.jobs runs the loop)."""

from __future__ import annotations

from celery import shared_task

from .runs import mine_job_run


@shared_task(name="mining.run_mine_job", acks_late=True, reject_on_worker_lost=True)
def run_mine_job(job_id: int) -> None:
    """Run or resume a MINE job (a redelivered message resumes it; a finished one is left)."""
    mine_job_run(job_id=job_id)
