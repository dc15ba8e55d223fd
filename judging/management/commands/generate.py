"""python manage.py generate --generator-config FILE [--split bench] [--limit N] [--wait]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from h2e_site.jobs.follow import follow_job
from h2e_site.llm.config import ConfigError, load_config
from judging.configs import generator_for_config
from judging.generate_jobs import generate_job_create


class Command(BaseCommand):
    help = (
        "Generate L2 for the procedures of a split with the generator a YAML config describes, as a job run "
        "by a Celery worker. Prints the job id, or with --wait follows it with a progress bar."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--generator-config", type=Path, required=True, metavar="FILE")
        parser.add_argument("--split", default="bench", help="procedures of this split (default bench)")
        parser.add_argument("--limit", type=int, default=None, help="at most N procedures (first by id)")
        parser.add_argument("--wait", action="store_true", help="follow the job until it finishes")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = load_config(options["generator_config"], role="generator")
            with transaction.atomic():
                generator = generator_for_config(config)
                job = generate_job_create(generator=generator, split=options["split"], limit=options["limit"])
        except (ConfigError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"job {job.pk}: generate with {generator.model} ({generator.generator_id}), "
            f"{job.total} procedure(s)"
        )
        if options["wait"]:
            follow_job(self, job, disable=options["verbosity"] == 0)
