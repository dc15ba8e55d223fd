"""A study's Dawid-Skene estimates beside its majority, for every kind with categorical labels.

A kind says what its categorical questions are (`StudyKindSpec.categorical_questions`: a verdict per
item, a label per candidate, a choice per task, an outcome per compared pair), each as plain (unit,
annotator, label) records with a reference to each unit for the page; this module fits
h2e_site/stats/dawid_skene.py on each and gives the page and the API the same figures.
Attention-check items are never part of them (each kind leaves them out, as for alpha).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from h2e_site.stats.dawid_skene import CrowdLabel, DawidSkene, UnitEstimate, dawid_skene

if TYPE_CHECKING:
    pass

MAX_DIFFERENCES_SHOWN = 100  # the page lists this many items where the estimates differ; the JSON all


@dataclass(frozen=True)
class UnitRef:
    """How the page names a unit, and the page it links to ("" when the unit has none)."""

    text: str
    url: str = ""


@dataclass(frozen=True)
class CategoricalQuestion:
    """One question every unit is given one class on, by several annotators."""

    key: str
    title: str
    labels: list[CrowdLabel]
    units: dict[Hashable, UnitRef]


@dataclass(frozen=True)
class Difference:
    estimate: UnitEstimate
    ref: UnitRef


@dataclass(frozen=True)
class QuestionEstimate:
    question: CategoricalQuestion
    fit: DawidSkene

    @property
    def priors(self) -> list[tuple[str, float]]:
        return list(zip(self.fit.classes, self.fit.priors, strict=True))

    @property
    def differences(self) -> list[Difference]:
        refs = self.question.units
        return [Difference(e, refs.get(e.unit, UnitRef(str(e.unit)))) for e in self.fit.differences]

    @property
    def differences_shown(self) -> list[Difference]:
        return self.differences[:MAX_DIFFERENCES_SHOWN]

    @property
    def n_disagree(self) -> int:
        """Units whose majority exists and differs from the Dawid-Skene label."""
        return sum(e.majority is not None for e in self.fit.differences)

    @property
    def n_no_majority(self) -> int:
        return sum(e.majority is None for e in self.fit.units)

    def as_json(self) -> dict[str, Any]:
        refs = self.question.units
        return {
            "question": self.question.key,
            "title": self.question.title,
            "classes": list(self.fit.classes),
            "priors": dict(self.priors),
            "iterations": self.fit.iterations,
            "n_items": len(self.fit.units),
            "n_labels": self.fit.n_labels,
            "annotators": [a.as_json() for a in self.fit.annotators],
            "items": [_unit_json(e, refs.get(e.unit)) for e in self.fit.units],
            "differences": [str(e.unit) for e in self.fit.differences],
        }


def _unit_json(estimate: UnitEstimate, ref: UnitRef | None) -> dict[str, Any]:
    return {
        "item": str(estimate.unit),
        "name": ref.text if ref else str(estimate.unit),
        "dawid_skene": estimate.label,
        "posterior": estimate.posterior,
        "majority": estimate.majority,
        "votes": dict(estimate.votes),
    }


def question_estimates(questions: list[CategoricalQuestion]) -> list[QuestionEstimate]:
    """Dawid-Skene fitted on each question that has labels."""
    return [QuestionEstimate(q, dawid_skene(q.labels)) for q in questions if q.labels]


def beyond_majority_json(estimates: list[QuestionEstimate]) -> list[dict[str, Any]]:
    return [estimate.as_json() for estimate in estimates]
