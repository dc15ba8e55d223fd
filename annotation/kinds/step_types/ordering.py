"""Whether a procedure's order matters, from the step-types studies' labels (#14: Step Ordering examples are
built from ordered procedures only). Registered as goal_step.human_labels' `ordered`
(annotation's AppConfig.ready()), which the goal-step builder reads for procedures whose `Procedure.ordered`
is empty.

A procedure is **ordered** when the human majority (measures.majority_labels: a strict majority of its
labels) says at least one of its adjacent pairs is SEQUENTIAL; **not ordered** when every adjacent pair has a
majority and none holds; unknown (left out) otherwise. Labels of attention-check items do not count.
"""

from __future__ import annotations

from collections import defaultdict

from annotation.kinds.step_types.candidates import StepType, candidates
from annotation.kinds.step_types.measures import StepTypeLabel, majority_labels
from annotation.kinds.step_types.models import StepTypeLabel as StoredLabel


def ordered_from_step_types(procedure_pks: list[int]) -> dict[int, bool]:
    """procedure pk -> ordered, for the procedures the step-types studies decided (one query)."""
    rows = StoredLabel.objects.filter(
        candidate__procedure_id__in=procedure_pks,
        candidate__step_type=StepType.SEQUENTIAL.value,
        annotation__isnull=False,
        annotation__item__is_attention_check=False,
    ).values_list(
        "candidate__procedure_id", "candidate__key", "annotator", "holds", "candidate__procedure__steps"
    )
    labels: dict[int, list[StepTypeLabel]] = defaultdict(list)
    n_steps: dict[int, int] = {}
    for procedure_pk, key, annotator, holds, steps in rows:
        labels[procedure_pk].append(StepTypeLabel(str(procedure_pk), annotator, key, holds))
        n_steps[procedure_pk] = len(steps)
    return {
        pk: decided for pk, given in labels.items() if (decided := _ordered(given, n_steps[pk])) is not None
    }


def _ordered(labels: list[StepTypeLabel], n_steps: int) -> bool | None:
    majorities = majority_labels(labels)
    if any(m.holds for m in majorities.values()):
        return True
    pairs = {c.key for c in candidates(n_steps) if c.step_type is StepType.SEQUENTIAL}
    decided = {key for (_, key), m in majorities.items() if m.holds is not None}
    return False if pairs <= decided else None


__all__ = ["ordered_from_step_types"]
