"""python manage.py import_step_types PATH (--label-set NAME | --classifier NAME) [--skip-invalid]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.kinds.step_types.imports import step_type_labels_import, step_type_predictions_import
from mining.management.commands.import_bench import print_import_report
from mining.services import TqdmProgress


class Command(BaseCommand):
    help = (
        "Import step-type labels (one row per candidate per annotator) as a label set, or a model's "
        "predictions (one row per candidate) as an imported classifier, from JSONL or CSV in the shape of "
        "the step-types exports. Procedures by source_example_id (or pk), candidates by key (or type and "
        "step indices)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, metavar="PATH")
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--label-set", metavar="NAME", help="human labels into this label set (a slug)")
        target.add_argument("--classifier", metavar="NAME", help="predictions as this imported classifier")
        parser.add_argument(
            "--skip-invalid", action="store_true", help="import the valid rows of a file with bad ones"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        if not path.is_file():
            raise CommandError(f"not a file: {path}")
        progress = TqdmProgress(desc="import_step_types", disable=options["verbosity"] == 0)
        try:
            if options["label_set"] is not None:  # an empty name is refused, not taken as absent
                report = step_type_labels_import(
                    path=path,
                    label_set=options["label_set"],
                    skip_invalid=options["skip_invalid"],
                    progress=progress,
                )
            else:
                report = step_type_predictions_import(
                    path=path,
                    classifier=options["classifier"],
                    skip_invalid=options["skip_invalid"],
                    progress=progress,
                )
        except ValueError as exc:  # the name (or whose classifier it is): the flag that gave it
            flag = "--label-set" if options["label_set"] is not None else "--classifier"
            raise CommandError(f"{flag}: {exc}") from None
        print_import_report(self, report, skip_invalid=options["skip_invalid"])
