"""The kind's Celery task and what POST /api/jobs/ calls to start its job (annotation/mounting/tasks.py
imports
this module through the registry; job_types.py names both, imported when a job is sent or started)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from annotation.kinds.step_types.classify import ClassifyWork, classify_job_create
from h2e_site.jobs.answering_tasks import answering_task
from h2e_site.jobs.models import Job

if TYPE_CHECKING:
    from django.contrib.auth.models import User

run_classify_job = answering_task("annotation.run_classify_job", ClassifyWork)


def classify_api_create(data: dict[str, Any], created_by: User | None) -> Job:
    return classify_job_create(classifier=data["classifier_id"], study=data["study"], created_by=created_by)
