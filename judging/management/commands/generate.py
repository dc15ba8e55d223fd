"""python manage.py generate --generator-config FILE [--split bench] [--limit N] [--wait]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from h2e_site.jobs.answer_command import AnsweringCommand
from h2e_site.jobs.models import Job
from h2e_site.llm.config import load_config
from judging.configs import generator_for_config
from judging.generate_jobs import generate_job_create


class Command(AnsweringCommand):
    help = (
        "Generate L2 for the procedures of a split with the generator a YAML config describes, as a job run "
        "by a Celery worker. Prints the job id, or with --wait follows it with a progress bar."
    )

    def add_job_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--generator-config", type=Path, required=True, metavar="FILE")
        parser.add_argument("--split", default="bench", help="procedures of this split (default bench)")
        parser.add_argument("--limit", type=int, default=None, help="at most N procedures (first by id)")

    def start(self, options: dict[str, Any]) -> tuple[Job, str]:
        generator = generator_for_config(load_config(options["generator_config"], role="generator"))
        job = generate_job_create(generator=generator, split=options["split"], limit=options["limit"])
        line = (
            f"job {job.pk}: generate with {generator.model} ({generator.generator_id}), "
            f"{job.total} procedure(s)"
        )
        return job, line
