"""Statistics, pure and model-free, below every app (no Django, no app imported): goal_step (the task sets'
artifact check and model accuracy), judging (How2Score, kappa, pairwise figures) and annotation (agreement,
calibration) use one formula each. This module holds what every figure rests on; the package's modules:

- agreement: Cohen's kappa (one, over nominal labels), Gwet's AC1, Krippendorff's nominal alpha (one), the
  average pairwise kappa;
- verdicts: agreement on critical-failure verdicts (alphas, majorities, leave-one-out, a judge against the
  human majority);
- dawid_skene: Dawid and Skene's estimate of annotators' confusions and units' true labels;
- rankings: Kendall's tau-b of many rankings, Holm's adjustment, the Bradley-Terry fit and its bootstrap;
- classification: precision, recall and F1 of predictions against gold, and their macro mean;
- calibration, calibration_plan, calibration_bias, sampling: the human-calibrated How2Score (PPI++), the
  labels a target width needs, a judge's bias by class, and the sampling designs of calibration rounds.

numpy, scipy and krippendorff are imported inside the functions that compute with them (start-up stays light,
tests/test_startup.py).

- `Share`: k of n with its Wilson interval; the Wilson score interval of a proportion.
- THE rule for when a chance-corrected agreement coefficient (Cohen's kappa, Gwet's AC1, Krippendorff's
  alpha) is undefined. Each is (observed agreement - chance agreement) / (1 - chance agreement) over the
  items it rests on (the items both raters labelled; for alpha, the items with two labels or more). It is
  **undefined** when it rests on fewer than MIN_AGREEMENT_ITEMS items (on one item kappa is 0 when the two
  labels differ and 0 / 0 when they agree: one item says nothing about chance), or when its chance
  agreement is 1 (every label the same value: 0 / 0). An undefined coefficient is None in Python, null in
  the API and an empty cell in a CSV, and "—" on a page with the reason as its tooltip (agreement_undefined
  says which condition holds).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MIN_AGREEMENT_ITEMS",
    "Coefficient",
    "Share",
    "agreement_undefined",
    "chance_corrected",
    "nominal_chance_agreement",
    "wilson_interval",
]

MIN_AGREEMENT_ITEMS = 2
_ONE = 1 - 1e-12  # a chance agreement this close to 1 is 1 (floating-point sums of shares)


def wilson_interval(successes: float, n: int, *, z: float = 1.959964) -> tuple[float, float] | None:
    """The Wilson score 95 % interval of a proportion (None when n is 0)."""
    if n == 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Share:
    """k of n, with its 95 % Wilson interval (rate and interval None when n is 0, `undefined` then saying why
    when the caller knows: "undefined: no decisive answer", ...)."""

    k: int
    n: int
    undefined: str = ""

    @property
    def rate(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.k, self.n)

    @property
    def ci_low(self) -> float | None:
        return self.interval[0] if self.interval else None

    @property
    def ci_high(self) -> float | None:
        return self.interval[1] if self.interval else None

    def as_json(self) -> dict[str, Any]:
        return {"k": self.k, "n": self.n, "rate": self.rate, "ci_low": self.ci_low, "ci_high": self.ci_high}


@dataclass(frozen=True)
class Coefficient:
    """A chance-corrected agreement coefficient over n items: its value, or None and why (`undefined`)."""

    value: float | None
    n: int
    undefined: str = ""


def agreement_undefined(n: int, chance: float | None) -> str:
    """Why a chance-corrected coefficient over n items with this chance agreement is undefined ("" when it is
    defined). The one rule of every kappa, AC1 and alpha the project shows (module docstring)."""
    if n < MIN_AGREEMENT_ITEMS:
        items = "no item" if n == 0 else f"only {n} item"
        return f"undefined: {items} to compare (at least {MIN_AGREEMENT_ITEMS} needed)"
    if chance is None or chance >= _ONE:
        return f"undefined: all {n} items have one and the same label, so chance agreement is 1"
    return ""


def chance_corrected(observed: float, chance: float, n: int) -> Coefficient:
    """(observed - chance) / (1 - chance) over n items, or undefined by agreement_undefined."""
    why = agreement_undefined(n, chance)
    if why:
        return Coefficient(None, n, why)
    return Coefficient((observed - chance) / (1 - chance), n)


def nominal_chance_agreement(value_counts: Iterable[float]) -> float | None:
    """Krippendorff's expected agreement of nominal values from how often each value is among the pairable
    labels: sum_c n_c (n_c - 1) / (n (n - 1)) (1 - D_e); None with fewer than two labels. It is 1 exactly
    when every label has the same value."""
    counts = [c for c in value_counts if c]
    n = sum(counts)
    if n < 2:
        return None
    return sum(c * (c - 1) for c in counts) / (n * (n - 1))
