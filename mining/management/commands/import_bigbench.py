"""python manage.py import_bigbench PATH --name NAME --task step_inference|goal_inference|step_ordering"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mining.goal_step.bigbench import BigBenchFormatError
from mining.goal_step.build import TASKS
from mining.goal_step.exports import task_set_import_bigbench


class Command(BaseCommand):
    help = (
        "Import a BIG-bench multiple-choice task (JSON: examples with input and target_scores) as a task set "
        "of test examples, to evaluate models on it here. A bad file is refused whole, naming the example "
        "and field (examples[3].target_scores)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, metavar="PATH")
        parser.add_argument("--name", required=True, help="the new task set's name (a slug)")
        parser.add_argument("--task", required=True, choices=TASKS, help="which task its examples are")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        if not path.is_file():
            raise CommandError(f"not a file: {path}")
        try:
            task_set = task_set_import_bigbench(
                text=path.read_bytes(), name=options["name"], task=options["task"], path=str(path)
            )
        except BigBenchFormatError as bad:
            raise CommandError(f"{path}: {bad}") from bad
        except ValueError as refused:
            raise CommandError(str(refused)) from refused
        n = task_set.examples.count()
        self.stdout.write(f"task set {task_set.name}: {n} {options['task']} test example(s) from {path}")
