"""The judge's bias against the human majority (h2e_site/stats/calibration.py: weighted_mean_difference,
judge_bias): by hand, and against numpy's weighted average and statsmodels' DescrStatsW."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.weightstats import DescrStatsW

from h2e_site.stats import wilson_interval
from h2e_site.stats.calibration import z_value
from h2e_site.stats.calibration_bias import judge_bias, weighted_mean_difference

Z = z_value()


def test_the_unweighted_bias_is_the_mean_difference_by_hand() -> None:
    # f - Y: 1 - 1, 1 - 0, 0 - 1, 1 - 0.5, 1 - 1 = 0, 1, -1, 0.5, 0 -> mean 0.1
    result = weighted_mean_difference([1, 1, 0, 1, 1], [1, 0, 1, 0.5, 1])
    assert result.estimate == pytest.approx(0.1)
    variance = ((0 - 0.1) ** 2 * 2 + 0.9**2 + 1.1**2 + 0.4**2) / 5
    se = math.sqrt(variance / 5)
    assert result.std_error == pytest.approx(se)
    assert (result.ci_low, result.ci_high) == pytest.approx((0.1 - Z * se, 0.1 + Z * se))
    assert not result.weighted


def test_the_unweighted_bias_equals_descrstatsw() -> None:
    rng = np.random.default_rng(7)
    f = rng.integers(0, 2, 60).astype(float)
    y = rng.choice([0.0, 0.5, 1.0], 60)
    result = weighted_mean_difference(f, y)
    stats = DescrStatsW(f - y, ddof=0)
    assert result.estimate == pytest.approx(stats.mean)
    assert result.std_error == pytest.approx(math.sqrt(stats.var / 60))  # divisor n, as the estimator's
    low, high = stats.zconfint_mean()  # DescrStatsW's uses the ddof=1 standard error
    scale = math.sqrt(59 / 60)
    assert (result.ci_high - result.ci_low) == pytest.approx((high - low) * scale)  # type: ignore[operator]


def test_the_weighted_bias_is_the_hajek_mean_of_the_weighted_terms() -> None:
    rng = np.random.default_rng(3)
    f = rng.integers(0, 2, 40).astype(float)
    y = rng.integers(0, 2, 40).astype(float)
    pi = rng.uniform(0.1, 0.9, 40)
    result = weighted_mean_difference(f, y, inclusion_probabilities=list(pi))
    assert result.weighted
    assert result.estimate == pytest.approx(np.average(f - y, weights=1 / pi))
    assert result.estimate == pytest.approx(DescrStatsW(f - y, weights=1 / pi).mean)
    w = (1 / pi) / (1 / pi).mean()
    assert result.std_error == pytest.approx(math.sqrt(DescrStatsW(w * (f - y), ddof=0).var / 40))


def test_the_classes_decompose_the_bias_by_hand() -> None:
    # Humans: failure (0) on items 0-3, none (1) on 4-8, a tie on item 9.
    y = [0, 0, 0, 0, 1, 1, 1, 1, 1, 0.5]
    f = [1, 0, 0, 0, 1, 1, 1, 0, 0, 1]
    bias = judge_bias(f, y)
    # Missed: 1 of 4 (item 0); false alarms: 2 of 5 (items 7, 8); the tie: 1 - 0.5.
    assert (bias.missed.k, bias.missed.n, bias.missed.rate) == (1, 4, 0.25)
    assert (bias.missed.ci_low, bias.missed.ci_high) == pytest.approx(wilson_interval(1, 4))
    assert (bias.false_alarms.k, bias.false_alarms.n) == (2, 5)
    assert (bias.false_alarms.ci_low, bias.false_alarms.ci_high) == pytest.approx(wilson_interval(2, 5))
    assert bias.missed.contribution == pytest.approx(0.4 * 0.25)
    assert bias.false_alarms.contribution == pytest.approx(-0.5 * 0.4)
    assert (bias.n_ties, bias.ties_contribution) == (1, pytest.approx(0.05))
    total = bias.missed.contribution + bias.false_alarms.contribution + bias.ties_contribution  # type: ignore[operator]
    assert bias.overall.estimate == pytest.approx(total) == pytest.approx(-0.05)


def test_weighted_classes_still_sum_to_the_weighted_bias() -> None:
    rng = np.random.default_rng(11)
    y = list(rng.choice([0.0, 0.5, 1.0], 50, p=[0.4, 0.1, 0.5]))
    f = list(rng.integers(0, 2, 50).astype(float))
    pi = list(rng.uniform(0.2, 1.0, 50))
    bias = judge_bias(f, y, inclusion_probabilities=pi)
    parts = bias.missed.contribution + bias.false_alarms.contribution + bias.ties_contribution  # type: ignore[operator]
    assert bias.overall.estimate == pytest.approx(parts)
    failures = [i for i, v in enumerate(y) if v == 0]
    missed = np.array([f[i] for i in failures])
    weights = np.array([1 / pi[i] for i in failures])
    assert bias.missed.rate == pytest.approx(np.average(missed, weights=weights))
    assert bias.missed.weighted and bias.missed.ci_low is not None


def test_few_items_are_undefined_with_the_reason() -> None:
    result = weighted_mean_difference([1], [0])
    assert result.estimate is None and "1 labelled item(s)" in result.undefined
    constant = weighted_mean_difference([1, 1], [1, 1])
    assert constant.estimate == 0 and constant.ci_low is None and "variance is 0" in constant.undefined
    empty = judge_bias([1, 0], [1, 1]).missed
    assert (empty.n, empty.rate, empty.contribution) == (0, None, None)
    with pytest.raises(ValueError, match="2 judge labels but 1 human"):
        weighted_mean_difference([1, 0], [1])
