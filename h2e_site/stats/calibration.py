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
    "PPIArrays",
    "StratifiedScore",
    "StratumLabels",
    "calibrated_score",
    "checked_labels",
    "checked_weights",
    "design_stratified_score",
    "ppi_arrays",
    "probability_levels",
    "stratified_score",
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


def checked_labels(values: Sequence[Label], name: str, allowed: str = "binary") -> list[float]:
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


def checked_weights(inclusion: Sequence[float], n: int) -> list[float]:
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

    y = checked_labels(human, "human", "tie")
    f = checked_labels(judge_labelled, "judge_labelled", "share")
    f_all = checked_labels(judge_all, "judge_all", "share")
    if len(y) != len(f):
        raise ValueError(f"{len(y)} human labels but {len(f)} judge labels on the same items")
    weighted = inclusion_probabilities is not None
    w = checked_weights(inclusion_probabilities, len(y)) if inclusion_probabilities is not None else None
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
    estimate (e.g. fewer than 2 human labels: the reason names the stratum;
    annotation.kinds.critical_failures.calibration.calibrated.topic_strata merges such a pool of topics into
    the largest stratum first); its
    interval is undefined when the combined variance is 0. Effective n: n * (sum_h W_h^2 se0_h^2) / se^2,
    se0_h the human-only errors."""
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


def probability_levels(probabilities: Sequence[float]) -> dict[float, list[int]]:
    """The design strata of a frame: its distinct inclusion probabilities (to 9 significant digits, so that
    floating-point noise does not split a level), smallest first, each with the positions that have it."""
    levels: dict[float, list[int]] = {}
    for i, p in enumerate(probabilities):
        levels.setdefault(float(f"{p:.9g}"), []).append(i)
    return dict(sorted(levels.items()))


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
