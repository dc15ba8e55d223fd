"""The human-calibrated How2Score (the statistical core of issue #20): prediction-powered inference of the
share of examples the human majority finds no critical failure in, from n human-labelled items and the
judge's labels on the generator's examples.

Notation: Y_i in {0, 1} is the human label of labelled item i (1 = no critical failure), f_i the judge's label
on the same item, and f~_j (j = 1..N) the judge's labels on the generator's examples (all N of them, or the N
not labelled by people: PPI treats them as a sample of the same population; with n << N the two are the same).

- **PPI++ estimate** (Angelopoulos, Duchi & Zrnic 2023, "PPI++", the mean case)::

      theta(lam) = lam * mean_j(f~_j) + mean_i(Y_i - lam * f_i)

  with its normal (CLT) 95 % interval theta +- z * se, z = 1.95996 and::

      se^2 = var(lam * f~) / N + var(Y - lam * f) / n      (variances with divisor N and n)

  **lam** is power-tuned to minimise se^2: lam = cov(Y, f) / ((1 + n / N) * var(f, f~)), cov with divisor n
  over the labelled items, var(f, f~) the sample variance (divisor n + N - 1) of the n + N judge labels,
  clipped to [0, 1]; a judge whose labels are all one value carries nothing, so its lam is 0. lam = 1 is the
  classical PPI estimate, lam = 0 the human-only mean. These are exactly ppi-python's `ppi_mean_pointestimate`
  / `ppi_mean_ci` (tests/judging/test_calibration.py checks it); the closed form is computed here with numpy
  so that the app does not carry ppi-python's numba / scikit-learn / gdown at run time.
- **Weights** (a labelled sample drawn with known, unequal inclusion probabilities pi_i, e.g. stratified by
  topic or over-sampling where judges disagree): w_i = 1 / pi_i, normalised to mean 1 over the labelled items
  (w~_i = n * w_i / sum w), and the rectifier becomes the Hajek (ratio) mean of the inverse-probability
  weighted differences::

      theta(lam) = lam * mean_j(f~_j) + sum_i w_i (Y_i - lam f_i) / sum_i w_i
      se^2       = var(lam * f~) / N + var(w~ * (Y - lam f)) / n

  (the with-replacement, Hansen-Hurwitz variance of the weighted terms, as ppi-python computes it with `w=`;
  lam is tuned on the weighted gradients w~ (Y - theta_1), w~ (f - theta_1), theta_1 the lam = 1 estimate).
- **Effective number of human labels**: n * se_0^2 / se_lam^2, se_0 the human-only (lam = 0) standard error
  on the same items: how many human labels alone would give the interval the judge's labels help reach.
- **Human-only score**: the share of the n human labels with its Wilson interval (unweighted samples); with
  weights, the Hajek mean with its normal interval (lam = 0).
- **Topic-stratified estimate**: theta = sum_h W_h theta_h, se^2 = sum_h W_h^2 se_h^2, W_h = N_h / N the
  stratum's share of the judge-labelled examples, each theta_h its own PPI++ estimate (own lam).

- **The judge's bias** (judge - human) on labelled items: the Hajek mean of d_i = f_i - Y_i with weights
  1 / pi_i (unweighted for a uniform sample), se^2 = var(w~ d) / n as the weighted rectifier's, and its normal
  interval (`weighted_mean_difference`). By the human majority's class (`judge_bias`): missed failures (the
  share of Y = 0 items the judge passes, contributing +W_0 x share), false alarms (the share of Y = 1 items it
  fails, contributing -W_1 x share), ties contributing sum w (f - 0.5) / sum w; the three sum to the bias.

**Labels.** A human label is 1 (the majority finds no critical failure), 0, or 0.5 for a tied majority (the
estimand then counts a tie as half an example with no failure: dropping ties would bias the sample towards
clear-cut items). A judge label is 1 or 0, or any value in [0, 1] where the judge has no verdict (a parse
failure: the caller imputes the judge's own score, which carries no information; PPI stays unbiased for any
prediction). The human-only Wilson interval takes the (possibly half-integer) sum of the human labels.

**Undefined** (fields None, the reason in `undefined`, never an exception for data): fewer than 2 human labels
(MIN_HUMAN_LABELS) or no judge label; when the estimated variance is 0 (every corrected human label one
value; below ZERO_VARIANCE, what floating-point rounding leaves of a 0) the estimate is given but its
interval and effective n are None. Estimates and bounds are not clipped to [0, 1] (the tests compare them
with ppi-python's); a page may clip them for display. Labels outside those values, or lists of different
lengths, are the caller's bug and raise ValueError.

numpy is imported inside the functions: start-up stays light (tests/test_startup.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING

from h2e_site.stats import wilson_interval

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "MAX_DESIGN_STRATA",
    "MIN_DESIGN_STRATUM_LABELS",
    "MIN_HUMAN_LABELS",
    "CalibratedScore",
    "ClassShare",
    "Difference",
    "DifferencePlan",
    "JudgeBias",
    "LabelPlan",
    "MeanDifference",
    "PPIArrays",
    "PlanMoments",
    "StratifiedScore",
    "StratumLabels",
    "calibrated_score",
    "design_stratified_score",
    "difference_half_width",
    "expected_half_widths",
    "judge_bias",
    "labels_needed",
    "labels_needed_for_difference",
    "labels_needed_from",
    "minimum_detectable_difference",
    "ppi_arrays",
    "stratified_score",
    "weighted_mean_difference",
    "z_value",
]

MIN_HUMAN_LABELS = 2
ZERO_VARIANCE = 1e-24  # a variance below this is 0 left by floating-point rounding (a half-width < 2e-12)
Label = int | bool | float


def z_value(alpha: float = 0.05) -> float:
    """The two-sided normal quantile z_{1 - alpha / 2} (1.95996 for 95 %)."""
    return NormalDist().inv_cdf(1 - alpha / 2)


@dataclass(frozen=True)
class CalibratedScore:
    """A calibrated share (of examples with no critical failure) with what a page shows beside it."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    std_error: float | None
    n: int
    N: int
    lam: float | None
    effective_n: float | None
    human_only: float | None
    human_low: float | None
    human_high: float | None
    weighted: bool = False
    undefined: str = ""
    human_std_error: float | None = None
    design_strata: int = 0  # > 0: estimated over that many design strata (design_stratified_score)


