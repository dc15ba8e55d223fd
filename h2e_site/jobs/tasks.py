"""Resuming at worker start: jobs of every registered kind that a killed worker left RUNNING are re-enqueued
(services.resume_orphaned_jobs)."""

from __future__ import annotations

import logging

from celery.signals import worker_ready
from django import db

from .services import resume_orphaned_jobs

logger = logging.getLogger(__name__)


@worker_ready.connect
def resume_jobs_of_dead_workers(**_: object) -> None:
    """A starting worker re-enqueues the jobs left RUNNING by a worker that was killed; a failure is logged,
    never allowed to keep the worker from starting."""
    try:
        resumed = resume_orphaned_jobs()
    except Exception:
        logger.exception("could not check for orphaned jobs")
        return
    finally:
        db.connections.close_all()
    if resumed:
        logger.warning("resumed orphaned jobs %s", resumed)
