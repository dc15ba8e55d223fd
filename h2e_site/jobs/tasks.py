"""Jobs a worker must pick up again: at worker start, those a killed worker left RUNNING
(services.resume_orphaned_jobs); then, every H2E_JOB_SWEEP_SECONDS (default 60; 0 turns it off), those whose
task is gone while the worker lives on (services.jobs_sweep_stale), from a thread of the worker's main process
(no beat process, nothing queued in the broker to pile up)."""

from __future__ import annotations

import logging
import os
import threading

from celery.signals import worker_ready
from django import db

from .services import jobs_sweep_stale, resume_orphaned_jobs

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
    start_sweeper()


def sweep_interval() -> float:
    try:
        return max(0.0, float(os.environ.get("H2E_JOB_SWEEP_SECONDS", "60")))
    except ValueError:
        return 60.0


def start_sweeper() -> threading.Thread | None:
    """The worker's sweeper thread (daemon: it ends with the worker)."""
    interval = sweep_interval()
    if not interval:
        return None
    thread = threading.Thread(target=_sweep_forever, args=(interval,), name="h2e-job-sweeper", daemon=True)
    thread.start()
    return thread


def _sweep_forever(interval: float) -> None:
    stop = threading.Event()
    while not stop.wait(interval):
        try:
            swept = jobs_sweep_stale()
            if swept:
                logger.warning("enqueued stale running jobs %s again", swept)
        except Exception:
            logger.exception("could not sweep stale running jobs")
        finally:
            db.connections.close_all()
