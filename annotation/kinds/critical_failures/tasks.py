"""The kind's Celery task (annotation/mounting/tasks.py imports this module through the registry)."""

from __future__ import annotations

from celery import shared_task

from annotation.kinds.critical_failures.calibration.jobs import calibration_round_job_run


@shared_task(name="annotation.run_calibration_round_job", acks_late=True, reject_on_worker_lost=True)
def run_calibration_round_job(job_id: int) -> None:
    """Run a calibration_round Job (a redelivered message finds its round stored, or draws it whole)."""
    calibration_round_job_run(job_id=job_id)
