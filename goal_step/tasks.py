"""Celery tasks of the goal-step app: ids in, the service does the work (h2e_site.jobs runs the loop).

Their names are those they had in the mining app: a message queued before the move still finds its task."""

from __future__ import annotations

from celery import shared_task

from h2e_site.jobs.answering_tasks import answering_task

from .answer import AnswerWork
from .jobs import build_job_run


@shared_task(name="mining.run_build_tasks_job", acks_late=True, reject_on_worker_lost=True)
def run_build_tasks_job(job_id: int) -> None:
    """Run a BUILD_TASKS job (a redelivered message builds the set again: same seed, same examples)."""
    build_job_run(job_id=job_id)


run_answer_tasks_job = answering_task("mining.run_answer_tasks_job", AnswerWork)
