"""The human-calibrated How2Score's statistics (issue #20 foundation, h2e_site/stats/calibration.py): the
PPI++ and classical PPI estimates and intervals against ppi-python (the reference implementation, in the dev
extras), the classical PPI mean and the inverse-probability weights of a stratified sample by hand, the
stratified estimate, the undefined cases, and the planner's n against a seeded simulation."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from h2e_site.stats.calibration import (
    MAX_DESIGN_STRATA,
    MIN_DESIGN_STRATUM_LABELS,
    CalibratedScore,
    StratumLabels,
    calibrated_score,
    design_stratified_score,
    ppi_arrays,
    stratified_score,
    z_value,
)
from h2e_site.stats.calibration_plan import (
    PlanMoments,
    agreement_range,
    default_agreement,
    difference_half_width,
    expected_half_widths,
    labels_needed,
    labels_needed_for_difference,
    labels_needed_from,
    minimum_detectable_difference,
)
from tests.fuzzing import fuzz_settings

Z = 1.959963984540054


def _crafted(seed: int, n: int, big_n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Human labels at ~60 % "no critical failure", a judge right ~80 % of the time (more often on 1s), and
    inclusion probabilities of a two-stratum sample."""
    rng = np.random.default_rng(seed)
    human = (rng.random(n) < 0.6).astype(float)
    right = rng.random(n) < np.where(human == 1, 0.9, 0.7)
    judge = np.where(right, human, 1 - human)
    judge_all = (rng.random(big_n) < 0.62).astype(float)
    inclusion = np.where(rng.random(n) < 0.3, 0.2, 0.02)
    return human, judge, judge_all, inclusion


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("lam", [None, 1.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_it_equals_ppi_python(seed: int, lam: float | None, weighted: bool) -> None:
    import ppi_py  # the dev extras' reference implementation (imported here: it loads numba)

    human, judge, judge_all, inclusion = _crafted(seed, 80, 900)
    w = 1 / inclusion if weighted else None
    score = calibrated_score(
        human.tolist(),
        judge.tolist(),
        judge_all.tolist(),
        lam=lam,
        inclusion_probabilities=inclusion.tolist() if weighted else None,
    )
    expected = ppi_py.ppi_mean_pointestimate(human, judge, judge_all, lam=lam, w=w)
    low, high = ppi_py.ppi_mean_ci(human, judge, judge_all, alpha=0.05, lam=lam, w=w)
    assert score.estimate == pytest.approx(float(np.squeeze(expected)), abs=1e-12)
    assert score.ci_low == pytest.approx(float(np.squeeze(low)), abs=1e-12)
    assert score.ci_high == pytest.approx(float(np.squeeze(high)), abs=1e-12)
    assert score.lam is not None and 0 <= score.lam <= 1
    assert (score.lam == 1.0) == (lam == 1.0)


def test_it_computes_the_classical_ppi_mean_and_interval_by_hand() -> None:
    human, judge, judge_all = [1, 1, 0, 1], [1, 0, 0, 1], [1, 1, 0, 1, 0, 1]
    score = calibrated_score(human, judge, judge_all, lam=1.0)
    # theta = mean(f~) + mean(Y - f) = 4/6 + 1/4; se^2 = (2/3)(1/3)/6 + (1/4)(3/4)/4 = 1/27 + 3/64
    se = math.sqrt(1 / 27 + 3 / 64)
    assert score.estimate == pytest.approx(11 / 12)
    assert score.std_error == pytest.approx(se)
    assert (score.ci_low, score.ci_high) == pytest.approx((11 / 12 - Z * se, 11 / 12 + Z * se))
    assert (score.n, score.N, score.lam) == (4, 6, 1.0)
    # human-only: 3 of 4 with its Wilson interval; effective n = n * var(Y)/n / se^2
    assert score.human_only == 0.75 and score.human_low is not None and score.human_low < 0.75
    assert score.effective_n == pytest.approx(4 * (3 / 16 / 4) / se**2)


def test_it_weights_a_stratified_sample_by_its_inclusion_probabilities() -> None:
    """Topic A: 100 examples, 4 labelled (pi = 0.04, w = 25); topic B: 400 examples, 4 labelled (pi = 0.01,
    w = 100). The judge says "no failure" on 60 of A and 100 of B."""
    human = [*[1, 1, 1, 0], *[0, 1, 1, 0]]  # topic A, then topic B
    judge = [*[1, 1, 0, 0], *[0, 0, 0, 0]]
    judge_all = [1] * 60 + [0] * 40 + [1] * 100 + [0] * 300
    inclusion = [0.04] * 4 + [0.01] * 4
    score = calibrated_score(human, judge, judge_all, lam=1.0, inclusion_probabilities=inclusion)
    # Hajek rectifier: sum w (Y - f) / sum w = (25 * 1 + 100 * 2) / (4 * 25 + 4 * 100) = 225 / 500
    assert score.estimate == pytest.approx(160 / 500 + 225 / 500)
    # normalised weights w~ = 8 w / 500: 0.4 (A), 1.6 (B); w~ (Y - f) = [0, 0, .4, 0, 0, 1.6, 1.6, 0]
    rectifier_var = (0.4**2 + 2 * 1.6**2) / 8 - 0.45**2
    se2 = 0.32 * 0.68 / 500 + rectifier_var / 8
    assert score.std_error == pytest.approx(math.sqrt(se2))
    assert score.weighted
    unweighted = calibrated_score(human, judge, judge_all, lam=1.0)
    assert unweighted.estimate == pytest.approx(0.32 + 3 / 8)  # the sample's own mix, biased towards A
    # the weighted human-only score is the Hajek mean: (25 * 3 + 100 * 2) / 500, with a normal interval
    assert score.human_only == pytest.approx(275 / 500)


def test_it_combines_strata_by_their_share_of_the_judge_labels() -> None:
    a = StratumLabels(human=[1, 1, 0, 1], judge_labelled=[1, 0, 0, 1], judge_all=[1, 1, 0, 1, 0, 1])
    b = StratumLabels(human=[0, 1, 0], judge_labelled=[0, 1, 1], judge_all=[0, 0, 1])
    combined = stratified_score({"a": a, "b": b}, lam=1.0)
    sa = calibrated_score(a.human, a.judge_labelled, a.judge_all, lam=1.0)
    sb = calibrated_score(b.human, b.judge_labelled, b.judge_all, lam=1.0)
    assert sa.estimate is not None and sb.estimate is not None
    assert sa.std_error is not None and sb.std_error is not None
    assert combined.estimate == pytest.approx(6 / 9 * sa.estimate + 3 / 9 * sb.estimate)
    se = math.sqrt((6 / 9) ** 2 * sa.std_error**2 + (3 / 9) ** 2 * sb.std_error**2)
    assert combined.std_error == pytest.approx(se)
    assert (combined.n, combined.N) == (7, 9)
    human_variance = (6 / 9) ** 2 * (3 / 16) / 4 + (3 / 9) ** 2 * (2 / 9) / 3  # var(Y)/n per stratum
    assert combined.effective_n == pytest.approx(7 * human_variance / se**2)
    assert combined.ci_low == pytest.approx(combined.estimate - Z * se)


def test_it_names_the_stratum_that_makes_the_stratified_estimate_undefined() -> None:
    a = StratumLabels(human=[1, 0], judge_labelled=[1, 0], judge_all=[1, 0, 1])
    thin = StratumLabels(human=[1], judge_labelled=[1], judge_all=[1, 1])
    combined = stratified_score({"cooking": a, "gardening": thin})
    assert (
        combined.estimate is None
        and "gardening" in combined.undefined
        and "1 human label" in combined.undefined
    )


def test_it_is_undefined_below_two_human_labels_or_without_judge_labels() -> None:
    one = calibrated_score([1], [1], [1, 0, 1])
    assert one.estimate is None and one.ci_low is None and "at least 2" in one.undefined
    none = calibrated_score([1, 0], [1, 0], [])
    assert none.estimate is None and none.undefined == "undefined: no judge label"


def test_it_gives_the_estimate_but_no_interval_when_the_variance_is_zero() -> None:
    score = calibrated_score([1, 1, 1], [1, 1, 1], [1, 1, 1, 1])
    assert score.estimate == 1.0 and score.lam == 0.0  # a constant judge carries nothing
    assert score.ci_low is None and score.effective_n is None and "variance is 0" in score.undefined


def test_it_refuses_labels_outside_their_values() -> None:
    with pytest.raises(ValueError, match=r"human: labels must be 0, 0\.5 \(a tie\) or 1, got 2\.0"):
        calibrated_score([1, 2], [1, 0], [1, 0])
    with pytest.raises(ValueError, match=r"human: labels must be 0, 0\.5 \(a tie\) or 1, got 0\.3"):
        calibrated_score([1, 0.3], [1, 0], [1, 0])
    with pytest.raises(ValueError, match=r"judge_all: labels must be in \[0, 1\], got 1\.5"):
        calibrated_score([1, 0], [1, 0], [1, 1.5])
    with pytest.raises(ValueError, match=r"inclusion_probabilities: 0\.0 is not in"):
        calibrated_score([1, 0], [1, 0], [1, 0], inclusion_probabilities=[0.5, 0.0])


def test_it_is_worth_more_human_labels_with_a_good_judge() -> None:
    human, judge, judge_all, _ = _crafted(3, 200, 7000)
    score = calibrated_score(human.tolist(), judge.tolist(), judge_all.tolist())
    assert score.effective_n is not None and score.effective_n > score.n
    assert score.ci_low is not None and score.ci_high is not None
    assert score.human_low is not None and score.human_high is not None
    assert score.ci_high - score.ci_low < score.human_high - score.human_low


def test_it_plans_the_labels_a_simulation_confirms() -> None:
    """p_Y = 0.6, a judge right 80 % of the time on either class, N = 7,000, target half-width 0.05: the
    planned n gives, over 400 seeded worlds, a mean half-width within 4 % of the target and ~95 % coverage."""
    plan = labels_needed(half_width=0.05, human_share=0.6, judge_share=0.56, agreement=0.8, N=7000)
    assert plan.n_needed is not None and plan.human_only_n is not None
    assert plan.n_needed < plan.human_only_n and plan.within_N and plan.undefined == ""
    rng = np.random.default_rng(20)
    worlds, n, big_n = 400, plan.n_needed, 7000
    human = (rng.random((worlds, big_n)) < 0.6).astype(float)
    judge = np.where(rng.random((worlds, big_n)) < 0.8, human, 1 - human)
    result = ppi_arrays(human[:, :n], judge[:, :n], judge)
    half = Z * result.std_error
    assert half.mean() == pytest.approx(0.05, rel=0.04)
    coverage = (np.abs(result.estimate - 0.6) <= half).mean()
    assert 0.92 <= coverage <= 0.98
    smaller = ppi_arrays(human[:, : n - 40], judge[:, : n - 40], judge)
    assert (Z * smaller.std_error).mean() > 0.05


def test_it_plans_from_the_labels_collected() -> None:
    plan = labels_needed_from([1, 1, 0, 1, 0, 1, 1, 0], [1, 1, 0, 1, 1, 1, 0, 0], N=7000, half_width=0.05)
    direct = labels_needed(half_width=0.05, human_share=5 / 8, judge_share=5 / 8, agreement=6 / 8, N=7000)
    assert plan == direct
    assert labels_needed_from([1], [1], N=10, half_width=0.1).undefined.startswith("undefined: 1 human")
    assert (
        labels_needed(half_width=0.05, human_share=1.0, judge_share=0.9, agreement=0.9, N=100).n_needed
        is None
    )
    with pytest.raises(ValueError, match="impossible"):
        labels_needed(half_width=0.05, human_share=0.9, judge_share=0.9, agreement=0.1, N=100)


def test_it_plans_weighted_labels_with_the_weighted_estimators_variance() -> None:
    """#31 item 23, by hand: Y = 1, 0, 1, 1, f = 1, 0, 0, 1 drawn with pi = 1/2, 1/2, 1/4, 1/4:
    w = 2, 2, 4, 4, w~ = w / 3 = 2/3, 2/3, 4/3, 4/3; w~ Y = 2/3, 0, 4/3, 4/3 (mean 5/6) and
    w~ f = 2/3, 0, 0, 4/3 (mean 1/2): var(w~ Y) = 1 - 25/36 = 11/36, var(w~ f) = 5/9 - 1/4 = 11/36,
    cov = 5/9 - 5/12 = 5/36; the Hajek variance of f: mean (2 + 4) / 12 = 1/2, variance 1/4. With N = 100:
    lam(n) = (5/36) / (11/36 + n/400), se(n)^2 = lam^2 / 400 + (11/36 - 10 lam / 36 + 11 lam^2 / 36) / n."""
    y, f, pi = [1, 0, 1, 1], [1, 0, 0, 1], [0.5, 0.5, 0.25, 0.25]
    moments = PlanMoments.from_labels(y, f, inclusion_probabilities=pi)
    assert (moments.var_y, moments.var_f, moments.cov) == pytest.approx((11 / 36, 11 / 36, 5 / 36), abs=1e-15)
    assert moments.var_f_all == pytest.approx(1 / 4)

    def half_width(n: int) -> float:
        lam = (5 / 36) / (11 / 36 + n / 400)
        return Z * math.sqrt(lam**2 / 400 + (11 / 36 - 10 * lam / 36 + 11 * lam**2 / 36) / n)

    plan = labels_needed_from(y, f, N=100, half_width=0.2, inclusion_probabilities=pi)
    assert plan.n_needed is not None and plan.n_needed > 2
    assert half_width(plan.n_needed) <= 0.2 < half_width(plan.n_needed - 1)
    assert plan.human_only_n == math.ceil(Z * Z * (11 / 36) / 0.2**2)
    assert plan.lam == pytest.approx((5 / 36) / (11 / 36 + plan.n_needed / 400))
    # Read as a uniform sample (the former plan): var Y = 3/16, var f = 1/4, cov = 1/8: fewer labels.
    uniform = labels_needed_from(y, f, N=100, half_width=0.2)
    assert uniform.n_needed is not None and uniform.n_needed < plan.n_needed
    # Equal weights are the uniform plan.
    assert labels_needed_from(y, f, N=100, half_width=0.2, inclusion_probabilities=[0.3] * 4) == uniform


@fuzz_settings(60)
@given(
    human=st.floats(0, 1),
    judge=st.floats(0, 1),
    fraction=st.floats(0, 1),
)
def test_a_derived_agreement_always_lies_in_the_range_the_shares_allow(
    human: float, judge: float, fraction: float
) -> None:
    """default_agreement is inside agreement_range for any shares (the range a point where a share is 0 or
    1), and labels_needed accepts it; the range is 2 min(p_Y, 1 - p_Y, p_f, 1 - p_f) wide."""
    low, high = agreement_range(human, judge)
    assert high - low == pytest.approx(2 * min(human, 1 - human, judge, 1 - judge), abs=1e-12)
    agreement = default_agreement(human, judge, fraction)
    assert low - 1e-12 <= agreement <= high + 1e-12
    plan = labels_needed(half_width=0.05, human_share=human, judge_share=judge, agreement=agreement, N=500)
    assert (plan.n_needed is None) == (human * (1 - human) <= 0)
    if judge in {0.0, 1.0} and plan.lam is not None:
        assert plan.lam == 0.0  # a judge with one verdict carries nothing, whatever agreement is entered
        assert (
            labels_needed(half_width=0.05, human_share=human, judge_share=judge, agreement=0.3, N=500) == plan
        )


def test_it_gives_the_minimum_detectable_difference() -> None:
    first = CalibratedScore(0.6, None, None, 0.03, 200, 7000, 0.5, 300.0, None, None, None)
    second = CalibratedScore(0.5, None, None, 0.04, 200, 7000, 0.5, 300.0, None, None, None)
    difference = minimum_detectable_difference(first, second)
    assert difference.std_error == pytest.approx(0.05)
    assert difference.minimum == pytest.approx((Z + 0.8416212335729143) * 0.05)
    undefined = CalibratedScore(
        None, None, None, None, 1, 7000, None, None, None, None, None, undefined="why"
    )
    assert minimum_detectable_difference(first, undefined).undefined == "why"
    assert z_value() == pytest.approx(Z)


def test_it_gives_the_expected_widths_of_the_papers_setting() -> None:
    """200 items with a human majority, a judge at 80.5 % agreement, 7,000 examples: the calibrated interval
    is narrower than the human-only one, and labels_needed's n is where the expected half-width crosses a
    target."""
    widths = expected_half_widths(n=200, N=7000, human_share=0.6, judge_share=0.6, agreement=0.805)
    assert widths.human_only == pytest.approx(Z * math.sqrt(0.24 / 200))
    assert widths.judge_only == pytest.approx(Z * math.sqrt(0.24 / 7000))
    assert widths.judge_only < widths.calibrated < widths.human_only
    assert widths.effective_n == pytest.approx(200 * (widths.human_only / widths.calibrated) ** 2)
    plan = labels_needed(half_width=0.05, human_share=0.6, judge_share=0.6, agreement=0.805, N=7000)
    assert plan.n_needed is not None
    at = expected_half_widths(n=plan.n_needed, N=7000, human_share=0.6, judge_share=0.6, agreement=0.805)
    before = expected_half_widths(
        n=plan.n_needed - 1, N=7000, human_share=0.6, judge_share=0.6, agreement=0.805
    )
    assert at.calibrated <= 0.05 < before.calibrated


_items = st.lists(
    st.tuples(st.integers(0, 1), st.integers(0, 1), st.sampled_from([1.0, 0.5, 0.1, 0.01])), max_size=12
)


@fuzz_settings(60)
@given(
    items=_items,
    judge_all=st.lists(st.integers(0, 1), max_size=15),
    lam=st.sampled_from([None, 1.0]),
    weighted=st.booleans(),
)
def test_it_never_crashes_and_brackets_its_estimate(
    items: list[tuple[int, int, float]], judge_all: list[int], lam: float | None, weighted: bool
) -> None:
    """Any 0/1 labels, degenerate ones included, weighted or not: a score, or None fields with a reason."""
    human, judge = [y for y, _, _ in items], [f for _, f, _ in items]
    inclusion = [p for _, _, p in items] if weighted else None
    score = calibrated_score(human, judge, judge_all, lam=lam, inclusion_probabilities=inclusion)
    if score.estimate is None:
        assert score.undefined.startswith("undefined: ") and score.ci_low is None
    elif score.ci_low is None:
        assert score.undefined.startswith("interval undefined") and score.effective_n is None
    else:
        assert score.ci_high is not None and score.ci_low < score.estimate < score.ci_high
        assert score.lam is not None and 0 <= score.lam <= 1 and score.undefined == ""


def test_a_tie_counts_half_and_an_imputed_judge_label_is_a_prediction_like_any_other() -> None:
    """Ties (0.5) and imputed judge labels go through the same formulas: equal to ppi-python on them."""
    ppi = pytest.importorskip("ppi_py")
    y = np.array([1, 0.5, 0, 1, 1, 0, 0.5, 1])
    f = np.array([1, 0.7, 0, 1, 0, 0, 1, 1])
    f_all = np.array([1, 0.7, 0, 1, 0, 0, 1, 1, 1, 0, 0.7, 1, 1, 0])
    score = calibrated_score(y, f, f_all)
    expected = ppi.ppi_mean_pointestimate(y, f, f_all)
    low, high = ppi.ppi_mean_ci(y, f, f_all, alpha=0.05)
    assert score.estimate == pytest.approx(float(np.ravel(expected)[0]), abs=1e-12)
    assert (score.ci_low, score.ci_high) == pytest.approx((float(np.ravel(low)[0]), float(np.ravel(high)[0])))
    assert score.human_only == pytest.approx(5 / 8)  # 1 + .5 + 1 + 1 + .5 + 1 = 5 of 8


def test_it_plans_the_labels_for_a_difference_a_simulation_confirms() -> None:
    """Two generators (p_Y 0.6 with a judge right 80 % of the time, p_Y 0.45 with one right 75 %), N = 7,000
    each, target half-width of the difference 0.07: at the planned n per generator, 400 seeded worlds give a
    mean half-width z * sqrt(se_1^2 + se_2^2) within 4 % of the target and ~95 % coverage of the true
    difference; 40 labels fewer miss the target."""
    first = PlanMoments.from_shares(human_share=0.6, judge_share=0.56, agreement=0.8)
    second = PlanMoments.from_shares(human_share=0.45, judge_share=0.475, agreement=0.75)
    plan = labels_needed_for_difference(
        half_width=0.07, first=first, second=second, N_first=7000, N_second=7000
    )
    assert plan.n_needed is not None and plan.human_only_n is not None and plan.lams is not None
    assert plan.n_needed < plan.human_only_n and plan.within_N and plan.undefined == ""
    assert plan.human_only_n == math.ceil(Z * Z * (0.24 + 0.2475) / 0.07**2)
    at = difference_half_width(plan.n_needed, first, second, N_first=7000, N_second=7000)
    assert at <= 0.07 < difference_half_width(plan.n_needed - 1, first, second, N_first=7000, N_second=7000)
    rng = np.random.default_rng(21)
    worlds, n, big_n = 400, plan.n_needed, 7000

    def world(p: float, right: float, fewer: int = 0) -> tuple[Any, Any]:
        human = (rng.random((worlds, big_n)) < p).astype(float)
        judge = np.where(rng.random((worlds, big_n)) < right, human, 1 - human)
        result = ppi_arrays(human[:, : n - fewer], judge[:, : n - fewer], judge)
        return result.estimate, result.std_error

    (est_a, se_a), (est_b, se_b) = world(0.6, 0.8), world(0.45, 0.75)
    half = Z * np.sqrt(se_a**2 + se_b**2)
    assert half.mean() == pytest.approx(0.07, rel=0.04)
    assert 0.92 <= (np.abs(est_a - est_b - 0.15) <= half).mean() <= 0.98
    (_, fewer_a), (_, fewer_b) = world(0.6, 0.8, 40), world(0.45, 0.75, 40)
    assert (Z * np.sqrt(fewer_a**2 + fewer_b**2)).mean() > 0.07


def test_it_reads_a_generators_moments_from_its_labels() -> None:
    moments = PlanMoments.from_labels([1, 1, 0, 1, 0, 1, 1, 0], [1, 1, 0, 1, 1, 1, 0, 0])
    assert moments == PlanMoments.from_shares(human_share=5 / 8, judge_share=5 / 8, agreement=6 / 8)
    with pytest.raises(ValueError, match="need >= 2 paired labels"):
        PlanMoments.from_labels([1], [1])
    flat = PlanMoments(0.0, 0.1, 0.0)
    undefined = labels_needed_for_difference(half_width=0.1, first=flat, second=flat, N_first=9, N_second=9)
    assert undefined.n_needed is None and undefined.undefined.startswith("undefined: both")


def _design_stratum(
    rng: np.random.Generator, size: int, n: int, agreement: float
) -> tuple[StratumLabels, int]:
    human = (rng.random(size) < 0.6).astype(float)
    judge = np.where(rng.random(size) < agreement, human, 1 - human)
    drawn = rng.choice(size, n, replace=False)
    return StratumLabels(human[drawn].tolist(), judge[drawn].tolist(), judge.tolist()), size


def test_a_design_stratified_score_is_the_stratified_estimate_over_the_inclusion_levels() -> None:
    """Two design strata (pi = 40/300 where judges disagree, 60/1700 elsewhere): the estimate is
    sum_h W_h theta_h with each theta_h the unweighted PPI++ estimate, se^2 = sum_h W_h^2 se_h^2, by hand."""
    rng = np.random.default_rng(3)
    strata = [_design_stratum(rng, 300, 40, 0.55), _design_stratum(rng, 1700, 60, 0.9)]
    score = design_stratified_score(strata)
    assert score is not None and score.design_strata == 2 and score.weighted
    parts = [calibrated_score(s.human, s.judge_labelled, s.judge_all) for s, _ in strata]
    shares = [300 / 2000, 1700 / 2000]
    estimate = sum(w * (p.estimate or 0) for w, p in zip(shares, parts, strict=True))
    se = math.sqrt(sum(w * w * (p.std_error or 0) ** 2 for w, p in zip(shares, parts, strict=True)))
    assert score.estimate == pytest.approx(estimate, abs=1e-12)
    assert (score.ci_low, score.ci_high) == pytest.approx(
        (estimate - 1.959964 * se, estimate + 1.959964 * se)
    )
    assert (score.n, score.N) == (100, 2000)
    human = sum(w * (p.human_only or 0) for w, p in zip(shares, parts, strict=True))
    assert score.human_only == pytest.approx(human)
    # The same as stratified_score over those strata (the topic-stratified formulas).
    same = stratified_score({str(i): s for i, (s, _) in enumerate(strata)})
    assert score.estimate == pytest.approx(same.estimate) and score.std_error == pytest.approx(same.std_error)


def test_the_design_stratified_rule_falls_back_below_its_labels_or_above_its_strata() -> None:
    rng = np.random.default_rng(4)
    few = [
        _design_stratum(rng, 300, 40, 0.55),
        _design_stratum(rng, 1700, MIN_DESIGN_STRATUM_LABELS - 1, 0.9),
    ]
    assert design_stratified_score(few) is None
    many = [_design_stratum(rng, 200, 20, 0.8) for _ in range(MAX_DESIGN_STRATA + 1)]
    assert design_stratified_score(many) is None