@dataclass(frozen=True)
class PPIArrays:
    """ppi_arrays' result: one value per row (world) of its inputs."""

    estimate: NDArray[np.float64]
    std_error: NDArray[np.float64]
    lam: NDArray[np.float64]
    human_only: NDArray[np.float64]
    human_std_error: NDArray[np.float64]


def ppi_arrays(
    human: NDArray[np.float64],
    judge_labelled: NDArray[np.float64],
    judge_all: NDArray[np.float64],
    *,
    lam: float | None = None,
    weights: NDArray[np.float64] | None = None,
) -> PPIArrays:
    """The PPI estimate of every row at once (the module docstring's formulas): human and judge_labelled of
    shape (rows, n), judge_all (rows, N), weights (rows, n) of inverse inclusion probabilities or None.
    lam None is power-tuned per row; a number is used for every row. No checks: calibrated_score makes them,
    the simulation benchmark calls this directly on thousands of worlds."""
    import numpy as np

    n, big_n = human.shape[1], judge_all.shape[1]
    w = np.ones_like(human) if weights is None else weights / weights.mean(axis=1, keepdims=True)
    imputed = judge_all.mean(axis=1)
    if lam is None:
        lams = _tuned_lam(human, judge_labelled, judge_all, w, imputed)
    else:
        lams = np.full(human.shape[0], float(lam))
    rectifier = w * (human - lams[:, None] * judge_labelled)
    variance = lams**2 * judge_all.var(axis=1) / big_n + rectifier.var(axis=1) / n
    return PPIArrays(
        estimate=lams * imputed + rectifier.mean(axis=1),
        std_error=np.sqrt(variance),
        lam=lams,
        human_only=(w * human).mean(axis=1),
        human_std_error=np.sqrt((w * human).var(axis=1) / n),
    )


