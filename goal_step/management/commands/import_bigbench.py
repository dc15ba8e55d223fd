"""python manage.py import_bigbench PATH --name NAME --task step_inference|goal_inference|step_ordering"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from goal_step.bigbench import BigBenchFormatError
from goal_step.build import TASKS
from goal_step.exports import task_set_import_bigbench


class Command(BaseCommand):
    help = (
        "Import a BIG-bench multiple-choice task (JSON: examples with input and target_scores) as a task set "
        "of test examples, to evaluate models on it here. The file is streamed (a bar shows the bytes read); "
        "a bad file is refused whole in one line naming the example and field (examples[3].target_scores), "
        "and nothing is stored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, metavar="PATH")
        parser.add_argument("--name", required=True, help="the new task set's name (a slug, at most 64)")
        parser.add_argument("--task", required=True, choices=TASKS, help="which task its examples are")

    def handle(self, *args: Any, **options: Any) -> None:
        from tqdm import tqdm

        path: Path = options["path"]
        if not path.is_file():
            raise CommandError(f"not a file: {path}")
        try:
            with (
                path.open("rb") as raw,
                tqdm.wrapattr(
                    raw,
                    "read",
                    total=path.stat().st_size,
                    desc="import_bigbench",
                    disable=options["verbosity"] == 0,
                ) as stream,
            ):
                task_set = task_set_import_bigbench(
                    source=stream, name=options["name"], task=options["task"], path=str(path)
                )
        except BigBenchFormatError as bad:
            raise CommandError(f"{path}: {bad}") from None
        except ValueError as refused:  # "name: ..." or "task: ...": the flag it came from
            raise CommandError(f"--{refused}") from None
        except OSError as unreadable:
            raise CommandError(f"{path}: cannot read the file: {unreadable.strerror or unreadable}") from None
        n = task_set.examples.count()
        self.stdout.write(f"task set {task_set.name}: {n} {options['task']} test example(s) from {path}")
