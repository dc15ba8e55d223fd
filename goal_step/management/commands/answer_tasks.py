"""python manage.py answer_tasks --task-set NAME --config FILE [--split test] [--candidates-only] [--wait]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from goal_step.answer import NothingToAnswer, answer_job_create, task_model_for_config
from goal_step.models import TaskSet, TaskSplit
from h2e_site.jobs.follow import follow_job


class Command(BaseCommand):
    help = (
        "Answer the multiple-choice examples of a goal-step task set with the model a YAML config describes "
        "(configs/goal_step/ or configs/generators/), as a job run by a Celery worker: the examples of the "
        "split it has not answered yet. --candidates-only shows the candidates without the prompt (the "
        "model's artifact check). Prints the job id, or with --wait follows it with a progress bar."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--task-set", required=True, metavar="NAME", help="a task set's name")
        parser.add_argument("--config", type=Path, required=True, metavar="FILE", help="a model config")
        parser.add_argument("--split", choices=TaskSplit.values, default=TaskSplit.TEST)
        parser.add_argument(
            "--candidates-only", action="store_true", help="show the candidates alone (artifact check)"
        )
        parser.add_argument("--wait", action="store_true", help="follow the job until it finishes")

    def handle(self, *args: Any, **options: Any) -> None:
        task_set = TaskSet.objects.filter(name=options["task_set"]).first()
        if task_set is None:
            raise CommandError(f"no task set {options['task_set']!r}")
        try:
            with transaction.atomic():
                task_model = task_model_for_config(options["config"])
                job = answer_job_create(
                    task_model=task_model,
                    task_set=task_set,
                    split=options["split"],
                    candidates_only=options["candidates_only"],
                )
        except NothingToAnswer as nothing:
            self.stdout.write(str(nothing))
            return
        except ValueError as exc:  # ConfigError, PromptChanged
            raise CommandError(str(exc)) from exc
        demo = " (demo model: answers not meaningful)" if task_model.is_demo_model else ""
        mode = " from the candidates alone" if options["candidates_only"] else ""
        self.stdout.write(
            f"job {job.pk}: answer the {options['split']} examples of task set {task_set.name}{mode} with "
            f"{task_model.model} ({task_model.model_id}){demo}, {job.total} example(s)"
        )
        if options["wait"]:
            follow_job(self, job, disable=options["verbosity"] == 0)
