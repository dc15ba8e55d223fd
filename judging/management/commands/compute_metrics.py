"""python manage.py compute_metrics [--generator ID ...]: fill missing token counts and format proxies."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from judging.metrics import metrics_backfill, metrics_backfill_counts
from judging.models import Generator


class Command(BaseCommand):
    help = (
        "Compute the metrics still missing (NULL): o200k_base tokens of L1 and L2 steps, step-count "
        "mismatch, duplicate-step and duplicate n-gram rates. Safe to run again: only NULLs are filled."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--generator",
            action="append",
            default=[],
            metavar="ID",
            help="generator_id or database id (repeatable); default: every generator",
        )
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        generator_pks = _generator_pks(options["generator"]) if options["generator"] else None
        todo = metrics_backfill_counts(generator_ids=generator_pks)
        with tqdm(
            total=todo.n_procedures + todo.n_generations,
            desc="metrics",
            unit="row",
            disable=options["no_progress"],
        ) as bar:
            report = metrics_backfill(
                generator_ids=generator_pks, batch_size=options["batch_size"], on_progress=bar.update
            )
        self.stdout.write(
            f"Filled token counts of {report.n_procedures} procedure(s) (L1) and the metrics of "
            f"{report.n_generations} generation(s) (L2)."
        )


def _generator_pks(values: list[str]) -> list[int]:
    pks = []
    for value in values:
        generator = Generator.objects.filter(generator_id=value).first()
        if generator is None and value.isdigit():
            generator = Generator.objects.filter(pk=int(value)).first()
        if generator is None:
            raise CommandError(f"--generator {value}: no generator with this generator_id or id")
        pks.append(generator.pk)
    return pks
