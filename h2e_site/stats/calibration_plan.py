"""The budget planner's closed forms (issue #20): how many human labels a calibrated How2Score needs for a
target half-width, for one generator or for the difference between two, the expected half-widths of a
setting (the paper's), and the minimum detectable difference at the labels collected. The estimator they
plan for is h2e_site/stats/calibration.py's PPI++ mean; its variance at n human labels and N judge labels, for
binary labels with var_Y, var_f and cov(Y, f), is

    se(n)^2 = lam^2 var_f / N + (var_Y - 2 lam cov + lam^2 var_f) / n,   lam = cov / ((1 + n/N) var_f)

(clipped to [0, 1]). Tested against simulation in tests/judging/test_calibration.py.

**Weights.** Labels drawn with unequal inclusion probabilities pi_i are estimated with weights w_i = 1 / pi_i
(h2e_site/stats/calibration.py: se^2 = lam^2 var(f~) / N + var(w~ (Y - lam f)) / n, w~ = w / mean(w)), so a
plan read from such labels takes the same design variance: var_Y, var_f and cov are those of the weighted
terms w~ Y and w~ f, var(f~) the weighted (Hajek) variance of f, and lam(n) = cov / (var_f + n var(f~) / N).
It assumes the further labels come with the same spread of weights. It can need more labels than a uniform
sample (about n / n_eff, Kish's n_eff = (sum w)^2 / sum w^2, when the weights are unrelated to the labels) or
fewer (where the heavy weights fall on labels that vary little). With equal weights it is the formula above.

**Agreement.** Two binary labels with shares p_Y and p_f of 1 agree on a share of items between
|p_Y + p_f - 1| (as opposed as the shares allow) and 1 - |p_Y - p_f| (as alike): agreement_range. The interval
is 2 min(p_Y, 1 - p_Y, p_f, 1 - p_f) wide, a point when either share is 0 or 1: a label with one value agrees
with the other exactly where the other takes that value, so the agreement is no assumption then, and the
covariance is 0 (a constant judge carries nothing: lam = 0, the human-only plan). default_agreement derives
an agreement inside the interval for any shares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from .calibration import (
    MIN_HUMAN_LABELS,
    CalibratedScore,
    Label,
    StratifiedScore,
    checked_labels,
    checked_weights,
    z_value,
)


@dataclass(frozen=True)
class LabelPlan:
    """How many human labels reach a target half-width (labels_needed)."""

    n_needed: int | None
    human_only_n: int | None
    half_width: float
    lam: float | None
    N: int
    within_N: bool
    undefined: str = ""


def agreement_range(human_share: float, judge_share: float) -> tuple[float, float]:
    """The lowest and highest agreement P(Y = f) of binary labels with these shares of 1 (module docstring):
    a point when either share is 0 or 1."""
    return abs(human_share + judge_share - 1), 1 - abs(human_share - judge_share)


def degenerate(share: float) -> bool:
    """A share of 0 or 1: every label one value (its variance is 0 and its agreement with another label is
    fixed by that label's share)."""
    return share <= 0 or share >= 1


def covariance_fraction(human_share: float, judge_share: float, agreement: float) -> float:
    """How far this agreement lies from that of independent labels (p_Y p_f + (1 - p_Y)(1 - p_f)) towards the
    highest the shares allow, as a fraction of that distance: the covariance as a share of its largest
    possible value (phi / phi_max). 0 for degenerate shares."""
    independent = human_share * judge_share + (1 - human_share) * (1 - judge_share)
    highest = agreement_range(human_share, judge_share)[1]
    return 0.0 if highest <= independent else (agreement - independent) / (highest - independent)


def default_agreement(human_share: float, judge_share: float, fraction: float) -> float:
    """The agreement whose covariance_fraction is `fraction` (in [0, 1]): between that of independent labels
    and the highest these shares allow, so always inside agreement_range (its point, for degenerate
    shares)."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"fraction: {fraction!r} is not in [0, 1]")
    independent = human_share * judge_share + (1 - human_share) * (1 - judge_share)
    return independent + fraction * (agreement_range(human_share, judge_share)[1] - independent)


def labels_needed(
    *,
    half_width: float,
    human_share: float,
    judge_share: float,
    agreement: float,
    N: int,
    alpha: float = 0.05,
) -> LabelPlan:
    """The smallest n whose PPI++ interval half-width z * se(n) is at most half_width, for a human share p_Y,
    a judge share p_f and the judge/human agreement a observed (all shares of "no critical failure").

    Closed form of the PPI++ variance at n (binary labels): var_Y = p_Y (1 - p_Y), var_f = p_f (1 - p_f),
    cov = P(Y=1, f=1) - p_Y p_f with P(Y=1, f=1) = (a + p_Y + p_f - 1) / 2, lam(n) = cov / ((1 + n/N) var_f)
    clipped to [0, 1], and se(n)^2 = lam^2 var_f / N + (var_Y - 2 lam cov + lam^2 var_f) / n; unclipped this
    is var_Y (1 - rho^2 N / (N + n)) / n, rho the correlation of Y and f. se(n) decreases in n, so the
    smallest n is found by bisection between 2 and the human-only n = ceil(z^2 var_Y / h^2). n_needed may
    exceed N (within_N False: the generator has too few examples for that width). Undefined when var_Y is 0
    (a human share of 0 or 1: nothing to estimate the variance from); ValueError for shares outside [0, 1]
    or an agreement outside agreement_range (not checked, and not used, when either share is 0 or 1: the
    module docstring's "Agreement")."""
    if half_width <= 0 or N < 1:
        raise ValueError(f"half_width must be > 0 and N >= 1, got {half_width!r}, {N!r}")
    moments = PlanMoments.from_shares(human_share=human_share, judge_share=judge_share, agreement=agreement)
    return _labels_needed(half_width, N, moments, alpha)


def _labels_needed(half_width: float, N: int, moments: PlanMoments, alpha: float) -> LabelPlan:
    if moments.var_y <= 0:
        reason = "undefined: the human labels have variance 0 (all one value)"
        return LabelPlan(None, None, half_width, None, N, False, reason)
    z = z_value(alpha)
    human_n = max(MIN_HUMAN_LABELS, math.ceil(z * z * moments.var_y / half_width**2))
    low, high = MIN_HUMAN_LABELS, human_n
    while low < high:
        mid = (low + high) // 2
        if z * math.sqrt(_plan_variance(mid, N, moments)[0]) <= half_width:
            high = mid
        else:
            low = mid + 1
    return LabelPlan(low, human_n, half_width, _plan_variance(low, N, moments)[1], N, low <= N)


def _moments(human_share: float, judge_share: float, agreement: float) -> tuple[float, float, float]:
    """var_Y, var_f and cov(Y, f) of binary labels with these shares and this agreement (labels_needed)."""
    for name, value in (("human_share", human_share), ("judge_share", judge_share), ("agreement", agreement)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name}: {value!r} is not in [0, 1]")
    var_y, var_f = human_share * (1 - human_share), judge_share * (1 - judge_share)
    if degenerate(human_share) or degenerate(judge_share):
        return var_y, var_f, 0.0  # the agreement is fixed by the shares and carries nothing
    low, high = agreement_range(human_share, judge_share)
    if not low - 1e-9 <= agreement <= high + 1e-9:
        raise ValueError(
            f"agreement {agreement!r} is impossible with shares {human_share!r}, {judge_share!r}: "
            f"it lies in [{low!r}, {high!r}]"
        )
    joint = (agreement + human_share + judge_share - 1) / 2
    return var_y, var_f, joint - human_share * judge_share


def _plan_variance(n: int, big_n: int, moments: PlanMoments) -> tuple[float, float]:
    """se(n)^2 and lam(n) (module docstring; with weights, var(f~) is moments.var_f_all)."""
    var_y, var_f, cov, var_all = moments.var_y, moments.var_f, moments.cov, moments.all_variance
    spread = (1 + n / big_n) * var_f if moments.var_f_all is None else var_f + n * var_all / big_n
    lam = min(1.0, max(0.0, cov / spread)) if spread > 0 and var_all > 0 else 0.0
    return lam * lam * var_all / big_n + (var_y - 2 * lam * cov + lam * lam * var_f) / n, lam


@dataclass(frozen=True)
class HalfWidths:
    """The expected 95 % half-widths at n human labels and N judge labels (expected_half_widths)."""

    calibrated: float
    human_only: float
    judge_only: float
    lam: float
    effective_n: float


def expected_half_widths(
    *, n: int, N: int, human_share: float, judge_share: float, agreement: float, alpha: float = 0.05
) -> HalfWidths:
    """What a page can show before any label is collected, e.g. the paper's setting (200 items, a judge at
    80.5 % agreement): the calibrated half-width z * se(n) of labels_needed's closed form, the human-only one
    z * sqrt(var_Y / n) and the judge-only one z * sqrt(var_f / N) (normal approximations; the judge-only one
    is about the judge's score, not the human one). Same checks as labels_needed; n >= 2, N >= 1."""
    if n < MIN_HUMAN_LABELS or N < 1:
        raise ValueError(f"need n >= {MIN_HUMAN_LABELS} and N >= 1, got {n!r}, {N!r}")
    var_y, var_f, cov = _moments(human_share, judge_share, agreement)
    variance, lam = _plan_variance(n, N, PlanMoments(var_y, var_f, cov))
    z = z_value(alpha)
    return HalfWidths(
        calibrated=z * math.sqrt(variance),
        human_only=z * math.sqrt(var_y / n),
        judge_only=z * math.sqrt(var_f / N),
        lam=lam,
        effective_n=var_y / variance if variance > 0 else float(n),
    )


def labels_needed_from(
    human: Sequence[Label],
    judge_labelled: Sequence[Label],
    *,
    N: int,
    half_width: float,
    alpha: float = 0.05,
    inclusion_probabilities: Sequence[float] | None = None,
) -> LabelPlan:
    """labels_needed with the variances and the covariance read from the paired labels already collected
    (divisor n; ties and imputed judge labels allowed; undefined with fewer than 2 of them). For binary labels
    these are the shares' and agreement's moments, so the two functions agree. inclusion_probabilities: the
    labels' known chances of being drawn (None: a uniform sample); their weights 1 / pi enter as the
    estimator's do (module docstring, "Weights")."""
    y, f = checked_labels(human, "human", "tie"), checked_labels(judge_labelled, "judge_labelled", "share")
    if len(y) != len(f):
        raise ValueError(f"{len(y)} human labels but {len(f)} judge labels on the same items")
    if half_width <= 0 or N < 1:
        raise ValueError(f"half_width must be > 0 and N >= 1, got {half_width!r}, {N!r}")
    if len(y) < MIN_HUMAN_LABELS:
        reason = f"undefined: {len(y)} human label(s), at least {MIN_HUMAN_LABELS} needed"
        return LabelPlan(None, None, half_width, None, N, False, reason)
    moments = PlanMoments.from_labels(y, f, inclusion_probabilities=inclusion_probabilities)
    return _labels_needed(half_width, N, moments, alpha)


@dataclass(frozen=True)
class Difference:
    """The minimum detectable difference between two independent calibrated scores."""

    minimum: float | None
    std_error: float | None
    undefined: str = ""


def minimum_detectable_difference(
    first: CalibratedScore | StratifiedScore,
    second: CalibratedScore | StratifiedScore,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
) -> Difference:
    """(z_{1 - alpha/2} + z_power) * sqrt(se_1^2 + se_2^2): the smallest true difference between two
    generators' human scores that a two-sided level-alpha z-test on their calibrated estimates (independent
    samples) detects with the given power at the labels collected so far. Undefined when either standard
    error is."""
    if first.std_error is None or second.std_error is None:
        return Difference(None, None, first.undefined or second.undefined)
    se = math.sqrt(first.std_error**2 + second.std_error**2)
    return Difference((z_value(alpha) + NormalDist().inv_cdf(power)) * se, se)


@dataclass(frozen=True)
class PlanMoments:
    """What the planner's closed form needs of one generator: var_Y, var_f, cov(Y, f) (labels_needed)."""

    var_y: float
    var_f: float
    cov: float
    var_f_all: float | None = None  # var(f~) where it differs from var_f (weighted labels); None: var_f

    @property
    def all_variance(self) -> float:
        return self.var_f if self.var_f_all is None else self.var_f_all

    @classmethod
    def from_shares(cls, *, human_share: float, judge_share: float, agreement: float) -> PlanMoments:
        """Binary labels with these shares of "no critical failure" and this judge/human agreement."""
        return cls(*_moments(human_share, judge_share, agreement))

    @classmethod
    def from_labels(
        cls,
        human: Sequence[Label],
        judge_labelled: Sequence[Label],
        *,
        inclusion_probabilities: Sequence[float] | None = None,
    ) -> PlanMoments:
        """The paired labels collected so far (divisor n, as labels_needed_from), weighted by 1 / pi where
        inclusion_probabilities are given (module docstring, "Weights": the moments of w~ Y and w~ f, and
        var(f~) the Hajek variance of f); ValueError with fewer than MIN_HUMAN_LABELS of them."""
        y, f = (
            checked_labels(human, "human", "tie"),
            checked_labels(judge_labelled, "judge_labelled", "share"),
        )
        if len(y) != len(f) or len(y) < MIN_HUMAN_LABELS:
            raise ValueError(f"need >= {MIN_HUMAN_LABELS} paired labels, got {len(y)} and {len(f)}")
        weights = (
            None if inclusion_probabilities is None else checked_weights(inclusion_probabilities, len(y))
        )
        if weights is None or len(set(weights)) == 1:
            return cls(_variance(y), _variance(f), _covariance(y, f))
        mean_w = sum(weights) / len(weights)
        y_w = [w / mean_w * v for w, v in zip(weights, y, strict=True)]
        f_w = [w / mean_w * v for w, v in zip(weights, f, strict=True)]
        hajek = sum(w * v for w, v in zip(weights, f, strict=True)) / sum(weights)
        f_all = sum(w * (v - hajek) ** 2 for w, v in zip(weights, f, strict=True)) / sum(weights)
        return cls(_variance(y_w), _variance(f_w), _covariance(y_w, f_w), f_all)


def _variance(values: Sequence[float]) -> float:
    return _covariance(values, values)


def _covariance(first: Sequence[float], second: Sequence[float]) -> float:
    """Divisor n."""
    mean_a, mean_b = sum(first) / len(first), sum(second) / len(second)
    return sum((a - mean_a) * (b - mean_b) for a, b in zip(first, second, strict=True)) / len(first)


@dataclass(frozen=True)
class DifferencePlan:
    """How many human labels per generator reach a target half-width of the difference between two
    generators' calibrated scores (labels_needed_for_difference)."""

    n_needed: int | None  # per generator
    human_only_n: int | None  # per generator, human labels alone
    half_width: float
    lams: tuple[float, float] | None
    within_N: bool
    undefined: str = ""


def difference_half_width(
    n: int, first: PlanMoments, second: PlanMoments, *, N_first: int, N_second: int, alpha: float = 0.05
) -> float:
    """z * sqrt(se_1(n)^2 + se_2(n)^2): the expected half-width of the difference of two independent
    calibrated scores with n human labels each (labels_needed's closed form for each se)."""
    first_var = _plan_variance(n, N_first, first)[0]
    second_var = _plan_variance(n, N_second, second)[0]
    return z_value(alpha) * math.sqrt(first_var + second_var)


def labels_needed_for_difference(
    *,
    half_width: float,
    first: PlanMoments,
    second: PlanMoments,
    N_first: int,
    N_second: int,
    alpha: float = 0.05,
) -> DifferencePlan:
    """The smallest n (the same for both generators) with difference_half_width(n) <= half_width, by
    bisection between 2 and the human-only n = ceil(z^2 (var_Y1 + var_Y2) / h^2) (the difference's
    half-width decreases in n as each se does). within_N: n fits in both generators' examples. Undefined
    when both generators' human labels have variance 0."""
    if half_width <= 0 or N_first < 1 or N_second < 1:
        raise ValueError(f"half_width must be > 0 and N >= 1, got {half_width!r}, {N_first!r}, {N_second!r}")
    if first.var_y <= 0 and second.var_y <= 0:
        reason = "undefined: both generators' human labels have variance 0 (all one value)"
        return DifferencePlan(None, None, half_width, None, False, reason)
    z = z_value(alpha)
    human_n = max(MIN_HUMAN_LABELS, math.ceil(z * z * (first.var_y + second.var_y) / half_width**2))
    low, high = MIN_HUMAN_LABELS, human_n
    while low < high:
        mid = (low + high) // 2
        if difference_half_width(mid, first, second, N_first=N_first, N_second=N_second, alpha=alpha) <= (
            half_width
        ):
            high = mid
        else:
            low = mid + 1
    lams = (_plan_variance(low, N_first, first)[1], _plan_variance(low, N_second, second)[1])
    return DifferencePlan(low, human_n, half_width, lams, low <= min(N_first, N_second))
