"""The figures of pairwise studies (annotation/kinds/pairwise/comparisons.py), each against a hand computation
or a library."""

from __future__ import annotations

import math
from itertools import count

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from annotation.kinds.pairwise import comparisons as pf
from annotation.kinds.pairwise.comparisons import A_BETTER, B_BETTER, TIE_FAIL, TIE_NONE, Comparison
from h2e_site.stats import wilson_interval
from h2e_site.stats.agreement import confusion_of, kappa

_ids = count()


def answer(
    a: str, b: str, verdict: str, *, item: object = None, coder: object = "h1", a_left: bool = True
) -> Comparison:
    """One answer whose canonical verdict is `verdict` on the pair (a, b), a < b, A shown left or right."""
    left, right = (a, b) if a_left else (b, a)
    outcome = {TIE_NONE: "both_none", TIE_FAIL: "both_fail"}.get(verdict)
    if outcome is None:
        winner = a if verdict == A_BETTER else b
        outcome = "left" if winner == left else "right"
    return Comparison(next(_ids) if item is None else item, coder, right, left, left, outcome)


def results(pairs: dict[tuple[str, str], tuple[int, int, int]]) -> list[Comparison]:
    """(a, b) -> (a wins, b wins, ties): one answer per item, positions alternating."""
    records = []
    for (a, b), (wins_a, wins_b, ties) in pairs.items():
        verdicts = [A_BETTER] * wins_a + [B_BETTER] * wins_b + [TIE_NONE] * ties
        records += [answer(a, b, v, a_left=k % 2 == 0) for k, v in enumerate(verdicts)]
    return records


# --- the record -----------------------------------------------------------------------------------------


def test_a_comparison_is_read_in_the_items_orientation() -> None:
    # "right" with g2 on the left chose g1, which sorts first: A better.
    record = Comparison("i", "h", "g2", "g1", "g2", "right")
    assert record.pair == ("g1", "g2")
    assert record.winner == "g1"
    assert record.canonical == A_BETTER
    assert not record.a_left
    assert Comparison("i", "h", "g1", "g2", "g1", "right").canonical == B_BETTER
    assert Comparison("i", "h", "g1", "g2", "g2", "both_fail").canonical == TIE_FAIL


@pytest.mark.parametrize(
    ("a", "b", "left", "outcome", "field"),
    [
        ("g1", "g2", "g1", "better", "outcome"),
        ("g1", "g1", "g1", "left", "generator_b"),
        ("g1", "g2", "g3", "left", "left"),
    ],
)
def test_a_malformed_record_names_its_field(a: str, b: str, left: str, outcome: str, field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}: "):
        Comparison("i", "h", a, b, left, outcome)


# --- Bradley-Terry --------------------------------------------------------------------------------------


def test_two_generators_match_the_closed_form() -> None:
    # Two generators: w_A + w_B = 2 and wins_A - N w_A / 2 = alpha (w_A - w_B) give
    # w_A / w_B = (wins_A + 2 alpha) / (wins_B + 2 alpha). A 3 wins, B 1, 2 ties: wins 4 and 2 of N = 6.
    records = results({("A", "B"): (3, 1, 2)})
    for alpha in (0.0, pf.ALPHA, 0.5):
        bt = pf.bradley_terry(records, alpha=alpha, resamples=0)
        gap = math.log((4 + 2 * alpha) / (2 + 2 * alpha))
        assert bt.strength("A").strength == pytest.approx(gap / 2, abs=1e-6)  # type: ignore[union-attr]
        assert bt.strength("B").strength == pytest.approx(-gap / 2, abs=1e-6)  # type: ignore[union-attr]
    assert pf.bradley_terry(records, alpha=0.0, resamples=0).win_probability[("A", "B")] == pytest.approx(
        2 / 3
    )


def _mm(wins: np.ndarray, alpha: float) -> np.ndarray:
    """Zermelo's fixed-point iteration of the regularised equations, mean-1 weights; log, centred."""
    n = wins.shape[0]
    games = wins + wins.T
    w = np.ones(n)
    for _ in range(20_000):
        new = np.array(
            [
                (wins[i].sum() + alpha * (w.sum() - w[i]))
                / (sum(games[i, j] / (w[i] + w[j]) for j in range(n) if j != i) + alpha * (n - 1))
                for i in range(n)
            ]
        )
        new *= n / new.sum()
        if np.abs(new - w).max() < 1e-14:
            break
        w = new
    return np.log(w) - np.log(w).mean()


