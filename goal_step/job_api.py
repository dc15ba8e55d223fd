"""What POST /api/jobs/ calls to start a goal-step job: the body its serializer validated, as the arguments
of the service that creates the job (named by job_types.py, imported when the API starts one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from h2e_site.jobs.models import Job

from .answer import answer_job_create
from .jobs import task_set_create

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def build_tasks_api_create(data: dict[str, Any], created_by: User | None) -> Job:
    task_set = task_set_create(
        data["name"],
        seed=data["seed"],
        splits=data["splits"],
        topic_ids=data["topics"],
        test_share=data["test_share"],
        split_by=data["split_by"],
        created_by=created_by,
    )
    assert task_set.job is not None
    return task_set.job


def answer_tasks_api_create(data: dict[str, Any], created_by: User | None) -> Job:
    return answer_job_create(
        task_model=data["model_id"],
        task_set=data["task_set"],
        split=data["split"],
        candidates_only=data["candidates_only"],
        created_by=created_by,
    )
