"""The mining app's kinds of job, as the core (h2e_site.jobs) runs and shows them: mine (a How2Mine run) and
build_tasks (a goal-step task set, mining/goal_step/jobs.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.urls import reverse

from h2e_site.jobs.models import Job
from h2e_site.jobs.registry import JobDescription, JobLink, JobSubject, JobType, job_type_register

from .goal_step.answer_registry import register_answer_job_type
from .goal_step.jobs import task_set_create
from .job_kinds import BUILD_TASKS, MINE
from .models import MiningRun, TaskSet
from .tasks import run_build_tasks_job, run_mine_job

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# The kinds of job registered here (the names stored in Job.kind); answer_tasks: goal_step/answer_registry.py


def describe_mine_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """MINE jobs: their mining run (one query) and its funnel."""
    runs = MiningRun.objects.in_bulk([pk for job in jobs if (pk := job.parameters.get("run")) is not None])
    descriptions = {}
    for job in jobs:
        run = runs.get(job.parameters.get("run"))
        if run is None:
            continue
        funnel = reverse("admin:mining_miningrun_funnel", args=[run.pk])
        descriptions[job.pk] = JobDescription(
            subjects=(JobSubject("mining run", run.name, funnel, f"#{run.pk}"),),
            links=(JobLink("The run's funnel", funnel, "Funnel"),),
        )
    return descriptions


def describe_build_tasks_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """BUILD_TASKS jobs: their task set (one query) and its page."""
    pks = [pk for job in jobs if (pk := job.parameters.get("task_set")) is not None]
    task_sets = TaskSet.objects.in_bulk(pks)
    descriptions = {}
    for job in jobs:
        task_set = task_sets.get(job.parameters.get("task_set"))
        if task_set is None:
            continue
        url = reverse("mining:task_set", args=[task_set.name])
        descriptions[job.pk] = JobDescription(
            subjects=(JobSubject("task set", task_set.name, url, f"seed {task_set.seed}"),),
            links=(JobLink("The task set's funnel", url, "Funnel"),),
        )
    return descriptions


def _api_create_build_tasks(data: dict[str, Any], created_by: User | None) -> Job:
    task_set = task_set_create(
        data["name"],
        seed=data["seed"],
        splits=data["splits"],
        topic_ids=data["topics"],
        test_share=data["test_share"],
        created_by=created_by,
    )
    assert task_set.job is not None
    return task_set.job


def register_job_types() -> None:
    job_type_register(
        JobType(
            MINE,
            run_mine_job,
            label="Mine procedures",
            describe=describe_mine_jobs,
            start_hint="Mine: the admin's mining runs, POST /api/mining/runs/<id>/start/, or manage.py mine.",
        )
    )
    job_type_register(
        JobType(
            BUILD_TASKS,
            run_build_tasks_job,
            label="Build goal-step tasks",
            describe=describe_build_tasks_jobs,
            create_serializer="mining.goal_step.serializers.BuildTasksJobCreateSerializer",
            api_create=_api_create_build_tasks,
            start_hint="Build goal-step tasks: the Tasks page, POST /api/jobs/, or manage.py build_tasks.",
            start_link=("Build goal-step tasks", "mining:task_sets"),
        )
    )

    register_answer_job_type()
