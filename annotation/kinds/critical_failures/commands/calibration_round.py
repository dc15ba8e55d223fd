"""python manage.py calibration_round SLUG --size N [--judge ID ...] [--design D] [--seed S]: a calibration
study's next round (annotation/kinds/critical_failures/calibration/sample.py)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from annotation.base.models import Study
from annotation.kinds.critical_failures.calibration.sample import ROUND_STEPS, RoundRequest, next_round
from annotation.kinds.critical_failures.models import CalibrationDesign
from judging.models import Judge


class Command(BaseCommand):
    help = (
        "Draw the next round of a calibration study over its frame: every generation's inclusion "
        "probability from the judges' verdicts only, and an item for each generation drawn that the study "
        "has no item of yet."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the calibration study's slug")
        parser.add_argument("--size", type=int, required=True, help="examples the round draws (n)")
        parser.add_argument(
            "--judge",
            action="append",
            default=None,
            metavar="ID",
            help="judge_id or database id (repeatable); default: the study's judges",
        )
        parser.add_argument(
            "--design",
            choices=CalibrationDesign.values,
            default=None,
            help="default: disagreement when the study has judges, else uniform",
        )
        parser.add_argument("--seed", type=int, default=None, help="default: a random seed (stored)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        study = Study.objects.filter(slug=options["slug"]).first()
        if study is None:
            raise CommandError(f"slug {options['slug']}: no study with this slug")
        judges = _judge_pks(options["judge"]) if options["judge"] is not None else None
        request = RoundRequest(options["size"], options["design"], judges, options["seed"])
        with tqdm(total=ROUND_STEPS, desc="round", unit="step", disable=options["no_progress"]) as bar:
            try:
                drawn = next_round(study=study, request=request, on_progress=bar.update)
            except ValidationError as refused:
                raise CommandError(_message(refused)) from None
        self.stdout.write(
            f"Round {drawn.number} of {study.slug} ({drawn.design}, seed {drawn.seed}): {drawn.size} drawn, "
            f"{drawn.new_items} new item(s)."
        )


def _message(refused: ValidationError) -> str:
    names = {"judge_ids": "--judge", "size": "--size", "design": "--design", "seed": "--seed"}
    return "; ".join(
        f"{names.get(field, field)}: {' '.join(errors)}" for field, errors in refused.message_dict.items()
    )


def _judge_pks(values: list[str]) -> list[int]:
    pks = []
    for value in values:
        judge = Judge.objects.filter(judge_id=value).first()
        if judge is None and value.isascii() and value.isdigit() and len(value) < 19:
            judge = Judge.objects.filter(pk=int(value)).first()
        if judge is None:
            raise CommandError(f"--judge {value}: no judge with this judge_id or id")
        pks.append(judge.pk)
    return pks
