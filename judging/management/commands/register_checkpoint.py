"""python manage.py register_checkpoint --run NAME --step N --config FILE [--label L]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judging.training.checkpoints import CheckpointRefused, checkpoint_register
from judging.training.models import TrainingRun


class Command(BaseCommand):
    help = (
        "Register a checkpoint of a training run: the generator a YAML config describes (e.g. a vLLM server "
        "serving that checkpoint) at a step. Then generate and judge it from the run's checkpoints page, or "
        "with `generate --generator-config FILE` and `judge`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True, help="the training run's name")
        parser.add_argument("--step", type=int, required=True, help="its step (0: before training)")
        parser.add_argument("--config", type=Path, required=True, metavar="FILE", help="a generator config")
        parser.add_argument("--label", default="", help="e.g. base or +RL (not a number)")

    def handle(self, *args: Any, **options: Any) -> None:
        run = TrainingRun.objects.filter(name=options["run"]).first()
        if run is None:
            raise CommandError(f"--run: no training run is named {options['run']!r}")
        try:
            checkpoint = checkpoint_register(
                run=run, step=options["step"], config_path=options["config"], label=options["label"]
            )
        except CheckpointRefused as refused:
            raise CommandError(f"--{refused}") from refused
        except ValueError as refused:  # ConfigError names the file and its field; OutOfRange the step
            raise CommandError(str(refused)) from refused
        generator = checkpoint.generator
        self.stdout.write(
            f"run {run.name}: checkpoint {checkpoint.name} is {generator.model} ({generator.generator_id})"
        )
