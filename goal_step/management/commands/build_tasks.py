"""python manage.py build_tasks NAME [--seed N] [--split bench ...] [--topic NAME ...] [--test-share 0.2]
[--wait | --inline]"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from goal_step.jobs import DEFAULT_TEST_SHARE, TaskSetRefused, build_job_run, task_set_create
from goal_step.models import TaskSet
from goal_step.selection import SplitBy
from h2e_site.jobs.follow import show_progress, wait_for_job
from h2e_site.jobs.models import Job, JobStatus
from mining.models import Split, Topic


class Command(BaseCommand):
    help = (
        "Build a goal-step task set (Step Inference, Goal Inference, Step Ordering) from the procedures of "
        "some splits and topics, as a build_tasks job run by a Celery worker. Prints the job id; --wait "
        "follows it with a progress bar, --inline runs it here (with the bar)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", metavar="NAME", help="the new task set's name (a slug)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--split", action="append", choices=Split.values, help="procedures of this split (repeat; bench)"
        )
        parser.add_argument("--topic", action="append", default=[], help="only this topic (repeat)")
        parser.add_argument("--test-share", type=float, default=DEFAULT_TEST_SHARE)
        parser.add_argument(
            "--split-by",
            choices=SplitBy.values,
            default=SplitBy.TEXT,
            help="text (the paper's rule) or procedure",
        )
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--wait", action="store_true", help="follow the job until it finishes")
        mode.add_argument("--inline", action="store_true", help="run the job in this process")

    def handle(self, *args: Any, **options: Any) -> None:
        names = options["topic"]
        ids = dict(Topic.objects.filter(name__in=names).values_list("name", "pk"))
        unknown = [name for name in names if name not in ids]
        if unknown:
            raise CommandError(f"--topic: no topic named {unknown[0]!r}")
        try:
            task_set = task_set_create(
                options["name"],
                seed=options["seed"],
                splits=options["split"] or [Split.BENCH],
                topic_ids=[ids[name] for name in names],
                test_share=options["test_share"],
                split_by=options["split_by"],
                enqueue=not options["inline"],
            )
        except TaskSetRefused as refused:
            raise CommandError(str(refused)) from refused
        job = task_set.job
        assert job is not None
        self.stdout.write(f"task set {task_set.name}: job {job.pk}")
        if not (options["wait"] or options["inline"]):
            return
        disable = options["verbosity"] == 0
        if options["inline"]:
            with tqdm(total=0, desc=f"job {job.pk} build_tasks", file=sys.stderr, disable=disable) as bar:
                build_job_run(job_id=job.pk, on_progress=lambda row: show_progress(bar, row))
        else:
            wait_for_job(job, disable=disable)
        job.refresh_from_db()
        self._report(job, TaskSet.objects.get(pk=task_set.pk))

    def _report(self, job: Job, task_set: TaskSet) -> None:
        self.stdout.write(f"job {job.pk} {job.status}")
        if job.error:
            self.stderr.write(job.error)
        if job.status != JobStatus.SUCCEEDED:
            raise CommandError(f"job {job.pk} {job.status}")
        for task, funnel in task_set.funnel.items():
            removed = ", ".join(f"{r['stage']} -{r['count']}" for r in funnel["removed"] if r["count"])
            self.stdout.write(
                f"{task}: {funnel['in']} in, {removed or 'none removed'}, {funnel['kept']} kept "
                f"({funnel['test']} test, {funnel['train']} train)"
            )
            if funnel.get("warning"):
                self.stderr.write(f"warning: {funnel['warning']}")
        for task, check in task_set.artifacts.items():
            if check["n"]:
                self.stdout.write(
                    f"{task}: candidates-only baseline {check['k']}/{check['n']} ({check['share']:.1%}, "
                    f"95 % CI {check['ci_low']:.1%}-{check['ci_high']:.1%}; chance {check['chance']:.0%})"
                )
