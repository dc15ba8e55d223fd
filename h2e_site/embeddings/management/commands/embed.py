"""python manage.py embed [--source NAME ...] [--model minilm] [--wait | --inline]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from h2e_site.embeddings.jobs import CPU, DEVICES, embed_job_create, embed_job_run
from h2e_site.embeddings.sources import text_sources
from h2e_site.embeddings.specs import DEFAULT_EMBEDDING_MODEL
from h2e_site.jobs.follow import run_or_follow


class Command(BaseCommand):
    help = (
        "Embed every text of some sources (default: all) that has no vector yet under the model, as an embed "
        "job run by a Celery worker. Prints the job id; --wait follows it with a progress bar, --inline runs "
        "it here (with the bar). Texts already stored are never embedded again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        names = [source.name for source in text_sources()]
        parser.add_argument("--source", action="append", choices=names, help="this source's texts (repeat)")
        parser.add_argument("--model", default=DEFAULT_EMBEDDING_MODEL, help="the embedding model (minilm)")
        parser.add_argument(
            "--device", choices=DEVICES, default=CPU, help="gpu: a worker on the gpu queue (CUDA)"
        )
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--wait", action="store_true", help="follow the job until it finishes")
        mode.add_argument("--inline", action="store_true", help="run the job in this process")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            job = embed_job_create(
                sources=options["source"],
                model=options["model"],
                device=options["device"],
                enqueue=not options["inline"],
            )
        except (LookupError, ValueError) as refused:
            raise CommandError(str(refused)) from refused
        self.stdout.write(f"embed job {job.pk}")
        run_or_follow(
            self,
            job,
            embed_job_run,
            inline=options["inline"],
            wait=options["wait"],
            disable=options["verbosity"] == 0,
            label="embed",
        )
