"""h2e_site/stats/sampling.py's draws: the systematic PPS draw includes every example with its probability pi
(the empirical inclusion frequency over 2,000 seeds within four binomial standard errors of pi), takes exactly
round(sum pi) examples, and the stratified allocation gives a topic smaller than its share all of it."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from h2e_site.stats import sampling

SEEDS = 2000


def test_the_systematic_draw_includes_each_example_with_its_probability() -> None:
    probabilities = {1: 0.1, 2: 0.3, 3: 0.5, 4: 0.8, 5: 0.3, 6: 1.0, 7: 0.0}  # sum 3.0
    counts: Counter[int] = Counter()
    for seed in range(SEEDS):
        drawn = sampling.systematic_pps(probabilities, seed)
        assert len(drawn) == 3  # a fixed size: round(sum pi)
        counts.update(drawn)
    for example, pi in probabilities.items():
        standard_error = math.sqrt(pi * (1 - pi) / SEEDS)
        assert abs(counts[example] / SEEDS - pi) <= 4 * standard_error + 1e-12, (example, counts[example])


def test_a_disagreement_design_draw_matches_its_probabilities() -> None:
    uncertainty = {i: (0.5 if i < 3 else 0.0) for i in range(12)}
    probabilities = sampling.disagreement_probabilities(uncertainty, 4)
    assert sum(probabilities.values()) == pytest.approx(4)
    counts: Counter[int] = Counter()
    for seed in range(SEEDS):
        counts.update(sampling.systematic_pps(probabilities, seed))
    for example, pi in probabilities.items():
        standard_error = math.sqrt(pi * (1 - pi) / SEEDS)
        assert abs(counts[example] / SEEDS - pi) <= 4 * standard_error + 1e-12


def test_the_stratified_allocation_takes_a_small_topic_whole_and_shares_its_surplus() -> None:
    # n = 9 over 3 topics: 3 each; "tiny" has 1 (pi = 1), its 2 left over go to the others: 4 each.
    strata = {**dict.fromkeys(range(10), "big"), **dict.fromkeys(range(10, 15), "mid"), 15: "tiny"}
    probabilities = sampling.stratified_probabilities(strata, 9)
    assert probabilities[15] == 1.0
    assert probabilities[0] == pytest.approx(4 / 10) and probabilities[10] == pytest.approx(4 / 5)
    assert sum(probabilities.values()) == pytest.approx(9)
    # Two small topics: "mid" (5) is then under its share too once "tiny" is whole.
    probabilities = sampling.stratified_probabilities(strata, 14)
    assert probabilities[15] == 1.0 and probabilities[10] == 1.0
    assert probabilities[0] == pytest.approx(8 / 10)


def test_inclusion_after_rounds_is_one_minus_the_product() -> None:
    assert sampling.inclusion_after_rounds([0.4, 0.84]) == pytest.approx(1 - 0.6 * 0.16)
    assert sampling.inclusion_after_rounds([]) == 0.0
