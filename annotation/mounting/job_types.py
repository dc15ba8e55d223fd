"""The annotation app's operations' kinds of job as the core (h2e_site.jobs) runs and shows them:
failure_patterns (a topic's failure descriptions clustered; annotation/failures/meaning/) and the Prolific
jobs (sync, review, bonuses; annotation/prolific/jobs.py). A study kind's own jobs are its folder's
job_types.py, which annotation/mounting/ready.py registers through the registry. Registered by name: the
tasks (tasks.py) and the functions that start jobs (job_api.py) are imported when a job is sent or started."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from django.urls import reverse

from annotation.base.job_kinds import (
    FAILURE_PATTERNS,
    PROLIFIC_BONUSES,
    PROLIFIC_REVIEW,
    PROLIFIC_SYNC,
)
from h2e_site.jobs.models import Job
from h2e_site.jobs.registry import (
    ByPath,
    JobDescription,
    JobLink,
    JobSubject,
    JobType,
    TaskName,
    job_type_register,
)


def describe_pattern_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """The topic, k and seed of each failure_patterns job, and its topic's failure-patterns page."""
    descriptions = {}
    for job in jobs:
        parameters = job.parameters
        url = reverse("failures:failure_patterns", args=[parameters.get("topic", 0)])
        if parameters.get("run"):
            url += f"?run={parameters['run']}"
        descriptions[job.pk] = JobDescription(
            subjects=(JobSubject("topic", str(parameters.get("topic_name", "")), url),),
            links=(JobLink("The topic's failure patterns", url, "Patterns"),),
            facts=(("clusters (k)", str(parameters.get("k", ""))), ("seed", str(parameters.get("seed", "")))),
        )
    return descriptions


def _pattern_note(job: Job) -> str:
    parameters = job.parameters
    return f"{parameters.get('topic_name', '')}: k={parameters.get('k')}, seed {parameters.get('seed')}"


def _pattern_command(job: Job) -> str:
    parameters = job.parameters
    topic = shlex.quote(str(parameters.get("topic_name", "")))
    return (
        f"Run it with: python manage.py failure_patterns --topic {topic} --k {parameters.get('k')} "
        f"--seed {parameters.get('seed')} --inline"
    )


def describe_prolific_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """The study of each Prolific job (its page, where the job was started) and what came of it."""
    descriptions = {}
    for job in jobs:
        parameters = job.parameters
        url = reverse("annotation:study_detail", args=[parameters.get("study_slug", "")]) + "#prolific"
        facts = [
            (name, str(parameters[name])) for name in ("action", "reason", "result") if parameters.get(name)
        ]
        descriptions[job.pk] = JobDescription(
            subjects=(JobSubject("study", str(parameters.get("study_slug", "")), url),),
            links=(JobLink("The study's Prolific section", url, "Study"),),
            facts=tuple(facts),
        )
    return descriptions


PROLIFIC_JOB_LABELS = {
    PROLIFIC_SYNC: ("Prolific: sync submissions", TaskName("annotation.run_prolific_sync_job")),
    PROLIFIC_REVIEW: ("Prolific: review submissions", TaskName("annotation.run_prolific_review_job")),
    PROLIFIC_BONUSES: ("Prolific: pay bonuses", TaskName("annotation.run_prolific_bonuses_job")),
}


def register_job_types() -> None:
    for kind, (label, task) in PROLIFIC_JOB_LABELS.items():
        job_type_register(
            JobType(
                kind,
                task,
                label=label,
                note=lambda job: str(job.parameters.get("study_slug", "")),
                describe=describe_prolific_jobs,
                start_hint=f"{label}: a study page's Prolific section (needs the Prolific permissions).",
            )
        )
    job_type_register(
        JobType(
            FAILURE_PATTERNS,
            TaskName("annotation.run_failure_patterns_job"),
            label="Failure patterns",
            note=_pattern_note,
            describe=describe_pattern_jobs,
            create_serializer="annotation.failures.meaning.serializers.FailurePatternsJobCreateSerializer",
            api_create=ByPath("annotation.mounting.job_api.failure_patterns_api_create"),
            run_hint=_pattern_command,
            start_hint="Cluster a topic's failure descriptions: the failure browser's “Failure patterns” "
            "page, POST /api/jobs/, or manage.py failure_patterns --topic NAME.",
        )
    )
