"""python manage.py import_h2e OUT_ROOT [--skip-invalid]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from h2e_site.jobs.services import jobs_not_queued
from judging.h2e_import import h2e_import
from mining.management.commands.import_bench import print_import_report
from mining.services import TqdmProgress


class Command(BaseCommand):
    help = (
        "Import a whole `h2e bench run` out_root: every <run>/generations.jsonl and its manifest, every "
        "judgments/*/judgments.jsonl and judge_manifest.json. Missing procedures are created."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out_root", type=Path, metavar="OUT_ROOT")
        parser.add_argument(
            "--skip-invalid", action="store_true", help="import the valid records of a file with bad ones"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        out_root: Path = options["out_root"]
        if not out_root.is_dir():
            raise CommandError(f"{out_root}: not a directory")
        with jobs_not_queued() as not_queued:
            report = h2e_import(
                out_root=out_root,
                skip_invalid=options["skip_invalid"],
                progress=TqdmProgress(desc="import_h2e", disable=options["verbosity"] == 0),
            )
        if not report.files:
            raise CommandError(f"{out_root}: no <run>/generations.jsonl found")
        print_import_report(self, report, skip_invalid=options["skip_invalid"], not_queued=not_queued)
