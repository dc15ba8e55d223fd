"""python manage.py answer_tasks --task-set NAME --config FILE [--split test] [--candidates-only] [--wait]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from goal_step.answer import answer_job_create, task_model_for_config
from goal_step.models import TaskSet, TaskSplit
from h2e_site.jobs.answer_command import AnsweringCommand
from h2e_site.jobs.models import Job


class Command(AnsweringCommand):
    help = (
        "Answer the multiple-choice examples of a goal-step task set with the model a YAML config describes "
        "(configs/goal_step/ or configs/generators/), as a job run by a Celery worker: the examples of the "
        "split it has not answered yet. --candidates-only shows the candidates without the prompt (the "
        "model's artifact check). Prints the job id, or with --wait follows it with a progress bar."
    )

    def add_job_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--task-set", required=True, metavar="NAME", help="a task set's name")
        parser.add_argument("--config", type=Path, required=True, metavar="FILE", help="a model config")
        parser.add_argument("--split", choices=TaskSplit.values, default=TaskSplit.TEST)
        parser.add_argument(
            "--candidates-only", action="store_true", help="show the candidates alone (artifact check)"
        )

    def start(self, options: dict[str, Any]) -> tuple[Job, str]:
        task_set = TaskSet.objects.filter(name=options["task_set"]).first()
        if task_set is None:
            raise CommandError(f"no task set {options['task_set']!r}")
        task_model = task_model_for_config(options["config"])
        job = answer_job_create(
            task_model=task_model,
            task_set=task_set,
            split=options["split"],
            candidates_only=options["candidates_only"],
        )
        demo = " (demo model: answers not meaningful)" if task_model.is_demo_model else ""
        mode = " from the candidates alone" if options["candidates_only"] else ""
        line = (
            f"job {job.pk}: answer the {options['split']} examples of task set {task_set.name}{mode} with "
            f"{task_model.model} ({task_model.model_id}){demo}, {job.total} example(s)"
        )
        return job, line
