"""Agreement figures on crafted data, each checked against a value worked out by hand (the arithmetic is in
the comments)."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest

from h2e_site.stats import wilson_interval
from h2e_site.stats.agreement import cohen_kappa, nominal_alpha_of_resamples
from h2e_site.stats.verdicts import (
    Label,
    alpha_binary,
    alpha_first_failure,
    alpha_step_sets,
    bootstrap_alpha_ci,
    judge_agreement,
    label_from_failures,
    leave_one_out,
    majority,
    masi_distance,
)


def binary(matrix: list[list[int | None]]) -> list[Label]:
    """Labels from a coders x units matrix of 1 (failure), 0 (no failure) or None (not labelled)."""
    return [
        Label(coder, unit, bool(value))
        for coder, row in enumerate(matrix)
        for unit, value in enumerate(row)
        if value is not None
    ]


def test_it_computes_binary_alpha_as_worked_out_by_hand_with_missing_labels() -> None:
    # units: [1,1,1], [1,0,-], [0,0,0], [1,0,0]. Coincidences: o00 = 3 + 1 = 4, o11 = 3,
    # o01 = o10 = 1 + 1 = 2; n = 11, n0 = 6, n1 = 5. alpha = 1 - (n-1) * 4 / (2 * 6 * 5) = 1 - 40/60 = 1/3.
    labels = binary([[1, 1, 0, 1], [1, 0, 0, 0], [1, None, 0, 0]])
    assert alpha_binary(labels) == pytest.approx(1 / 3)


def test_it_leaves_out_units_with_a_single_label() -> None:
    with_single = binary([[1, 1, 0, 1, 1], [1, 0, 0, 0, None], [1, None, 0, 0, None]])
    assert alpha_binary(with_single) == pytest.approx(1 / 3)


def test_it_says_alpha_is_undefined_when_everyone_gives_the_same_label() -> None:
    assert alpha_binary(binary([[1, 1], [1, 1]])) is None
    assert alpha_binary(binary([[1, None], [None, 0]])) is None  # nothing pairable


def test_it_computes_first_failure_alpha_by_hand() -> None:
    # unit 1: none/none, unit 2: L2.3/L2.3, unit 3: L2.2/L2.4. n = 6; n_none = n_3 = 2, n_2 = n_4 = 1.
    # Observed disagreement: o(2,4) + o(4,2) = 2. Expected pairs: 36 - (4 + 4 + 1 + 1) = 26.
    # alpha = 1 - (n-1) * 2 / 26 = 16/26.
    labels = [
        label_from_failures("a", 1, False, []),
        label_from_failures("b", 1, False, []),
        label_from_failures("a", 2, True, [([1], [3, 5])]),
        label_from_failures("b", 2, True, [([], [3])]),
        label_from_failures("a", 3, True, [([2], [2])]),
        label_from_failures("b", 3, True, [([2], [4]), ([], [6])]),
    ]
    assert [label.first_failure for label in labels[:3]] == ["none", "none", "L2.3"]
    assert alpha_first_failure(labels) == pytest.approx(16 / 26)


def test_it_calls_a_failure_without_l2_steps_unlocated() -> None:
    assert label_from_failures("a", 1, True, [([2], [])]).first_failure == "unlocated"


def test_it_computes_masi_distances() -> None:
    a, b, c = frozenset({"L2.1"}), frozenset({"L2.1", "L2.2"}), frozenset({"L2.2", "L1.3"})
    assert masi_distance(frozenset(), frozenset()) == 0
    assert masi_distance(a, b) == pytest.approx(1 - 1 / 2 * 2 / 3)  # subset
    assert masi_distance(b, c) == pytest.approx(1 - 1 / 3 * 1 / 3)  # overlap
    assert masi_distance(a, c) == 1  # disjoint
    assert masi_distance(a, frozenset()) == 1


def test_it_computes_step_set_alpha_with_masi_by_hand() -> None:
    # unit 1: {L2.1} vs {L2.1, L2.2} (MASI 2/3); unit 2: {} vs {}. n = 4; n_a = n_b = 1, n_empty = 2.
    # D_o = 2 * 2/3 / 4 = 1/3; D_e = (2 * 2/3 + 2 * 2 * 1 + 2 * 2 * 1) / (4 * 3) = 7/9; alpha = 1 - 3/7 = 4/7.
    labels = [
        label_from_failures("a", 1, True, [([], [1])]),
        label_from_failures("b", 1, True, [([], [1]), ([], [2])]),
        label_from_failures("a", 2, False, []),
        label_from_failures("b", 2, False, []),
    ]
    assert alpha_step_sets(labels) == pytest.approx(4 / 7)


def test_it_matches_the_packages_documented_example_through_both_nominal_paths() -> None:
    # The krippendorff package's docstring: nominal alpha 0.691358 on this matrix.
    rows = [
        [None, None, None, None, None, 3, 4, 1, 2, 1, 1, 3, 3, None, 3],
        [1, None, 2, 1, 3, 3, 4, 3, None, None, None, None, None, None, None],
        [None, None, 2, 1, 3, 4, 4, None, 2, 1, 1, 3, 3, None, 4],
    ]
    labels = [
        label_from_failures(c, u, True, [([], [v])])
        for c, row in enumerate(rows)
        for u, v in enumerate(row)
        if v is not None
    ]
    assert alpha_first_failure(labels) == pytest.approx(0.691358, abs=1e-6)
    assert alpha_step_sets(labels) == pytest.approx(0.691358, abs=1e-6)  # disjoint singletons: nominal


def test_it_bootstraps_a_reproducible_interval_around_alpha() -> None:
    matrix = [[(u * 7 + c) % 3 == 0 or u % 4 == 0 for u in range(40)] for c in range(3)]
    labels = binary([[int(v) for v in row] for row in matrix])
    alpha = alpha_binary(labels)
    first = bootstrap_alpha_ci(labels, seed=7, samples=300)
    again = bootstrap_alpha_ci(labels, seed=7, samples=300)
    other = bootstrap_alpha_ci(labels, seed=8, samples=300)
    assert alpha is not None and first.low is not None and first.high is not None
    assert first == again
    assert first != other
    assert first.low < alpha < first.high
    assert first.samples == 300


def test_it_gives_a_degenerate_interval_for_perfect_agreement() -> None:
    labels = binary([[1, 0, 1, 0, 0], [1, 0, 1, 0, 0]])
    interval = bootstrap_alpha_ci(labels, seed=1, samples=200)
    assert alpha_binary(labels) == pytest.approx(1.0)
    assert (interval.low, interval.high) == (pytest.approx(1.0), pytest.approx(1.0))
    assert 0 < interval.samples <= 200  # resamples with one value only are undefined and left out


def test_it_never_breaks_a_tie() -> None:
    assert majority([True, True, False]) is True
    assert majority([True, False]) is None
    assert majority([True, False, True, False]) is None
    assert majority([]) is None


def test_it_computes_leave_one_out_agreement_and_counts_ties() -> None:
    # unit 0: a=1 b=1 c=0 ; unit 1: a=0 b=0 c=0 ; unit 2: a=1 b=0 (two coders only)
    labels = binary([[1, 0, 1], [1, 0, 0], [0, 0, None]])
    loo = leave_one_out(labels)
    # a: unit 0 others {1,0} tie; unit 1 others {0,0} -> agree; unit 2 other {0} -> disagree.
    assert (loo[0].n, loo[0].agreed, loo[0].ties) == (2, 1, 1)
    # c: unit 0 others {1,1} -> disagree; unit 1 -> agree.
    assert (loo[2].n, loo[2].agreed, loo[2].ties, loo[2].rate) == (2, 1, 0, 0.5)


def test_it_computes_cohens_kappa_by_hand() -> None:
    # 20 both failure, 5 humans-only, 10 judge-only, 15 both none: p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5.
    confusion = {True: {True: 20, False: 5}, False: {True: 10, False: 15}}
    assert cohen_kappa(confusion) == pytest.approx(0.4)
    assert cohen_kappa({True: {True: 0, False: 0}, False: {True: 0, False: 0}}) is None
    assert cohen_kappa({True: {True: 4, False: 0}, False: {True: 0, False: 0}}) is None  # p_e = 1


def test_it_tables_a_judge_against_the_human_majority_per_class() -> None:
    # units 0-3: human majorities 1, 1, 0, tie (unit 3 has two labels 1/0); unit 4 not judged.
    humans = binary([[1, 1, 0, 1, 0], [1, 0, 0, 0, 0], [0, 1, 1, None, None]])
    judge = {0: True, 1: False, 2: False, 3: True}
    table = judge_agreement(humans, judge)
    assert (table.overall.n, table.overall.agreed, table.overall.ties) == (3, 2, 1)
    assert (table.has_failure.n, table.has_failure.agreed) == (2, 1)
    assert (table.no_failure.n, table.no_failure.agreed) == (1, 1)
    assert table.cells == (1, 1, 0, 1)
    assert table.n_not_judged == 1
    # p_o = 2/3; p_e = (2/3)(1/3) + (1/3)(2/3) = 4/9; kappa = (2/3 - 4/9) / (5/9) = 0.4
    assert table.cohen_kappa == pytest.approx(0.4)


def test_it_computes_wilson_intervals() -> None:
    low, high = wilson_interval(8, 10) or (math.nan, math.nan)
    assert (low, high) == (pytest.approx(0.4902, abs=1e-4), pytest.approx(0.9433, abs=1e-4))
    assert wilson_interval(0, 0) is None


def test_it_computes_every_resamples_alpha_as_the_package_does() -> None:
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 3, size=(30, 3)).astype(float)  # three values, 0-6 labels per unit
    counts = counts[counts.sum(axis=1) >= 2]
    n = counts.shape[0]
    multiplicities = rng.multinomial(n, np.full(n, 1 / n), size=20)
    ours = nominal_alpha_of_resamples(counts, multiplicities)
    for row, alpha in zip(multiplicities, ours, strict=True):
        resample = np.repeat(counts, row, axis=0)
        assert alpha == pytest.approx(
            krippendorff.alpha(value_counts=resample, level_of_measurement="nominal")
        )
    same = np.array([[2.0, 0.0], [3.0, 0.0]])  # one value only: undefined
    assert np.isnan(nominal_alpha_of_resamples(same, np.array([[1, 1]]))).all()
