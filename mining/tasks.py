"""Celery tasks of the mining app: ids in, the service does the work."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready
from django import db

from .runs import mine_job_run, resume_orphaned_mine_jobs

logger = logging.getLogger(__name__)


@shared_task(name="mining.run_mine_job", acks_late=True, reject_on_worker_lost=True)
def run_mine_job(job_id: int) -> None:
    """Run or resume a MINE job (a redelivered message resumes it; a finished one is left)."""
    mine_job_run(job_id=job_id)


@worker_ready.connect
def resume_mining_jobs_of_dead_workers(**_: object) -> None:
    """A starting worker re-enqueues MINE jobs left RUNNING by a worker that was killed."""
    try:
        resumed = resume_orphaned_mine_jobs()
    except Exception:  # never keep a worker from starting
        logger.exception("could not check for orphaned mining jobs")
        return
    finally:
        db.connections.close_all()
    if resumed:
        logger.warning("resumed orphaned mining jobs %s", resumed)
