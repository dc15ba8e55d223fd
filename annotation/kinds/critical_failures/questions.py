"""A critical-failures study's categorical question for Dawid-Skene (annotation/base/beyond_majority.py): does
the L2 have a critical failure, per generation, from each annotator's verdict (attention checks left out, as
for alpha)."""

from __future__ import annotations

from collections.abc import Hashable

from django.urls import reverse

from annotation.base.beyond_majority import CategoricalQuestion, UnitRef
from annotation.base.models import Annotation, Study
from h2e_site.stats.dawid_skene import CrowdLabel

FAILURE = "failure"
NO_FAILURE = "no failure"


def has_failure_question(study: Study) -> CategoricalQuestion:
    rows = (
        Annotation.objects.filter(study=study, has_failure__isnull=False)
        .not_attention_checks()
        .order_by("pk")
        .values_list(
            "item__generation_id",
            "participant__prolific_pid",
            "has_failure",
            "item__generation__procedure__goal",
        )
    )
    labels: list[CrowdLabel] = []
    units: dict[Hashable, UnitRef] = {}
    for generation_id, pid, has_failure, goal in rows:
        labels.append(CrowdLabel(generation_id, pid, FAILURE if has_failure else NO_FAILURE))
        units[generation_id] = UnitRef(goal, reverse("failures:generation_detail", args=[generation_id]))
    return CategoricalQuestion("has_failure", "Does L2 have a critical failure?", labels, units)


def has_failure_labels(study: Study) -> list[CrowdLabel]:
    """The labels of has_failure_question() alone (no goal, no link per unit): what the adjudication queue
    fits Dawid-Skene on, read in one query without the join to the procedures."""
    rows = (
        Annotation.objects.filter(study=study, has_failure__isnull=False)
        .not_attention_checks()
        .order_by("pk")
        .values_list("item__generation_id", "participant__prolific_pid", "has_failure")
    )
    return [CrowdLabel(g, pid, FAILURE if has_failure else NO_FAILURE) for g, pid, has_failure in rows]
