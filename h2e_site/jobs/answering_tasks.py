"""The Celery task of a kind of answer (answer_kinds.ConfiguredWork), made once here: ids in, the work does
the rest; acks late and rejected when its worker is lost, so a redelivered message resumes the job (a
finished one is left)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from .answer_kinds import ConfiguredWork


def answering_task(name: str, work: type[ConfiguredWork[Any, Any]]) -> Any:
    """The task named `name` that runs (or resumes) a job of `work`'s kind."""

    def run(job_id: int) -> None:
        work.run_job(job_id=job_id)

    run.__doc__ = f"Run or resume a {work.answers.kind} Job (a redelivered message resumes it)."
    return shared_task(name=name, acks_late=True, reject_on_worker_lost=True)(run)