@pytest.mark.parametrize("alpha", [0.0, pf.ALPHA, 0.3])
def test_three_generators_match_a_hand_iteration(alpha: float) -> None:
    records = results({("g1", "g2"): (5, 2, 1), ("g2", "g3"): (4, 3, 2), ("g1", "g3"): (6, 1, 0)})
    expected = _mm(np.array([[0, 5.5, 6], [2.5, 0, 5], [1, 4, 0]]), alpha)
    bt = pf.bradley_terry(records, alpha=alpha, resamples=0)
    assert [bt.strength(g).strength for g in ("g1", "g2", "g3")] == pytest.approx(expected, abs=1e-6)  # type: ignore[union-attr]
    assert [s.generator for s in bt.strengths] == ["g1", "g2", "g3"]
    assert [s.rank for s in bt.strengths] == [1, 2, 3]
    p = bt.win_probability
    assert p[("g1", "g3")] == pytest.approx(1 / (1 + math.exp(expected[2] - expected[0])))
    assert p[("g1", "g3")] + p[("g3", "g1")] == pytest.approx(1)


def test_ilsr_agrees_with_choix_maximum_likelihood() -> None:
    import choix

    records = results(
        {("g1", "g2"): (5, 2, 1), ("g2", "g3"): (4, 3, 2), ("g1", "g3"): (6, 1, 0), ("g3", "g4"): (2, 2, 3)}
    )
    generators = ["g1", "g2", "g3", "g4"]
    data = []  # a decisive answer twice, a tie once each way: the likelihood of half wins, squared
    for r in records:
        a, b = (generators.index(g) for g in r.pair)
        data += (
            [(a, b), (a, b)]
            if r.canonical == A_BETTER
            else [(b, a), (b, a)]
            if r.canonical == B_BETTER
            else [(a, b), (b, a)]
        )
    mle = choix.opt_pairwise(4, data, alpha=0.0, tol=1e-10)
    bt = pf.bradley_terry(records, alpha=0.0, resamples=0)
    assert [bt.strength(g).strength for g in generators] == pytest.approx(mle - mle.mean(), abs=1e-5)  # type: ignore[union-attr]


RECORDS = results({("g1", "g2"): (9, 4, 2), ("g2", "g3"): (8, 5, 1), ("g1", "g3"): (10, 3, 2)})


def test_the_bootstrap_is_reproducible_and_matches_a_loop() -> None:
    first = pf.bradley_terry(RECORDS, resamples=60, seed=7)
    assert first == pf.bradley_terry(RECORDS, resamples=60, seed=7)
    assert first != pf.bradley_terry(RECORDS, resamples=60, seed=8)
    # The same draws, one resample at a time with choix.
    import choix

    items = sorted({r.item for r in RECORDS}, key=repr)
    draws = np.random.default_rng(7).multinomial(len(items), np.full(len(items), 1 / len(items)), size=60)
    fits = []
    for draw in draws:
        wins = np.zeros((3, 3))
        for r in RECORDS:
            a, b = (int(g[1]) - 1 for g in r.pair)
            times = draw[items.index(r.item)]
            if r.canonical == TIE_NONE:
                wins[a, b] += times / 2
                wins[b, a] += times / 2
            else:
                wins[(a, b) if r.canonical == A_BETTER else (b, a)] += times
        fits.append(choix.ilsr_pairwise_dense(wins, alpha=pf.ALPHA, max_iter=10_000))
    fits_array = np.array(fits)
    for k, g in enumerate(("g1", "g2", "g3")):
        s = first.strength(g)
        assert s is not None and s.low is not None and s.high is not None
        assert (s.low, s.high) == pytest.approx(tuple(np.percentile(fits_array[:, k], [2.5, 97.5])), abs=1e-6)
        assert s.low <= s.strength <= s.high
        ranks = [1 + sum(f[j] > f[k] for j in range(3)) for f in fits]
        assert (s.rank_low, s.rank_high) == tuple(np.percentile(ranks, [2.5, 97.5]))
    assert first.samples == 60


