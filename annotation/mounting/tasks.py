"""Celery tasks of the annotation app's operations (failure patterns, Prolific): ids in, the service does the
work
(h2e_site.jobs runs the loop). A study kind's own tasks are its folder's tasks.py, imported here through the
registry, so a worker (which discovers this module) registers them too."""

from __future__ import annotations

from importlib import import_module

from celery import shared_task
from django.utils.module_loading import module_has_submodule

from annotation import kinds
from annotation.base.job_kinds import PROLIFIC_BONUSES, PROLIFIC_REVIEW, PROLIFIC_SYNC
from annotation.failures.meaning.jobs import failure_patterns_job_run
from annotation.prolific.jobs import prolific_job_run


@shared_task(name="annotation.run_failure_patterns_job", acks_late=True, reject_on_worker_lost=True)
def run_failure_patterns_job(job_id: int) -> None:
    """Run a failure_patterns Job (a redelivered message computes the same clusters again, or finds them
    stored)."""
    failure_patterns_job_run(job_id=job_id)


@shared_task(name="annotation.run_prolific_sync_job", acks_late=True, reject_on_worker_lost=True)
def run_prolific_sync_job(job_id: int) -> None:
    """Sync a study's submissions from Prolific (annotation/prolific/jobs.py)."""
    prolific_job_run(job_id=job_id, kind=PROLIFIC_SYNC)


@shared_task(name="annotation.run_prolific_review_job", acks_late=True, reject_on_worker_lost=True)
def run_prolific_review_job(job_id: int) -> None:
    """Send a bulk review to Prolific (annotation/prolific/jobs.py)."""
    prolific_job_run(job_id=job_id, kind=PROLIFIC_REVIEW)


@shared_task(name="annotation.run_prolific_bonuses_job", acks_late=True, reject_on_worker_lost=True)
def run_prolific_bonuses_job(job_id: int) -> None:
    """Pay a study's bonuses of one reason through Prolific, each once (annotation/prolific/jobs.py)."""
    prolific_job_run(job_id=job_id, kind=PROLIFIC_BONUSES)


def _kinds_tasks() -> None:
    for name in kinds.KINDS:
        kind = import_module(f"{kinds.__name__}.{name}")
        if module_has_submodule(kind, "tasks"):
            import_module(f"{kind.__name__}.tasks")


_kinds_tasks()
