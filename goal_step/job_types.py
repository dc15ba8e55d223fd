"""The goal-step app's kinds of job, as the core (h2e_site.jobs) runs and shows them: build_tasks (a task set
built from procedures, jobs.py) and answer_tasks (a model answers the examples of a task set's split,
answer.py). Registered from GoalStepConfig.ready()."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.urls import reverse

from h2e_site.jobs.models import Job
from h2e_site.jobs.registry import JobDescription, JobLink, JobSubject, JobType, job_type_register

from .answer import answer_job_create, answer_job_retry
from .job_kinds import ANSWER_TASKS, BUILD_TASKS
from .jobs import task_set_create
from .models import TaskModel, TaskSet
from .tasks import run_answer_tasks_job, run_build_tasks_job

if TYPE_CHECKING:
    from django.contrib.auth.models import User

DEMO_WARNING = "demo model - answers not meaningful"


def describe_build_tasks_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """BUILD_TASKS jobs: their task set (one query) and its page."""
    pks = [pk for job in jobs if (pk := job.parameters.get("task_set")) is not None]
    task_sets = TaskSet.objects.in_bulk(pks)
    descriptions = {}
    for job in jobs:
        task_set = task_sets.get(job.parameters.get("task_set"))
        if task_set is None:
            continue
        url = reverse("goal_step:task_set", args=[task_set.name])
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
        split_by=data["split_by"],
        created_by=created_by,
    )
    assert task_set.job is not None
    return task_set.job


def describe_answer_jobs(jobs: Sequence[Job]) -> dict[int, JobDescription]:
    """Their model and task set (one query each), linking to the task set's page and its models' figures."""
    model_pks = {j.parameters.get("model") for j in jobs} - {None}
    set_pks = {j.parameters.get("task_set") for j in jobs} - {None}
    models = TaskModel.objects.in_bulk(list(model_pks)) if model_pks else {}
    task_sets = TaskSet.objects.in_bulk(list(set_pks)) if set_pks else {}
    return {
        job.pk: _description(
            job, models.get(job.parameters.get("model")), task_sets.get(job.parameters.get("task_set"))
        )
        for job in jobs
    }


def _description(job: Job, task_model: TaskModel | None, task_set: TaskSet | None) -> JobDescription:
    subjects, links, facts = [], [], []
    if task_model is not None:
        warning = DEMO_WARNING if task_model.is_demo_model else ""
        subjects.append(JobSubject("model", task_model.model, "", task_model.model_id, warning))
    if task_set is not None:
        page = reverse("goal_step:task_set", args=[task_set.name])
        subjects.append(JobSubject("task set", task_set.name, page, job.parameters.get("split", "")))
        links.append(JobLink("The task set's page", page, "Task set"))
        links.append(JobLink("Model accuracy (API)", reverse("api:task-models", args=[task_set.name]), "API"))
    mode = "candidates only (artifact check)" if job.parameters.get("candidates_only") else "full prompt"
    facts.append(("asked with", mode))
    if job.parameters.get("retry_of"):
        origin = job.parameters["retry_of"]
        links.append(JobLink(f"The job it retries (#{origin})", reverse("jobs:job_detail", args=[origin])))
    return JobDescription(tuple(subjects), tuple(links), tuple(facts))


def _api_create_answer_tasks(data: dict[str, Any], created_by: User | None) -> Job:
    return answer_job_create(
        task_model=data["model_id"],
        task_set=data["task_set"],
        split=data["split"],
        candidates_only=data["candidates_only"],
        created_by=created_by,
    )


def register_job_types() -> None:
    job_type_register(
        JobType(
            BUILD_TASKS,
            run_build_tasks_job,
            label="Build goal-step tasks",
            describe=describe_build_tasks_jobs,
            create_serializer="goal_step.serializers.BuildTasksJobCreateSerializer",
            api_create=_api_create_build_tasks,
            start_hint="Build goal-step tasks: the Tasks page, POST /api/jobs/, or manage.py build_tasks.",
            start_link=("Build goal-step tasks", "goal_step:task_sets"),
        )
    )
    job_type_register(
        JobType(
            ANSWER_TASKS,
            run_answer_tasks_job,
            label="Answer goal-step tasks",
            retry=answer_job_retry,
            describe=describe_answer_jobs,
            create_serializer="goal_step.answer_serializers.AnswerJobCreateSerializer",
            api_create=_api_create_answer_tasks,
            start_hint="Answer goal-step tasks with a model: POST /api/jobs/ or manage.py answer_tasks.",
        )
    )