@pytest.mark.parametrize(
    ("records", "reason"),
    [
        ([], "0 generator"),
        (results({("g1", "g2"): (1, 0, 0), ("g3", "g4"): (1, 1, 0)}), "do not connect every generator"),
    ],
)
def test_an_undefined_ranking_says_why(records: list[Comparison], reason: str) -> None:
    bt = pf.bradley_terry(records, resamples=10)
    assert bt.strengths == [] and bt.win_probability == {}
    assert reason in bt.undefined


def test_an_unbeaten_generator_stays_finite() -> None:
    bt = pf.bradley_terry(results({("g1", "g2"): (10, 0, 0)}), resamples=20)
    # w_1 / w_2 = (10 + 2 alpha) / (2 alpha), as in the closed form above.
    assert bt.strengths[0].strength == pytest.approx(
        math.log((10 + 2 * pf.ALPHA) / (2 * pf.ALPHA)) / 2, abs=1e-6
    )
    assert bt.samples == 20


# --- agreement on pairs ---------------------------------------------------------------------------------


def test_alpha_matches_a_hand_computation_and_the_package() -> None:
    # Three items, two coders: (A, A), (B, B), (A, B) in canonical outcomes, shown in different positions.
    # Coincidences o_AA = o_BB = 2, o_AB = o_BA = 1, n = 6: D_o = 2/6, D_e = 2 * 3 * 3 / 30; alpha = 1 - 5/9.
    records = [
        answer("g1", "g2", A_BETTER, item=1, coder="h1"),
        answer("g1", "g2", A_BETTER, item=1, coder="h2", a_left=False),
        answer("g1", "g2", B_BETTER, item=2, coder="h1", a_left=False),
        answer("g1", "g2", B_BETTER, item=2, coder="h2"),
        answer("g1", "g2", A_BETTER, item=3, coder="h1"),
        answer("g1", "g2", B_BETTER, item=3, coder="h2"),
        answer("g1", "g2", TIE_FAIL, item=4, coder="h1"),  # one answer: not pairable
    ]
    alpha = pf.human_alpha(records)
    assert alpha.value == pytest.approx(4 / 9)
    assert alpha.n == 3


def test_alpha_is_undefined_with_one_outcome_or_one_item() -> None:
    same = [answer("g1", "g2", TIE_NONE, item=i, coder=c) for i in (1, 2) for c in ("h1", "h2")]
    assert pf.human_alpha(same).value is None
    assert "chance agreement is 1" in pf.human_alpha(same).undefined
    one = [answer("g1", "g2", v, item=1, coder=c) for c, v in (("h1", A_BETTER), ("h2", B_BETTER))]
    assert "only 1 item" in pf.human_alpha(one).undefined
    assert "no item" in pf.human_alpha([]).undefined


def test_the_majority_is_strict_and_never_broken() -> None:
    assert pf.majority([A_BETTER, A_BETTER, B_BETTER]) == A_BETTER
    assert pf.majority([A_BETTER, B_BETTER]) is None
    assert pf.majority([A_BETTER, A_BETTER, B_BETTER, TIE_NONE]) is None  # a plurality of 2 out of 4
    assert pf.majority([TIE_FAIL]) == TIE_FAIL
    records = [answer("g1", "g2", v, item=1, coder=k) for k, v in enumerate([A_BETTER, A_BETTER, TIE_NONE])]
    records += [answer("g1", "g2", v, item=2, coder=k) for k, v in enumerate([A_BETTER, B_BETTER])]
    found = pf.majorities(records)
    assert found.verdicts == {1: A_BETTER} and found.no_majority == [2]


def test_nominal_kappa_matches_sklearn_and_the_binary_helper() -> None:
    first = [A_BETTER, A_BETTER, B_BETTER, TIE_NONE, TIE_FAIL, B_BETTER, A_BETTER, TIE_NONE]
    second = [A_BETTER, B_BETTER, B_BETTER, TIE_NONE, TIE_NONE, B_BETTER, A_BETTER, TIE_FAIL]
    assert kappa(confusion_of(zip(first, second, strict=True))).value == pytest.approx(
        cohen_kappa_score(first, second)
    )
    binary = [(True, True), (True, False), (False, False), (False, False), (True, True)]
    confusion = {h: {j: sum(p == (h, j) for p in binary) for j in (True, False)} for h in (True, False)}
    labels = [(str(a), str(b)) for a, b in binary]
    assert kappa(confusion_of(labels)).value == pytest.approx(kappa(confusion).value)
    assert "only 1 item" in kappa(confusion_of([(A_BETTER, A_BETTER)])).undefined


