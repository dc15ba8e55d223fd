"""python manage.py export_h2e OUT_ROOT [--generator ID ...] [--judge ID ...]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from judging.h2e_export import ExportProgress, h2e_export
from judging.models import Generation, Judgment


class _TqdmExport(ExportProgress):
    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def records(self, n: int) -> None:
        self.bar.update(n)


class Command(BaseCommand):
    help = "Write generations and judgments as an `h2e bench run` out_root (reference layout and format)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out_root", type=Path, metavar="OUT_ROOT")
        parser.add_argument("--generator", action="append", default=[], metavar="ID", help="generator_id")
        parser.add_argument("--judge", action="append", default=[], metavar="ID", help="judge_id")

    def handle(self, *args: Any, **options: Any) -> None:
        generators, judges = options["generator"], options["judge"]
        total = _count(generators, judges)
        with tqdm(total=total, desc="export_h2e", unit="rec", disable=options["verbosity"] == 0) as bar:
            report = h2e_export(
                out_root=options["out_root"],
                generator_ids=generators or None,
                judge_ids=judges or None,
                progress=_TqdmExport(bar),
            )
        if not report.run_dirs:
            raise CommandError("no generator matched: nothing exported")
        self.stdout.write(
            f"Wrote {len(report.run_dirs)} run(s), {report.n_generations} generation(s) and "
            f"{report.n_judgments} judgment(s) under {options['out_root']}"
        )


def _count(generators: list[str], judges: list[str]) -> int:
    generations = Generation.objects.all()
    judgments = Judgment.objects.all()
    if generators:
        generations = generations.filter(generator__generator_id__in=generators)
        judgments = judgments.filter(generator__generator_id__in=generators)
    if judges:
        judgments = judgments.filter(judge__judge_id__in=judges)
    return generations.count() + judgments.count()
