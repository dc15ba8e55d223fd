"""python manage.py import_ood --run NAME FILE"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judging.training.models import TrainingRun
from judging.training.ood import MAX_FILE_BYTES, OODFileRefused, ood_import


class Command(BaseCommand):
    help = (
        "Import a training run's out-of-domain results from a CSV or JSONL file (benchmark, checkpoint as a "
        "step or label, score, optionally higher_is_better): every row, or none and each bad row named."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True, help="the training run's name")
        parser.add_argument("file", type=Path, metavar="FILE")

    def handle(self, *args: Any, **options: Any) -> None:
        run = TrainingRun.objects.filter(name=options["run"]).first()
        if run is None:
            raise CommandError(f"--run: no training run is named {options['run']!r}")
        path: Path = options["file"]
        try:
            with path.open("rb") as file:
                data = file.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from exc
        try:
            report = ood_import(run=run, data=data, name=str(path))
        except OODFileRefused as refused:
            raise CommandError(f"nothing imported: {refused}") from refused
        self.stdout.write(
            f"run {run.name}: {report.n_created} new, {report.n_updated} replaced "
            f"({', '.join(report.benchmarks)})"
        )