def test_the_judge_is_compared_with_the_human_majority() -> None:
    humans = []
    for item, verdicts in {
        1: [A_BETTER] * 2,
        2: [B_BETTER] * 3,
        3: [TIE_NONE, TIE_NONE, A_BETTER],
        4: [A_BETTER, B_BETTER],
    }.items():
        humans += [answer("g1", "g2", v, item=item, coder=f"h{k}") for k, v in enumerate(verdicts)]
    humans.append(answer("g1", "g2", A_BETTER, item=5))  # judged by nobody
    judge = [
        answer("g1", "g2", A_BETTER, item=1, coder="j"),  # agrees, both orders
        answer("g1", "g2", A_BETTER, item=1, coder="j", a_left=False),
        answer("g1", "g2", B_BETTER, item=2, coder="j"),  # agrees, then flips
        answer("g1", "g2", A_BETTER, item=2, coder="j", a_left=False),
        answer("g1", "g2", TIE_FAIL, item=3, coder="j"),  # disagrees, one order
        answer("g1", "g2", A_BETTER, item=4, coder="j"),  # no human majority
    ]
    found = pf.judge_human_agreement(humans, judge)
    assert (found.answers.k, found.answers.n) == (3, 5)
    assert found.answers.interval == wilson_interval(3, 5)
    assert (found.consistent.k, found.consistent.n) == (1, 1)  # item 1 only
    assert found.no_majority == 1 and found.not_judged == 1
    human = [A_BETTER, A_BETTER, B_BETTER, B_BETTER, TIE_NONE]
    judged = [A_BETTER, A_BETTER, B_BETTER, A_BETTER, TIE_FAIL]
    assert found.kappa.value == pytest.approx(cohen_kappa_score(human, judged))
    empty = pf.judge_human_agreement(humans, [])
    assert empty.answers.rate is None and empty.answers.undefined.startswith("undefined: ")
    assert empty.kappa.value is None and empty.not_judged == 4


# --- position bias --------------------------------------------------------------------------------------


def test_position_bias_of_decisive_answers() -> None:
    records = [Comparison(k, "h", "g1", "g2", "g1", "left" if k < 7 else "right") for k in range(10)]
    records += [
        Comparison(10, "h", "g1", "g2", "g1", "both_none"),
        Comparison(11, "h", "g1", "g2", "g2", "both_fail"),
    ]
    bias = pf.position_bias(records)
    assert (bias.left.k, bias.left.n, bias.ties) == (7, 10, 2)
    assert bias.left.interval == wilson_interval(7, 10)
    # Two-sided exact test: P(X >= 7) + P(X <= 3) for X ~ Bin(10, 1/2) = 2 (120 + 45 + 10 + 1) / 1024.
    assert bias.p_value == pytest.approx(352 / 1024)


def test_position_bias_without_a_decisive_answer_is_undefined() -> None:
    bias = pf.position_bias([Comparison(1, "h", "g1", "g2", "g1", "both_none")])
    assert bias.left.rate is None and bias.left.interval is None and bias.p_value is None
    assert "no decisive answer" in bias.left.undefined
    assert pf.position_bias([]).ties == 0


def test_the_judges_flip_rate_over_items_asked_in_both_orders() -> None:
    judge = [
        answer("g1", "g2", A_BETTER, item=1, coder="j"),
        answer("g1", "g2", A_BETTER, item=1, coder="j", a_left=False),
        answer("g1", "g2", TIE_NONE, item=2, coder="j"),
        answer("g1", "g2", TIE_NONE, item=2, coder="j", a_left=False),
        answer("g1", "g2", A_BETTER, item=3, coder="j"),
        answer("g1", "g2", B_BETTER, item=3, coder="j", a_left=False),  # the left one won both times: a flip
        answer("g1", "g2", A_BETTER, item=4, coder="j"),  # one order only
    ]
    flips = pf.flip_rate(judge)
    assert (flips.flips.k, flips.flips.n, flips.one_order) == (1, 3, 1)
    assert flips.consistent == {1: A_BETTER, 2: TIE_NONE}
    assert flips.flips.interval == wilson_interval(1, 3)
    assert "both orders" in pf.flip_rate(judge[-1:]).flips.undefined


