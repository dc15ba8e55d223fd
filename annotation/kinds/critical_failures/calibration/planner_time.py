"""The planner's time and money: minutes per item (the study's annotations, else its estimate, else the
model's default) and the cost of the hours at a rate with the platform's fee (planner.py uses them)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from django.db.models import Field
from django.db.models.functions import Coalesce

from annotation.base.models import Annotation, Study


@dataclass(frozen=True)
class Timing:
    minutes_per_item: float
    source: str
    n_annotations: int


def cost(hours: float, hourly_rate: float, fee_percent: float) -> float:
    """Annotator hours x the hourly rate x (1 + fee % / 100)."""
    return hours * hourly_rate * (1 + fee_percent / 100)


def minutes_per_item(study: Study | None) -> Timing:
    """The median of the study's annotations' active seconds (elapsed where none) / 60 (module docstring)."""
    if study is None:
        default = float(study_default("estimated_item_minutes"))
        return Timing(default, "the default estimate (no calibration study yet)", 0)
    seconds = list(
        Annotation.objects.filter(study=study, item__is_attention_check=False)
        .annotate(seconds=Coalesce("active_seconds", "elapsed_seconds"))
        .values_list("seconds", flat=True)
    )
    if not seconds:
        return Timing(study.estimated_item_minutes, f"study {study.slug}'s estimate (no annotation yet)", 0)
    median = statistics.median(seconds) / 60
    return Timing(median, f"the median time of study {study.slug}'s {len(seconds)} annotations", len(seconds))


def study_default(name: str) -> Any:
    """The Study model's default of a field (annotators_per_item, items_per_participant, ...)."""
    model_field = Study._meta.get_field(name)
    assert isinstance(model_field, Field)
    return model_field.get_default()
