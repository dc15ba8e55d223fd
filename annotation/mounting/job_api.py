"""What POST /api/jobs/ calls to start a failure_patterns job: the body its serializer
validated, as the arguments of the service that creates the job (named by job_types.py, imported when the API
starts one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from annotation.failures.meaning.jobs import failure_patterns_job_create
from h2e_site.jobs.models import Job

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def failure_patterns_api_create(data: dict[str, Any], created_by: User | None) -> Job:
    return failure_patterns_job_create(
        topic=data["topic"], k=data["k"], seed=data["seed"], created_by=created_by
    )
