"""Predictions scored against gold labels, positive class "it holds": precision, recall and F1 of one set of
predictions (`Scores`), and the macro mean of several (`macro_f1`: each class or type weighing the same; the
SIO paper's Table 3 "All", annotation/step_types/measures.py)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["MacroScores", "Scores", "macro_f1", "scores"]

K = TypeVar("K", bound=Hashable)  # a class or a type


@dataclass(frozen=True)
class Scores:
    """A confusion of predictions against gold, positive class "it holds". P = tp / (tp + fp),
    R = tp / (tp + fn), F1 = 2PR / (P + R); each 0.0 when its denominator is 0 (as the paper's Table 9)."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True)
class MacroScores:
    """Table 3's "All": the unweighted means of the per-type P, R and F1 over `types` types (classes)."""

    precision: float
    recall: float
    f1: float
    types: int


def scores(pairs: Iterable[tuple[bool, bool]]) -> Scores:
    """The confusion of (predicted, gold) pairs."""
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for predicted, gold in pairs:
        counts[(bool(predicted), bool(gold))] += 1
    return Scores(
        tp=counts[True, True], fp=counts[True, False], fn=counts[False, True], tn=counts[False, False]
    )


def macro_f1(per_type: Mapping[K, Scores]) -> MacroScores:
    """Table 3's "All": mean P, mean R and mean F1 over the types with at least one instance (macro over
    types, each type weighing the same; F1_All is the mean of the F1s, not the F1 of P_All and R_All). Checked
    against all twelve rows of Table 3, e.g. LLAMA-3.1-70B: (87.4 + 40.4 + 38.2) / 3 = 55.3."""
    present = [s for s in per_type.values() if s.n]
    if not present:
        return MacroScores(0.0, 0.0, 0.0, 0)
    k = len(present)
    return MacroScores(
        sum(s.precision for s in present) / k,
        sum(s.recall for s in present) / k,
        sum(s.f1 for s in present) / k,
        k,
    )
