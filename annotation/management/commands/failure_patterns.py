"""python manage.py failure_patterns --topic NAME [--k K] [--seed 0] [--wait | --inline]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.failures.meaning.jobs import (
    DEFAULT_K,
    DEFAULT_SEED,
    TooFewFailures,
    failure_patterns_job_create,
    failure_patterns_job_run,
)
from h2e_site.bounds import OutOfRange
from h2e_site.jobs.follow import run_or_follow
from mining.models import Topic


class Command(BaseCommand):
    help = (
        "Cluster a topic's critical-failure descriptions (judges' and annotators', with a stored "
        "vector) into k failure patterns with faiss k-means, as a job run by a Celery worker. Prints the "
        "job id; --wait follows it with a progress bar, --inline runs it here (with the bar). The same "
        "seed gives the same patterns."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--topic", required=True, metavar="NAME", help="the topic's name")
        parser.add_argument(
            "--k",
            type=int,
            default=None,
            help=f"clusters (default: chosen from the topic's failures with a vector, n: ⌊√(n/2)⌋, from 2 "
            f"to {DEFAULT_K})",
        )
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="faiss k-means' seed")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--wait", action="store_true", help="follow the job until it finishes")
        mode.add_argument("--inline", action="store_true", help="run the job in this process")

    def handle(self, *args: Any, **options: Any) -> None:
        topic = Topic.objects.filter(name=options["topic"]).first()
        if topic is None:
            raise CommandError(f"topic: no topic named {options['topic']!r}")
        try:
            job = failure_patterns_job_create(
                topic=topic, k=options["k"], seed=options["seed"], enqueue=not options["inline"]
            )
        except (OutOfRange, TooFewFailures) as refused:
            raise CommandError(str(refused)) from refused
        self.stdout.write(f"failure_patterns job {job.pk}: topic {topic.name}, k={job.parameters['k']}")
        run_or_follow(
            self,
            job,
            failure_patterns_job_run,
            inline=options["inline"],
            wait=options["wait"],
            disable=options["verbosity"] == 0,
            label="patterns",
        )
