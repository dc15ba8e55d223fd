"""What POST /api/jobs/ calls to start a generate or judge job: the body its serializer validated, as the
arguments of the service that creates the job (named by job_types.py, imported when the API starts one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from h2e_site.jobs.models import Job

from .generate_jobs import generate_job_create
from .job_kinds import GENERATE
from .judge_jobs import judge_job_create

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def llm_job_api_create(data: dict[str, Any], created_by: User | None) -> Job:
    if data["kind"] == GENERATE:
        return generate_job_create(
            generator=data["generator"],
            split=data.get("split"),
            procedure_ids=data.get("procedure_ids"),
            limit=data.get("limit"),
            created_by=created_by,
        )
    return judge_job_create(
        judge=data["judge"],
        generator=data["generator"],
        generation_ids=data.get("generation_ids"),
        mode=data["mode"],
        created_by=created_by,
    )
