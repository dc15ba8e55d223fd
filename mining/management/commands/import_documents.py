"""python manage.py import_documents PATH... [--id-field --text-field --url-field --topic-field]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mining.documents import DocumentFields, documents_import
from mining.services import TqdmProgress


class Command(BaseCommand):
    help = (
        "Import source documents for mining from .jsonl/.json, .csv, .parquet or .arrow/.feather files, "
        "optionally .zst/.gz/.bz2/.xz compressed. Streaming and idempotent: bad records are reported as "
        "file:line and skipped, stored documents are never changed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
        parser.add_argument("--id-field", default="id", help="the document id field (default: id)")
        parser.add_argument("--text-field", default="text", help="the document text field (default: text)")
        parser.add_argument("--url-field", default="url", help="the URL field, optional (default: url)")
        parser.add_argument(
            "--topic-field", default="topic", help="the topic field, optional (default: topic)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        missing = [str(p) for p in options["paths"] if not p.is_file()]
        if missing:
            raise CommandError(f"not a file: {', '.join(missing)}")
        fields = DocumentFields(
            id=options["id_field"],
            text=options["text_field"],
            url=options["url_field"],
            topic=options["topic_field"],
        )
        report = documents_import(
            paths=options["paths"],
            fields=fields,
            progress=TqdmProgress(desc="import_documents", disable=options["verbosity"] == 0),
        )
        for line in report.summary_lines():
            self.stdout.write(line)
        for line in report.conflict_lines():
            self.stderr.write(f"  {line}")
        errors = report.error_lines()
        if errors:
            self.stderr.write(self.style.ERROR("Bad records (skipped):"))
            for line in errors:
                self.stderr.write(f"  {line}")
            raise CommandError(
                f"{report.n_errors} bad record(s) skipped; the valid ones were imported. Fix the records and "
                "import the file again (what is stored stays as it is)."
            )