def _tuned_lam(
    human: NDArray[np.float64],
    judge_labelled: NDArray[np.float64],
    judge_all: NDArray[np.float64],
    w: NDArray[np.float64],
    imputed: NDArray[np.float64],
) -> NDArray[np.float64]:
    import numpy as np

    n, big_n = human.shape[1], judge_all.shape[1]
    theta = (imputed + (w * (human - judge_labelled)).mean(axis=1))[:, None]
    grads = w * (human - theta)
    grads_hat = w * (judge_labelled - theta)
    covariance = (
        (grads - grads.mean(axis=1, keepdims=True)) * (grads_hat - grads_hat.mean(axis=1, keepdims=True))
    ).mean(axis=1)
    spread = np.concatenate([grads_hat, judge_all - theta], axis=1).var(axis=1, ddof=1)
    safe = np.where(spread > 0, spread, 1.0)
    lam = np.where(spread > 0, covariance / ((1 + n / big_n) * safe), 0.0)
    return np.asarray(np.clip(lam, 0.0, 1.0), dtype=np.float64)


def _as_labels(values: Sequence[Label], name: str, allowed: str = "binary") -> list[float]:
    """Labels as floats: 0 or 1; with allowed="tie" also 0.5 (a tied human majority); with allowed="share"
    any value in [0, 1] (a judge label imputed for a parse failure)."""
    labels = [float(v) for v in values]
    if allowed == "share":
        bad = [v for v in labels if not 0.0 <= v <= 1.0]
        expected = "in [0, 1]"
    else:
        ok = (0.0, 0.5, 1.0) if allowed == "tie" else (0.0, 1.0)
        bad = [v for v in labels if v not in ok]
        expected = "0, 0.5 (a tie) or 1" if allowed == "tie" else "0 or 1"
    if bad:
        raise ValueError(f"{name}: labels must be {expected}, got {bad[0]!r}")
    return labels


def _as_weights(inclusion: Sequence[float], n: int) -> list[float]:
    if len(inclusion) != n:
        raise ValueError(f"inclusion_probabilities: {len(inclusion)} values for {n} human labels")
    bad = [p for p in inclusion if not (0 < p <= 1)]
    if bad:
        raise ValueError(f"inclusion_probabilities: {bad[0]!r} is not in (0, 1]")
    return [1 / p for p in inclusion]


def _undefined_score(n: int, big_n: int, reason: str, *, weighted: bool) -> CalibratedScore:
    return CalibratedScore(
        estimate=None,
        ci_low=None,
        ci_high=None,
        std_error=None,
        n=n,
        N=big_n,
        lam=None,
        effective_n=None,
        human_only=None,
        human_low=None,
        human_high=None,
        weighted=weighted,
        undefined=reason,
    )


def calibrated_score(
    human: Sequence[Label],
    judge_labelled: Sequence[Label],
    judge_all: Sequence[Label],
    *,
    lam: float | None = None,
    inclusion_probabilities: Sequence[float] | None = None,
    alpha: float = 0.05,
) -> CalibratedScore:
    """The PPI++ estimate (lam None, power-tuned) or a fixed-lam one (lam=1: classical PPI) of the human
    share, with its (1 - alpha) normal interval, the human-only score and the effective number of human labels
    (module docstring). inclusion_probabilities: each labelled item's known probability of having been drawn
    (None: a uniform sample, no weights)."""
    import numpy as np

    y = _as_labels(human, "human", "tie")
    f = _as_labels(judge_labelled, "judge_labelled", "share")
    f_all = _as_labels(judge_all, "judge_all", "share")
    if len(y) != len(f):
        raise ValueError(f"{len(y)} human labels but {len(f)} judge labels on the same items")
    weighted = inclusion_probabilities is not None
    w = _as_weights(inclusion_probabilities, len(y)) if inclusion_probabilities is not None else None
    n, big_n = len(y), len(f_all)
    if n < MIN_HUMAN_LABELS:
        reason = f"undefined: {n} human label(s), at least {MIN_HUMAN_LABELS} needed"
        return _undefined_score(n, big_n, reason, weighted=weighted)
    if big_n == 0:
        return _undefined_score(n, big_n, "undefined: no judge label", weighted=weighted)
    result = ppi_arrays(
        np.array([y]),
        np.array([f]),
        np.array([f_all]),
        lam=lam,
        weights=None if w is None else np.array([w]),
    )
    return _score(result, n, big_n, weighted=weighted, successes=sum(y), z=z_value(alpha))


