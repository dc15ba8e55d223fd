"""A pairwise study's categorical question for Dawid-Skene (annotation/base/beyond_majority.py): the outcome
of
each pair in its own orientation (A: the generator whose id sorts first), as for the humans' alpha; attention
checks left out."""

from __future__ import annotations

from collections.abc import Hashable

from annotation.base.beyond_majority import CategoricalQuestion, UnitRef
from annotation.base.models import Annotation, Study
from annotation.kinds.pairwise.comparisons import A_BETTER, B_BETTER, TIE_FAIL, TIE_NONE
from annotation.kinds.pairwise.data import canonical_outcome
from h2e_site.stats.dawid_skene import CrowdLabel

OUTCOME_NAMES = {
    A_BETTER: "A better",
    B_BETTER: "B better",
    TIE_NONE: "tie: neither fails",
    TIE_FAIL: "tie: both fail",
}


def outcome_question(study: Study) -> CategoricalQuestion:
    rows = (
        Annotation.objects.filter(study=study, item__is_attention_check=False)
        .order_by("pk")
        .values_list(
            "item_id",
            "participant__prolific_pid",
            "answer",
            "item__pair__generation_a__procedure__goal",
            "item__pair__generation_a__generator__generator_id",
            "item__pair__generation_b__generator__generator_id",
        )
    )
    labels: list[CrowdLabel] = []
    units: dict[Hashable, UnitRef] = {}
    for item_id, pid, answer, goal, generator_a, generator_b in rows:
        outcome = canonical_outcome(answer["verdict"], answer.get("left", "a"))
        labels.append(CrowdLabel(item_id, pid, OUTCOME_NAMES[outcome]))
        units[item_id] = UnitRef(f"{goal} (A {generator_a}, B {generator_b})")
    return CategoricalQuestion("outcome", "Which L2 has fewer critical failures?", labels, units)
