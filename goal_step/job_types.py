"""The goal-step app's kinds of job, as the core (h2e_site.jobs) runs and shows them: build_tasks (a task set
built from procedures, jobs.py) and answer_tasks (a model answers the examples of a task set's split,
answer.py). Registered from GoalStepConfig.ready(), by name: the tasks, and the functions that start and
retry jobs (job_api.py, answer.py), are imported when a job is sent or started, not here."""

from __future__ import annotations

from collections.abc import Sequence

from django.urls import reverse

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

from .job_kinds import ANSWER_TASKS, BUILD_TASKS
from .models import TaskModel, TaskSet

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
    return JobDescription(tuple(subjects), tuple(links), tuple(facts))


def register_job_types() -> None:
    job_type_register(
        JobType(
            BUILD_TASKS,
            TaskName("mining.run_build_tasks_job"),
            label="Build goal-step tasks",
            describe=describe_build_tasks_jobs,
            create_serializer="goal_step.serializers.BuildTasksJobCreateSerializer",
            api_create=ByPath("goal_step.job_api.build_tasks_api_create"),
            start_hint="Build goal-step tasks: the Tasks page, POST /api/jobs/, or manage.py build_tasks.",
            start_link=("Build goal-step tasks", "goal_step:task_sets"),
        )
    )
    job_type_register(
        JobType(
            ANSWER_TASKS,
            TaskName("mining.run_answer_tasks_job"),
            label="Answer goal-step tasks",
            retry=ByPath("goal_step.answer.answer_job_retry"),
            describe=describe_answer_jobs,
            create_serializer="goal_step.answer_serializers.AnswerJobCreateSerializer",
            api_create=ByPath("goal_step.job_api.answer_tasks_api_create"),
            start_hint="Answer goal-step tasks with a model: POST /api/jobs/ or manage.py answer_tasks.",
        )
    )
