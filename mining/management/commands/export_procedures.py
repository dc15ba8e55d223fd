"""python manage.py export_procedures OUT [--form bench|how2mine] [--split bench|train|pool] [--run ID]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from mining.exports import EXPORT_FORMS, procedures_export
from mining.models import Split


class Command(BaseCommand):
    help = (
        "Write procedures as bench JSONL ({source_example_id, topic, goal, resources, steps}) or in the "
        "How2Mine export form (the same plus final_procedure and source_example); .gz/.zst compress."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", type=Path, metavar="OUT")
        parser.add_argument("--form", choices=EXPORT_FORMS, default="bench")
        parser.add_argument("--split", choices=Split.values, default=None, help="default: every split")
        parser.add_argument("--run", type=int, default=None, help="only the procedures this mining run kept")

    def handle(self, *args: Any, **options: Any) -> None:
        n = procedures_export(
            path=options["out"], form=options["form"], split=options["split"], run_id=options["run"]
        )
        self.stdout.write(f"{n} procedure(s) written to {options['out']}")
