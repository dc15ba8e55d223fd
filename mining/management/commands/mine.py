"""python manage.py mine CONFIG [--name NAME] [--inline]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from h2e_site.jobs.follow import refuse_not_queued, warn_not_queued
from h2e_site.jobs.services import jobs_not_queued
from h2e_site.llm.config import ConfigError
from mining.config import load_run_config
from mining.runs import mine_job_run, mining_run_create
from mining.selectors import run_funnel, run_unstored


class Command(BaseCommand):
    help = (
        "Start a How2Mine run over the imported documents from a run config (configs/mining/*.yaml): "
        "the first candidates_per_topic documents of each topic (or a seeded sample). Answers stored for the "
        "same requests by earlier runs are reused, not sent again. Queued for a Celery worker, or run "
        "here with --inline; the funnel is printed at the end of an inline run."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("config", type=Path, metavar="CONFIG")
        parser.add_argument("--name", default="", help="the run's name (default: the config's name)")
        parser.add_argument("--inline", action="store_true", help="run the stages in this process")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = load_run_config(options["config"])
        except ConfigError as exc:
            raise CommandError(str(exc)) from exc
        run = mining_run_create(config=config, name=options["name"], enqueue=not options["inline"])
        self.stdout.write(f"mining run #{run.pk} over {run.documents.count()} document(s), job #{run.job_id}")
        if not options["inline"]:
            if run.job is not None:
                refuse_not_queued(run.job)  # the broker unreachable: nothing will run it
            return
        with jobs_not_queued() as not_queued:
            job = mine_job_run(job_id=run.job_id or 0)
        self.stdout.write(f"job #{run.job_id}: {job.status if job else 'not run'}")
        funnel = run_funnel(run)
        for row in [*funnel.rows, funnel.total]:
            cells = "  ".join(f"{c.stage} {c.passed}/{c.processed}" for c in row.cells)
            self.stdout.write(
                f"{row.topic}: {row.inputs} docs  {cells}  procedures {row.stored}  ${row.cost:.4f}"
            )
        reused = sum(cell.reused for cell in funnel.total.cells)
        if reused:
            self.stdout.write(f"{reused} answer(s) reused from identical requests of earlier runs: not sent")
        for unstored in run_unstored(run):
            self.stdout.write(f"not stored: {unstored.source_example_id}: {unstored.reason}")
        warn_not_queued(self, not_queued, done="the run's procedures are stored")
