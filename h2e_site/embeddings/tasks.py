"""Celery task of the embeddings app: the job's id in, the service does the work."""

from __future__ import annotations

from celery import shared_task

from .jobs import embed_job_run


@shared_task(name="embeddings.run_embed_job", acks_late=True, reject_on_worker_lost=True)
def run_embed_job(job_id: int) -> None:
    """Run or resume an `embed` job (a redelivered message embeds only the texts still without a vector)."""
    embed_job_run(job_id=job_id)
