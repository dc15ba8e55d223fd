"""The judge's bias against people on the calibration samples (issue #20): the (weighted) mean of the judge's
label minus the human majority's, with its normal interval, split into missed failures and false alarms
(the judge's report card shows it; h2e_site/stats/calibration.py has the labels' rules).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from h2e_site.stats import wilson_interval

from .calibration import MIN_HUMAN_LABELS, ZERO_VARIANCE, Label, checked_labels, checked_weights, z_value

# --- the judge's bias against people ---------------------------------------------------------------------


@dataclass(frozen=True)
class MeanDifference:
    """The (weighted) mean of the judge's label minus the human label, with its normal interval."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    std_error: float | None
    n: int
    weighted: bool = False
    undefined: str = ""


def _normalised(weights: Sequence[float]) -> list[float]:
    mean = sum(weights) / len(weights)
    return [w / mean for w in weights]


def _weighted_mean(values: Sequence[float], weights: Sequence[float] | None) -> tuple[float, float]:
    """The Hajek mean sum w x / sum w and its standard error sqrt(var(w~ x) / n), w~ the weights normalised
    to mean 1 and var with divisor n (the weighted terms' variance, as ppi_arrays computes the rectifier's);
    without weights, the mean and sqrt(var(x) / n)."""
    n = len(values)
    w = _normalised(weights) if weights is not None else [1.0] * n
    terms = [wi * x for wi, x in zip(w, values, strict=True)]
    mean = sum(terms) / n
    variance = sum((t - mean) ** 2 for t in terms) / n
    return mean, math.sqrt(variance / n)


def weighted_mean_difference(
    judge: Sequence[Label],
    human: Sequence[Label],
    *,
    inclusion_probabilities: Sequence[float] | None = None,
    alpha: float = 0.05,
) -> MeanDifference:
    """The judge's bias on labelled items: the mean of d_i = f_i - Y_i (f the judge's label, Y the human
    majority, 0.5 for a tie), weighted by 1 / pi_i when inclusion probabilities are given (the Hajek mean),
    with its (1 - alpha) normal interval (se as _weighted_mean). Positive: the judge passes more than people
    do. Undefined below MIN_HUMAN_LABELS items; its interval undefined when the variance is 0."""
    f = checked_labels(judge, "judge", "share")
    y = checked_labels(human, "human", "tie")
    if len(f) != len(y):
        raise ValueError(f"{len(f)} judge labels but {len(y)} human labels on the same items")
    weighted = inclusion_probabilities is not None
    w = checked_weights(inclusion_probabilities, len(y)) if inclusion_probabilities is not None else None
    if len(y) < MIN_HUMAN_LABELS:
        reason = f"undefined: {len(y)} labelled item(s), at least {MIN_HUMAN_LABELS} needed"
        return MeanDifference(None, None, None, None, len(y), weighted, reason)
    estimate, se = _weighted_mean([a - b for a, b in zip(f, y, strict=True)], w)
    if se * se <= ZERO_VARIANCE:
        reason = "interval undefined: the estimated variance is 0 (every difference one value)"
        return MeanDifference(estimate, None, None, None, len(y), weighted, reason)
    z = z_value(alpha)
    return MeanDifference(estimate, estimate - z * se, estimate + z * se, se, len(y), weighted)


@dataclass(frozen=True)
class ClassShare:
    """Within one class of the human majority, the (weighted) share of items the judge labels the other way,
    and its signed contribution to the bias (the class's weighted share of all items x this share)."""

    k: int  # items the judge labels the other way
    n: int  # items of the class
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    contribution: float | None
    weighted: bool = False


@dataclass(frozen=True)
class JudgeBias:
    """judge_bias' result: overall = missed.contribution + false_alarms.contribution + ties_contribution."""

    overall: MeanDifference
    missed: ClassShare  # humans: a critical failure; the judge passes it (f = 1): contribution >= 0
    false_alarms: ClassShare  # humans: none; the judge fails it (f = 0): contribution <= 0
    n_ties: int
    ties_contribution: float | None  # sum over ties of w (f - 0.5) / sum w


def _class_share(
    events: list[bool], weights: list[float] | None, share_of_all: float, sign: float, z: float
) -> ClassShare:
    n, k = len(events), sum(events)
    if n == 0:
        return ClassShare(0, 0, None, None, None, None, weights is not None)
    if weights is None:
        low, high = wilson_interval(k, n, z=z) or (None, None)
        rate = k / n
    else:
        rate, se = _weighted_mean([float(e) for e in events], weights)
        low, high = (rate - z * se, rate + z * se) if se * se > ZERO_VARIANCE else (None, None)
    return ClassShare(k, n, rate, low, high, sign * share_of_all * rate, weights is not None)


def judge_bias(
    judge: Sequence[Label],
    human: Sequence[Label],
    *,
    inclusion_probabilities: Sequence[float] | None = None,
    alpha: float = 0.05,
) -> JudgeBias:
    """The bias (weighted_mean_difference) and its decomposition by the human majority's class: among items
    with a critical failure (Y = 0), the share the judge passes (missed failures, contribution +W_0 x share);
    among items with none (Y = 1), the share it fails (false alarms, contribution -W_1 x share); tied items
    contribute sum w (f - 0.5) / sum w. W_c is the class's weighted share of the items. Shares: k of n with a
    Wilson interval, or with weights the Hajek share with its normal interval. Judge labels 0 or 1."""
    f = checked_labels(judge, "judge")
    y = checked_labels(human, "human", "tie")
    overall = weighted_mean_difference(f, y, inclusion_probabilities=inclusion_probabilities, alpha=alpha)
    w = (
        [1.0] * len(y)
        if inclusion_probabilities is None
        else checked_weights(inclusion_probabilities, len(y))
    )
    total = sum(w) or 1.0
    z = z_value(alpha)

    def part(label: float, event: float, sign: float) -> ClassShare:
        members = [i for i, v in enumerate(y) if v == label]
        weights = None if inclusion_probabilities is None else [w[i] for i in members]
        share = sum(w[i] for i in members) / total
        return _class_share([f[i] == event for i in members], weights, share, sign, z)

    ties = [i for i, v in enumerate(y) if v == 0.5]
    ties_contribution = sum(w[i] * (f[i] - 0.5) for i in ties) / total if y else None
    return JudgeBias(overall, part(0.0, 1.0, 1.0), part(1.0, 0.0, -1.0), len(ties), ties_contribution)
