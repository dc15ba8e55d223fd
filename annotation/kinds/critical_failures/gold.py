"""A critical-failures item's gold, as its GoldEvent's verdict stores it
(annotation/kinds/critical_failures/gold_events.py has the events):

    {"has_failure": true, "failures": [{"description": "...", "l1_steps": [3], "l2_steps": [2, 4]}]}

with "failures" empty when "has_failure" is false. A gold verdict obeys the annotators' own rules (a verdict,
each failure described and linked to L1 and/or L2 steps that exist: kinds.critical_failures.check_answer),
because the reviewer sets it with the annotators' form. The report card and the calibrated score read the
verdict by generation (`gold_by_generation`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from annotation.base.models import Study, StudyItem
from annotation.kinds.critical_failures.gold_events import gold_as_of
from annotation.kinds.critical_failures.posted import FailureInput, Submission


@dataclass(frozen=True)
class GoldFailure:
    description: str
    l1_steps: list[int]
    l2_steps: list[int]


@dataclass(frozen=True)
class CriticalGold:
    """An item's gold: whether the L2 has a critical failure and, if so, which."""

    has_failure: bool
    failures: list[GoldFailure]

    def as_json(self) -> dict[str, Any]:
        return {
            "has_failure": self.has_failure,
            "failures": [
                {"description": f.description, "l1_steps": f.l1_steps, "l2_steps": f.l2_steps}
                for f in self.failures
            ],
        }


def gold_from_submission(submission: Submission) -> CriticalGold:
    """The gold the reviewer's form says (checked with the kind's check_answer before)."""
    has_failure = bool(submission.has_failure)
    failures = [_failure(f) for f in submission.failures] if has_failure else []
    return CriticalGold(has_failure, failures)


def _failure(failure: FailureInput) -> GoldFailure:
    return GoldFailure(failure.description.strip(), sorted(failure.l1_steps), sorted(failure.l2_steps))


def gold_from_json(verdict: Any) -> CriticalGold | None:
    """The stored verdict read back; None for a cleared gold (or a verdict of another kind's shape)."""
    if not isinstance(verdict, dict) or not isinstance(verdict.get("has_failure"), bool):
        return None
    failures = [
        GoldFailure(str(f.get("description", "")), list(f.get("l1_steps", [])), list(f.get("l2_steps", [])))
        for f in verdict.get("failures", [])
        if isinstance(f, dict)
    ]
    return CriticalGold(verdict["has_failure"], failures)


def gold_items(study: Study, at: datetime | None = None) -> dict[int, CriticalGold]:
    """Item id -> its gold as of `at` (now when None)."""
    result = {}
    for item_id, verdict in gold_as_of(study, at).items():
        gold = gold_from_json(verdict)
        if gold is not None:
            result[item_id] = gold
    return result


def gold_by_generation(study: Study, at: datetime | None = None) -> dict[int, bool]:
    """Generation id -> whether its gold says it has a critical failure, on the study's regular items."""
    golds = gold_items(study, at)
    rows = StudyItem.objects.filter(pk__in=list(golds), is_attention_check=False).values_list(
        "pk", "generation_id"
    )
    return {generation: golds[item].has_failure for item, generation in rows if generation is not None}


__all__ = [
    "CriticalGold",
    "GoldFailure",
    "gold_by_generation",
    "gold_from_json",
    "gold_from_submission",
    "gold_items",
]
