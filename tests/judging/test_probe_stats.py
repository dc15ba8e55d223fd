"""The judge probe's statistics (judging/probes/stats.py) against a published example, statsmodels and hand
computation, and the seeded perturbations (judging/probes/perturb.py)."""

from __future__ import annotations

import math
import random

import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from judging.probes.perturb import delete_step, item_rng, sample_pks, swap_steps
from judging.probes.stats import (
    detection,
    mean_interval,
    newcombe_paired_interval,
    paired_change,
)


def test_it_matches_the_published_newcombe_interval() -> None:
    # Fagerland, Lydersen & Laake, "Statistical analysis of contingency tables" ch. 8 (Cavo et al. 2012):
    # table [[59, 6], [16, 80]], the Newcombe square-and-add interval -0.0621 (-0.1186 to -0.0046).
    low, high = newcombe_paired_interval(59, 6, 16, 80) or (0.0, 0.0)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)


def test_it_is_newcombes_formula_by_hand() -> None:
    both_pass, gained, lost, both_fail = 10, 6, 1, 3
    n = 20
    p1, p2 = 16 / n, 11 / n  # the first (perturbed) and second (original) pass rates
    l1, u1 = proportion_confint(16, n, method="wilson")
    l2, u2 = proportion_confint(11, n, method="wilson")
    a = both_pass * both_fail - gained * lost  # 24 > n / 2: phi's numerator is 24 - 10
    phi = (a - n / 2) / math.sqrt(16 * 4 * 11 * 9)
    low = (p1 - p2) - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    high = (p1 - p2) + math.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    interval = newcombe_paired_interval(both_pass, gained, lost, both_fail)
    assert interval == pytest.approx((low, high), abs=1e-6)


def test_a_small_positive_correlation_counts_as_none() -> None:
    # A = 5 * 5 - 4 * 4 = 9 <= n / 2 = 9: phi is 0, the square-and-add of the two Wilson half-widths.
    p = 9 / 18
    low, high = proportion_confint(9, 18, method="wilson")
    half = math.sqrt((p - low) ** 2 + (high - p) ** 2)
    assert newcombe_paired_interval(5, 4, 4, 5) == pytest.approx((-half, half), abs=1e-6)
    assert newcombe_paired_interval(0, 0, 0, 0) is None


def test_the_paired_change_is_the_rewrites_score_minus_the_originals() -> None:
    # (original passes, perturbed passes): 3 both, 5 gained, 1 lost, 2 both fail
    pairs = [(True, True)] * 3 + [(False, True)] * 5 + [(True, False)] + [(False, False)] * 2
    change = paired_change(pairs)
    assert (change.both_pass, change.gained, change.lost, change.both_fail, change.n) == (3, 5, 1, 2, 11)
    assert change.original_score == pytest.approx(4 / 11)
    assert change.perturbed_score == pytest.approx(8 / 11)
    assert change.delta == pytest.approx(4 / 11)
    # rows: perturbed pass / fail; columns: original pass / fail
    table = [[3, 5], [1, 2]]
    assert change.p_value == pytest.approx(mcnemar(table, exact=True).pvalue)
    assert change.p_value == pytest.approx(2 * (1 + 6) / 2**6)  # 2 P(X <= 1), X ~ Binomial(6, 1/2)
    assert change.interval == newcombe_paired_interval(3, 5, 1, 2)


def test_no_pair_has_no_figure() -> None:
    change = paired_change([])
    assert (change.delta, change.interval, change.p_value, change.original_score) == (None, None, None, None)


def test_the_length_ratio_is_a_mean_with_its_t_interval() -> None:
    ratios = [1.2, 1.5, 1.1, 1.9, 1.4, 1.3]
    result = mean_interval(ratios)
    assert result.mean == pytest.approx(sum(ratios) / 6) and result.m == 6
    assert result.interval == pytest.approx(DescrStatsW(ratios).tconfint_mean(alpha=0.05))
    assert mean_interval([1.4]).interval is None and mean_interval([1.4]).mean == 1.4
    assert mean_interval([]).mean is None


def test_the_detection_rate_counts_more_failures_on_the_perturbed_l2() -> None:
    # (original failures, perturbed failures): more, same, fewer, more, more
    found = detection([(0, 1), (1, 1), (2, 1), (1, 3), (0, 2)])
    assert (found.k, found.n, found.rate) == (3, 5, 0.6)
    assert found.interval == pytest.approx(proportion_confint(3, 5, method="wilson"), abs=1e-6)
    assert detection([]).rate is None and detection([]).interval is None


def test_the_sample_and_perturbations_are_the_seeds() -> None:
    assert sample_pks([5, 3, 9, 1], 2, seed=7) == sample_pks([9, 1, 5, 3], 2, seed=7)
    assert sorted(sample_pks([5, 3, 9, 1], 4, seed=1)) == [1, 3, 5, 9]
    steps = ["a", "b", "c", "d"]
    deleted, what = delete_step(steps, item_rng(0, 42))
    k = what["deleted_step"]
    assert deleted == [s for i, s in enumerate(steps, 1) if i != k] and len(deleted) == 3
    assert delete_step(steps, item_rng(0, 42)) == (deleted, what)
    swapped, what = swap_steps(steps, item_rng(0, 42))
    i, j = what["swapped_steps"]
    assert i < j and swapped[i - 1] == steps[j - 1] and swapped[j - 1] == steps[i - 1]
    assert sorted(swapped) == steps
    with pytest.raises(ValueError):
        delete_step(["only"], random.Random(0))
