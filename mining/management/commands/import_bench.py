"""python manage.py import_bench PATH... [--split bench|train|pool] [--skip-invalid]"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from h2e_site.jobs.follow import warn_not_queued
from h2e_site.jobs.models import Job
from h2e_site.jobs.services import jobs_not_queued
from mining.models import Split
from mining.services import ImportReport, TqdmProgress, bench_import


def print_import_report(
    command: BaseCommand, report: ImportReport, *, skip_invalid: bool, not_queued: Sequence[Job] = ()
) -> None:
    """Summary per file, then conflicts and rejected records, then a warning for each job the import queued
    that could not be queued (its embed job, with the broker unreachable: exit status 0, the import is
    stored); CommandError when a file was rejected."""
    for line in report.summary_lines():
        command.stdout.write(line)
    conflicts = report.conflict_lines()
    if conflicts:
        command.stderr.write(command.style.WARNING("Conflicts (stored data kept):"))
        for line in conflicts:
            command.stderr.write(f"  {line}")
    errors = report.error_lines()
    if errors:
        title = "Skipped bad records:" if skip_invalid else "Bad records:"
        command.stderr.write(command.style.WARNING(title) if skip_invalid else command.style.ERROR(title))
        for line in errors:
            command.stderr.write(f"  {line}")
    warn_not_queued(command, not_queued, done="the import succeeded (what is listed above is stored)")
    if not report.ok:
        rejected = sum(1 for f in report.files if not f.imported)
        raise CommandError(
            f"{rejected} file(s) rejected with {report.n_errors} bad record(s); nothing was imported from "
            "them. Fix them, or rerun with --skip-invalid to import the valid records."
        )


class Command(BaseCommand):
    help = (
        "Import procedures (L1) from bench files: How2Mine exports, bench JSONL, the HF dataset columns; "
        ".jsonl/.json, .csv, .parquet, .arrow/.feather, optionally .zst/.gz/.bz2/.xz compressed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
        parser.add_argument("--split", choices=Split.values, default=Split.BENCH)
        parser.add_argument(
            "--skip-invalid", action="store_true", help="import the valid records of a file with bad ones"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        missing = [str(p) for p in options["paths"] if not p.is_file()]
        if missing:
            raise CommandError(f"not a file: {', '.join(missing)}")
        with jobs_not_queued() as not_queued:
            report = bench_import(
                paths=options["paths"],
                split=options["split"],
                skip_invalid=options["skip_invalid"],
                progress=TqdmProgress(desc="import_bench", disable=options["verbosity"] == 0),
            )
        print_import_report(self, report, skip_invalid=options["skip_invalid"], not_queued=not_queued)
