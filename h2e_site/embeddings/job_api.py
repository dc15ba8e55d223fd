"""What POST /api/jobs/ calls to start an embed job: the body its serializer validated, as the arguments of
embed_job_create (named by job_types.py, imported when the API starts one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from h2e_site.jobs.models import Job

from .jobs import embed_job_create

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def embed_api_create(data: dict[str, Any], created_by: User | None) -> Job:
    return embed_job_create(
        sources=data.get("sources"), model=data["model"], device=data["device"], created_by=created_by
    )