def _score(
    result: PPIArrays, n: int, big_n: int, *, weighted: bool, successes: float, z: float
) -> CalibratedScore:
    estimate, se = float(result.estimate[0]), float(result.std_error[0])
    human, human_se = float(result.human_only[0]), float(result.human_std_error[0])
    human_low: float | None = human - z * human_se
    human_high: float | None = human + z * human_se
    if not weighted:
        human_low, human_high = wilson_interval(successes, n, z=z) or (None, None)
    defined = se * se > ZERO_VARIANCE
    return CalibratedScore(
        estimate=estimate,
        ci_low=estimate - z * se if defined else None,
        ci_high=estimate + z * se if defined else None,
        std_error=se if defined else None,
        n=n,
        N=big_n,
        lam=float(result.lam[0]),
        effective_n=n * human_se**2 / se**2 if defined else None,
        human_only=human,
        human_low=human_low,
        human_high=human_high,
        weighted=weighted,
        human_std_error=human_se,
        undefined=""
        if defined
        else "interval undefined: the estimated variance is 0 (every label one value)",
    )


@dataclass(frozen=True)
class StratumLabels:
    """One stratum's (topic's) labels, as calibrated_score takes them."""

    human: Sequence[Label]
    judge_labelled: Sequence[Label]
    judge_all: Sequence[Label]
    inclusion_probabilities: Sequence[float] | None = None