# --- pairwise against pointwise -------------------------------------------------------------------------


def test_pairwise_against_pointwise_verdicts() -> None:
    pointwise = {(1, "g1"): True, (1, "g2"): False, (2, "g1"): False, (2, "g2"): True}
    pointwise |= {(3, "g1"): True, (3, "g2"): True, (4, "g1"): False, (4, "g2"): False, (5, "g1"): True}
    records = [
        answer("g1", "g2", A_BETTER, item=1),  # agrees
        answer("g1", "g2", B_BETTER, item=1, coder="h2"),  # disagrees
        answer("g1", "g2", B_BETTER, item=2),  # agrees
        answer("g1", "g2", TIE_NONE, item=2, coder="h2"),  # a pairwise tie on a pointwise preference
        answer("g1", "g2", A_BETTER, item=3),  # both pass
        answer("g1", "g2", B_BETTER, item=4),  # both fail
        answer("g1", "g2", A_BETTER, item=5),  # g2 has no pointwise verdict
    ]
    found = pf.pairwise_vs_pointwise(records, pointwise)
    assert (found.agreement.k, found.agreement.n) == (2, 3)
    assert found.agreement.interval == wilson_interval(2, 3)
    assert (found.pairwise_ties, found.both_pass, found.both_fail, found.missing) == (1, 1, 1, 1)
    assert pf.pairwise_vs_pointwise(records[4:], pointwise).agreement.rate is None


def _pointwise_study() -> tuple[list[Comparison], dict[tuple[object, str], bool]]:
    """g1 > g2 > g3 > g4 pairwise; How2Scores g1 3/4, g2 1/4, g3 2/4, g4 0/4 (items of two generations)."""
    records = results(
        {("g1", "g2"): (6, 2, 0), ("g2", "g3"): (5, 3, 0), ("g3", "g4"): (6, 2, 1), ("g1", "g4"): (7, 1, 0)}
    )
    passing = {"g1": 0.75, "g2": 0.25, "g3": 0.5, "g4": 0.0}
    pointwise: dict[tuple[object, str], bool] = {}
    seen: dict[str, int] = {}
    for r in records:
        for g in r.pair:
            k = seen.get(g, 0)
            seen[g] = k + 1
            pointwise[(r.item, g)] = (k % 4) < passing[g] * 4
    return records, pointwise


def test_kendall_tau_between_the_two_rankings() -> None:
    records, pointwise = _pointwise_study()
    found = pf.ranking_tau(records, pointwise, resamples=200, seed=3)
    items = {r.item for r in records}
    scores = [
        np.mean([pointwise[(i, g)] for i in items if (i, g) in pointwise]) for g in ("g1", "g2", "g3", "g4")
    ]
    bt = pf.bradley_terry(records, resamples=0)
    strengths = [bt.strength(g).strength for g in ("g1", "g2", "g3", "g4")]  # type: ignore[union-attr]
    # By hand: BT orders g1 > g2 > g3 > g4, How2Score g1 > g3 > g2 > g4: 5 concordant pairs, 1 discordant.
    assert found.tau == pytest.approx(kendalltau(strengths, scores).statistic) == pytest.approx(4 / 6)
    assert found.low is not None and found.high is not None and found.low <= found.tau <= found.high
    assert 0 < found.samples <= 200
    assert found == pf.ranking_tau(records, pointwise, resamples=200, seed=3)


def test_kendall_tau_undefined_cases() -> None:
    records, pointwise = _pointwise_study()
    level = {key: True for key in pointwise}
    assert "level" in pf.ranking_tau(records, level, resamples=5).undefined
    assert "0 generator" in pf.ranking_tau(records, {}, resamples=5).undefined
    one_pair = [r for r in records if r.pair == ("g1", "g2")]
    found = pf.ranking_tau(one_pair, pointwise, resamples=5)
    assert found.tau is not None and found.n_generators == 2  # two generators: tau is +-1 or undefined
