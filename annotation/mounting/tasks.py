"""Celery tasks of the annotation app's operations: ids in, the service does the work (h2e_site.jobs runs the
loop). A study kind's own tasks are in its folder's job_types.py."""

from __future__ import annotations

from celery import shared_task

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