@dataclass(frozen=True)
class StratifiedScore:
    """The topic-stratified overall estimate: per-stratum estimates combined by their share W_h of N."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    std_error: float | None
    n: int
    N: int
    effective_n: float | None
    strata: Mapping[str, CalibratedScore] = field(default_factory=dict)
    undefined: str = ""


def stratified_score(
    strata: Mapping[str, StratumLabels], *, lam: float | None = None, alpha: float = 0.05
) -> StratifiedScore:
    """theta = sum_h W_h theta_h, se^2 = sum_h W_h^2 se_h^2, W_h = N_h / N (module docstring); strata without
    judge labels have weight 0 and are left out. Undefined when a stratum with judge labels has an undefined
    estimate (e.g. fewer than 2 human labels: the reason names the stratum); its interval is undefined when
    the combined variance is 0. Effective n: n * (sum_h W_h^2 se0_h^2) / se^2, se0_h the human-only errors."""
    scores = {
        name: calibrated_score(
            s.human,
            s.judge_labelled,
            s.judge_all,
            lam=lam,
            inclusion_probabilities=s.inclusion_probabilities,
            alpha=alpha,
        )
        for name, s in strata.items()
        if len(s.judge_all) > 0
    }
    n = sum(s.n for s in scores.values())
    big_n = sum(s.N for s in scores.values())
    bad = [f"{name}: {s.undefined}" for name, s in scores.items() if s.estimate is None]
    if not scores or bad:
        reason = "; ".join(bad) or "undefined: no stratum has judge labels"
        return StratifiedScore(None, None, None, None, n, big_n, None, scores, reason)
    shares = {name: s.N / big_n for name, s in scores.items()}
    estimate = sum(shares[k] * (s.estimate or 0.0) for k, s in scores.items())
    variance = sum(shares[k] ** 2 * (s.std_error or 0.0) ** 2 for k, s in scores.items())
    human_variance = sum(shares[k] ** 2 * (s.human_std_error or 0.0) ** 2 for k, s in scores.items())
    if variance <= ZERO_VARIANCE:
        reason = "interval undefined: the estimated variance is 0 in every stratum"
        return StratifiedScore(estimate, None, None, None, n, big_n, None, scores, reason)
    se, z = math.sqrt(variance), z_value(alpha)
    return StratifiedScore(
        estimate, estimate - z * se, estimate + z * se, se, n, big_n, n * human_variance / variance, scores
    )


MAX_DESIGN_STRATA = 8
MIN_DESIGN_STRATUM_LABELS = 10


def design_stratified_score(
    strata: Sequence[tuple[StratumLabels, int]], *, alpha: float = 0.05
) -> CalibratedScore | None:
    """A sample drawn with a few distinct inclusion probabilities (a disagreement design or routing rounds
    give each example one of a handful of values) estimated as a stratified sample over them: every example
    of a design stratum had the same chance of being drawn, so each stratum's PPI++ estimate is unweighted
    (with its own lam), and theta = sum_h W_h theta_h, se^2 = sum_h W_h^2 se_h^2, W_h = N_h / N (the
    module's topic-stratified formulas). This avoids the Hajek estimate's price for unequal weights (the
    routing benchmark: 0.89 of a uniform sample's width against 0.98). `strata`: each design stratum's
    labels (no inclusion probabilities) with its N_h. None when the rule does not hold: more than
    MAX_DESIGN_STRATA strata, or one with fewer than MIN_DESIGN_STRATUM_LABELS human labels (the caller then
    weights by 1 / pi)."""
    if len(strata) > MAX_DESIGN_STRATA or any(len(s.human) < MIN_DESIGN_STRATUM_LABELS for s, _ in strata):
        return None
    scores = [calibrated_score(s.human, s.judge_labelled, s.judge_all, alpha=alpha) for s, _ in strata]
    big_n = sum(size for _, size in strata)
    shares = [size / big_n for _, size in strata]
    if any(score.estimate is None or score.std_error is None for score in scores):
        return None  # a stratum with every label one value: its variance 0 says nothing
    estimate = sum(w * (s.estimate or 0.0) for w, s in zip(shares, scores, strict=True))
    variance = sum(w * w * (s.std_error or 0.0) ** 2 for w, s in zip(shares, scores, strict=True))
    human = sum(w * (s.human_only or 0.0) for w, s in zip(shares, scores, strict=True))
    human_variance = sum(w * w * (s.human_std_error or 0.0) ** 2 for w, s in zip(shares, scores, strict=True))
    z, se, human_se = z_value(alpha), math.sqrt(variance), math.sqrt(human_variance)
    n = sum(s.n for s in scores)
    return CalibratedScore(
        estimate=estimate,
        ci_low=estimate - z * se,
        ci_high=estimate + z * se,
        std_error=se,
        n=n,
        N=big_n,
        lam=None,
        effective_n=n * human_variance / variance,
        human_only=human,
        human_low=human - z * human_se,
        human_high=human + z * human_se,
        weighted=True,
        human_std_error=human_se,
        design_strata=len(strata),
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
    or an agreement the two shares cannot produce."""
    if half_width <= 0 or N < 1:
        raise ValueError(f"half_width must be > 0 and N >= 1, got {half_width!r}, {N!r}")
    var_y, var_f, cov = _moments(human_share, judge_share, agreement)
    return _labels_needed(half_width, N, var_y, var_f, cov, alpha)


def _labels_needed(
    half_width: float, N: int, var_y: float, var_f: float, cov: float, alpha: float
) -> LabelPlan:
    if var_y <= 0:
        reason = "undefined: the human labels have variance 0 (all one value)"
        return LabelPlan(None, None, half_width, None, N, False, reason)
    z = z_value(alpha)
    human_n = max(MIN_HUMAN_LABELS, math.ceil(z * z * var_y / half_width**2))
    low, high = MIN_HUMAN_LABELS, human_n
    while low < high:
        mid = (low + high) // 2
        if z * math.sqrt(_plan_variance(mid, N, var_y, var_f, cov)[0]) <= half_width:
            high = mid
        else:
            low = mid + 1
    return LabelPlan(low, human_n, half_width, _plan_variance(low, N, var_y, var_f, cov)[1], N, low <= N)


def _moments(human_share: float, judge_share: float, agreement: float) -> tuple[float, float, float]:
    """var_Y, var_f and cov(Y, f) of binary labels with these shares and this agreement (labels_needed)."""
    for name, value in (("human_share", human_share), ("judge_share", judge_share), ("agreement", agreement)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name}: {value!r} is not in [0, 1]")
    joint = (agreement + human_share + judge_share - 1) / 2
    if not max(0.0, human_share + judge_share - 1) - 1e-9 <= joint <= min(human_share, judge_share) + 1e-9:
        raise ValueError(
            f"agreement {agreement!r} is impossible with shares {human_share!r}, {judge_share!r}"
        )
    return human_share * (1 - human_share), judge_share * (1 - judge_share), joint - human_share * judge_share


def _plan_variance(n: int, big_n: int, var_y: float, var_f: float, cov: float) -> tuple[float, float]:
    lam = min(1.0, max(0.0, cov / ((1 + n / big_n) * var_f))) if var_f > 0 else 0.0
    return lam * lam * var_f / big_n + (var_y - 2 * lam * cov + lam * lam * var_f) / n, lam


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
    variance, lam = _plan_variance(n, N, var_y, var_f, cov)
    z = z_value(alpha)
    return HalfWidths(
        calibrated=z * math.sqrt(variance),
        human_only=z * math.sqrt(var_y / n),
        judge_only=z * math.sqrt(var_f / N),
        lam=lam,
        effective_n=var_y / variance if variance > 0 else float(n),
    )


def labels_needed_from(
    human: Sequence[Label], judge_labelled: Sequence[Label], *, N: int, half_width: float, alpha: float = 0.05
) -> LabelPlan:
    """labels_needed with the variances and the covariance read from the paired labels already collected
    (divisor n; ties and imputed judge labels allowed; undefined with fewer than 2 of them). For binary labels
    these are the shares' and agreement's moments, so the two functions agree."""
    y, f = _as_labels(human, "human", "tie"), _as_labels(judge_labelled, "judge_labelled", "share")
    if len(y) != len(f):
        raise ValueError(f"{len(y)} human labels but {len(f)} judge labels on the same items")
    if half_width <= 0 or N < 1:
        raise ValueError(f"half_width must be > 0 and N >= 1, got {half_width!r}, {N!r}")
    if len(y) < MIN_HUMAN_LABELS:
        reason = f"undefined: {len(y)} human label(s), at least {MIN_HUMAN_LABELS} needed"
        return LabelPlan(None, None, half_width, None, N, False, reason)
    mean_y, mean_f = sum(y) / len(y), sum(f) / len(f)
    var_y = sum((v - mean_y) ** 2 for v in y) / len(y)
    var_f = sum((v - mean_f) ** 2 for v in f) / len(f)
    cov = sum((a - mean_y) * (b - mean_f) for a, b in zip(y, f, strict=True)) / len(y)
    return _labels_needed(half_width, N, var_y, var_f, cov, alpha)


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
    f = _as_labels(judge, "judge", "share")
    y = _as_labels(human, "human", "tie")
    if len(f) != len(y):
        raise ValueError(f"{len(f)} judge labels but {len(y)} human labels on the same items")
    weighted = inclusion_probabilities is not None
    w = _as_weights(inclusion_probabilities, len(y)) if inclusion_probabilities is not None else None
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
    f = _as_labels(judge, "judge")
    y = _as_labels(human, "human", "tie")
    overall = weighted_mean_difference(f, y, inclusion_probabilities=inclusion_probabilities, alpha=alpha)
    w = [1.0] * len(y) if inclusion_probabilities is None else _as_weights(inclusion_probabilities, len(y))
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


@dataclass(frozen=True)
class PlanMoments:
    """What the planner's closed form needs of one generator: var_Y, var_f, cov(Y, f) (labels_needed)."""

    var_y: float
    var_f: float
    cov: float

    @classmethod
    def from_shares(cls, *, human_share: float, judge_share: float, agreement: float) -> PlanMoments:
        """Binary labels with these shares of "no critical failure" and this judge/human agreement."""
        return cls(*_moments(human_share, judge_share, agreement))

    @classmethod
    def from_labels(cls, human: Sequence[Label], judge_labelled: Sequence[Label]) -> PlanMoments:
        """The paired labels collected so far (divisor n, as labels_needed_from); ValueError with fewer than
        MIN_HUMAN_LABELS of them."""
        y, f = _as_labels(human, "human", "tie"), _as_labels(judge_labelled, "judge_labelled", "share")
        if len(y) != len(f) or len(y) < MIN_HUMAN_LABELS:
            raise ValueError(f"need >= {MIN_HUMAN_LABELS} paired labels, got {len(y)} and {len(f)}")
        mean_y, mean_f = sum(y) / len(y), sum(f) / len(f)
        return cls(
            sum((v - mean_y) ** 2 for v in y) / len(y),
            sum((v - mean_f) ** 2 for v in f) / len(f),
            sum((a - mean_y) * (b - mean_f) for a, b in zip(y, f, strict=True)) / len(y),
        )


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
    first_var = _plan_variance(n, N_first, first.var_y, first.var_f, first.cov)[0]
    second_var = _plan_variance(n, N_second, second.var_y, second.var_f, second.cov)[0]
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
    lams = (
        _plan_variance(low, N_first, first.var_y, first.var_f, first.cov)[1],
        _plan_variance(low, N_second, second.var_y, second.var_f, second.cov)[1],
    )
    return DifferencePlan(low, human_n, half_width, lams, low <= min(N_first, N_second))
