"""Cross-judge robustness: Kendall tau-b and Spearman rho between judges' rankings, checked by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from judging import rankings
from tests.factories import (
    make_generation,
    make_generator,
    make_judge,
    make_judgment,
    make_procedure,
    make_user,
)

# Judge A and B over five generators; A ties g2/g3, B ties g3/g4.
SCORES_A = {"g1": 0.9, "g2": 0.8, "g3": 0.8, "g4": 0.5, "g5": 0.3}
SCORES_B = {"g1": 0.7, "g2": 0.9, "g3": 0.6, "g4": 0.6, "g5": 0.2}
# By hand: 10 pairs, concordant 7, discordant 1 (g1,g2), one pair tied only in A, one only in B:
# tau_b = (7 - 1) / sqrt((10 - 1) * (10 - 1)) = 6 / 9.
TAU_B = 6 / 9
# Average ranks A = [5, 3.5, 3.5, 2, 1], B = [4, 5, 2.5, 2.5, 1]; Pearson on them = 7.25 / sqrt(9.5 * 9.5).
RHO = 7.25 / 9.5


def test_it_computes_tau_b_and_rho_with_ties_as_by_hand() -> None:
    n, tau, rho = rankings.rank_correlation(SCORES_A, SCORES_B)
    assert n == 5
    assert tau == pytest.approx(TAU_B, abs=1e-12)
    assert rho == pytest.approx(RHO, abs=1e-12)


def test_it_gives_one_for_the_same_order_and_minus_one_for_the_reverse() -> None:
    a = {"x": 0.1, "y": 0.2, "z": 0.3, "w": 0.9}
    same = {k: v * 0.5 for k, v in a.items()}  # other values, same order
    reverse = {k: -v for k, v in a.items()}
    assert rankings.rank_correlation(a, same) == (4, pytest.approx(1.0), pytest.approx(1.0))
    assert rankings.rank_correlation(a, reverse) == (4, pytest.approx(-1.0), pytest.approx(-1.0))


def test_it_uses_only_the_generators_both_judges_scored() -> None:
    a = {"x": 0.1, "y": 0.2, "z": 0.3, "only-a": 0.0}
    b = {"x": 0.3, "y": 0.2, "z": 0.1, "only-b": 1.0}
    n, tau, rho = rankings.rank_correlation(a, b)
    assert n == 3 and tau == pytest.approx(-1.0) and rho == pytest.approx(-1.0)


def test_it_leaves_undefined_coefficients_empty() -> None:
    assert rankings.rank_correlation({"x": 0.5}, {"x": 0.4}) == (1, None, None)
    assert rankings.rank_correlation({"x": 0.5, "y": 0.5}, {"x": 0.1, "y": 0.9}) == (2, None, None)
    assert rankings.rank_correlation({}, {"x": 1.0}) == (0, None, None)


def _judged_world() -> dict[str, Any]:
    """Five generators, ten procedures; judges A and B give SCORES_A/SCORES_B, judge C judges only g1."""
    procedures = [make_procedure(goal=f"Goal {i}") for i in range(10)]
    generators = {name: make_generator(model=f"model-{name}", generator_id=name) for name in SCORES_A}
    judges = {
        "A": make_judge(model="a-judge", judge_id="judge-a"),
        "B": make_judge(model="b-judge", judge_id="judge-b"),
        "C": make_judge(model="c-judge", judge_id="judge-c"),
    }
    for name, generator in generators.items():
        generations = [make_generation(generator=generator, procedure=p) for p in procedures]
        for key, scores in (("A", SCORES_A), ("B", SCORES_B)):
            n_failing = round((1 - scores[name]) * 10)
            for i, generation in enumerate(generations):
                failures = [("Misses a step", [1], [1])] if i < n_failing else []
                make_judgment(generation=generation, judge=judges[key], failures=failures)
        if name == "g1":
            make_judgment(generation=generations[0], judge=judges["C"])
    return {"generators": generators, "judges": judges}


@pytest.mark.django_db
def test_it_correlates_every_pair_of_judges_from_their_scores() -> None:
    _judged_world()
    result = rankings.judge_rank_correlations()
    assert [j.judge_id for j in result.judges] == ["judge-a", "judge-b", "judge-c"]
    assert [j.n_generators for j in result.judges] == [5, 5, 1]
    ab = result.pair("judge-a", "judge-b")
    assert ab is not None and ab.n_generators == 5
    assert ab.kendall_tau == pytest.approx(TAU_B) and ab.spearman_rho == pytest.approx(RHO)
    ac = result.pair("judge-c", "judge-a")
    assert ac is not None and (ac.n_generators, ac.kendall_tau, ac.spearman_rho) == (1, None, None)
    assert len(result.pairs) == 3
    matrix = result.matrix()
    assert matrix[0][1][0] is None and matrix[0][1][1] is ab and matrix[1][1][0] is ab


@pytest.mark.django_db
def test_it_serves_the_rank_correlations_as_json(admin_client: Client) -> None:
    _judged_world()
    response = admin_client.get(reverse("api:judge-rank-correlation"))
    assert response.status_code == 200
    data = response.json()
    assert [j["judge_id"] for j in data["judges"]] == ["judge-a", "judge-b", "judge-c"]
    pair = next(p for p in data["pairs"] if {p["judge_a"], p["judge_b"]} == {"judge-a", "judge-b"})
    assert pair["n_generators"] == 5
    assert math.isclose(pair["kendall_tau"], TAU_B) and math.isclose(pair["spearman_rho"], RHO)
    assert any(p["kendall_tau"] is None for p in data["pairs"])


@pytest.mark.django_db
def test_it_ranks_by_the_strict_score_when_asked(admin_client: Client) -> None:
    world = _judged_world()
    # Parse failures change the strict score only: g1 gets nine parse failures under A, which the h2e score
    # leaves out and the strict score counts: strict A(g1) = 1 - 10/19 = 0.47, below g4 (0.5).
    generator = world["generators"]["g1"]
    for i in range(9):
        make_judgment(
            generation=make_generation(generator=generator, procedure=make_procedure(goal=f"Extra {i}")),
            judge=world["judges"]["A"],
            parse_failed=True,
        )
    h2e = admin_client.get(reverse("api:judge-rank-correlation")).json()
    strict = admin_client.get(reverse("api:judge-rank-correlation"), {"score": "strict"}).json()
    pick = lambda d: next(p for p in d["pairs"] if p["judge_b"] == "judge-b" and p["judge_a"] == "judge-a")  # noqa: E731
    assert pick(h2e)["kendall_tau"] == pytest.approx(TAU_B)
    # By hand: (g1, g3) and (g1, g4) now discordant too: C = 6, D = 2, tau_b = 4 / 9.
    assert pick(strict)["kendall_tau"] == pytest.approx(4 / 9)


@pytest.mark.django_db
def test_it_shows_the_rank_correlation_matrix(admin_client: Client) -> None:
    _judged_world()
    html = admin_client.get(reverse("judging:rank_correlation")).content.decode()
    assert "\u03c4 0.67" in html and "\u03c1 0.76" in html  # tau, rho and "n = 5" in html
    assert "n = 1" in html  # the undefined pair is shown with its n
    assert reverse("api:judge-rank-correlation") in html


@pytest.mark.django_db
def test_it_says_two_judges_are_needed(admin_client: Client) -> None:
    html = admin_client.get(reverse("judging:rank_correlation")).content.decode()
    assert "Needs two judges" in html


@pytest.mark.django_db
def test_it_keeps_rank_correlations_to_staff(client: Client) -> None:
    for url in (reverse("judging:rank_correlation"), reverse("api:judge-rank-correlation")):
        assert client.get(url).status_code in {302, 401, 403}, url
    client.force_login(make_user(is_staff=False))
    assert client.get(reverse("judging:rank_correlation")).status_code == 403
    assert client.get(reverse("api:judge-rank-correlation")).status_code == 403


@pytest.mark.django_db
def test_it_refuses_posts_to_rank_correlations(admin_client: Client) -> None:
    assert admin_client.post(reverse("judging:rank_correlation")).status_code == 405
    assert admin_client.post(reverse("api:judge-rank-correlation")).status_code == 405


def test_vectorised_tau_b_is_scipys_on_every_row() -> None:
    import numpy as np
    from scipy.stats import kendalltau

    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, size=(200, 7)).astype(float)  # many ties
    y = rng.integers(0, 4, size=(200, 7)).astype(float)
    x[0] = 1.0  # a constant row: undefined
    ours = rankings.tau_b_rows(x, y)
    assert math.isnan(ours[0])
    for k in range(1, 200):
        expected = kendalltau(x[k], y[k]).statistic
        assert (math.isnan(ours[k]) and math.isnan(expected)) or ours[k] == pytest.approx(expected, abs=1e-12)


def _two_judges_over(n_examples: int, rates: dict[str, tuple[float, float]]) -> None:
    """Judges x and y; each generator passes an example with its rate under each judge (deterministic)."""
    procedures = [make_procedure(goal=f"Goal {i}") for i in range(n_examples)]
    judges = make_judge(model="x"), make_judge(model="y")
    for name, per_judge in rates.items():
        generator = make_generator(model=name, generator_id=name)
        for i, procedure in enumerate(procedures):
            generation = make_generation(generator=generator, procedure=procedure)
            for judge, rate in zip(judges, per_judge, strict=True):
                passes = (i * 37 % n_examples) < rate * n_examples
                make_judgment(generation=generation, judge=judge, failures=() if passes else FAIL)


FAIL = [("Misses a step.", [1], [1])]


@pytest.mark.django_db
def test_the_tau_interval_is_a_fixed_seed_bootstrap_over_examples() -> None:
    _two_judges_over(30, {"g1": (0.9, 0.85), "g2": (0.6, 0.65), "g3": (0.55, 0.5), "g4": (0.2, 0.3)})
    first = rankings.judge_rank_correlations().pairs[0]
    again = rankings.judge_rank_correlations().pairs[0]
    assert first.kendall_tau == pytest.approx(1.0)
    assert first.tau_ci_low is not None and first.tau_ci_high is not None
    assert (first.tau_ci_low, first.tau_ci_high) == (again.tau_ci_low, again.tau_ci_high)  # seeded
    assert first.tau_ci_low <= first.kendall_tau <= first.tau_ci_high
    assert first.tau_ci_low < 1.0  # g2 and g3 are close: some resamples swap them under one judge
    assert 900 <= first.tau_samples <= 1000
    other_seed = rankings.judge_rank_correlations(seed=1).pairs[0]
    assert other_seed.tau_ci_low is not None


@pytest.mark.django_db
def test_the_bootstrap_recomputes_how2score_from_resampled_examples() -> None:
    """With every example taken once (weights all 1) the resampled scores are the How2Scores themselves."""
    import numpy as np

    from judging import paired, selectors

    _two_judges_over(20, {"g1": (0.9, 0.8), "g2": (0.4, 0.5), "g3": (0.1, 0.2)})
    verdicts = paired.load_verdicts()
    columns = np.unique(np.concatenate([v.procedure_pks for v in verdicts.values()]))
    ones = np.ones((1, columns.size), dtype=np.int64)
    for row in selectors.how2score_leaderboard():
        v = verdicts[row.judge_id]
        scores = rankings._resampled_scores(v, ones, columns, strict=False)
        assert scores[0, v.row(row.generator_id)] == pytest.approx(row.score.how2score)
