"""Paired comparisons between generators (#12 item 2): exact McNemar against scipy and statsmodels, Holm
against statsmodels and a hand computation, the discordant counts against a plain loop over the database
rows, and the leaderboard / compare pages that show them."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar

from judging import paired
from judging.models import Generator, Judge, Judgment
from tests.factories import make_generation, make_generator, make_judge, make_judgment, make_procedure

FAIL = [("Misses a step.", [1], [1])]


@given(st.integers(0, 60), st.integers(0, 60))
def test_exact_mcnemar_is_scipys_binomial_test_and_statsmodels_mcnemar(a_only: int, b_only: int) -> None:
    p = paired.mcnemar_exact_p(a_only, b_only)
    if a_only + b_only == 0:
        assert p == 1.0
        return
    assert p == pytest.approx(binomtest(a_only, a_only + b_only, 0.5).pvalue, rel=1e-9, abs=1e-15)
    table = [[5, a_only], [b_only, 7]]  # the concordant cells do not enter the exact test
    assert p == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9, abs=1e-15)


def test_exact_mcnemar_by_hand() -> None:
    # 8 discordant, split 1 / 7: P(X <= 1) = (1 + 8) / 256, two-sided 18 / 256
    assert paired.mcnemar_exact_p(1, 7) == pytest.approx(18 / 256)
    assert paired.mcnemar_exact_p(4, 4) == 1.0


@settings(max_examples=25)  # each call of multipletests costs ~0.1 s
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), max_size=30))
def test_holm_is_statsmodels_multipletests(p_values: list[float]) -> None:
    from statsmodels.stats.multitest import multipletests

    expected = list(multipletests(p_values, method="holm")[1]) if p_values else []
    assert paired.holm(p_values) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.02, 0.04 times 3, 2, 1 -> 0.03, 0.04, 0.04 (monotone), back in the given order
    assert paired.holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert paired.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert paired.holm([]) == []


def _world(pass_rates: dict[str, float], n: int, seed: int = 7) -> tuple[Judge, dict[str, Generator]]:
    """One judge, generators passing each example with the given rates, over n shared examples."""
    rng = random.Random(seed)
    judge = make_judge(model="judge")
    procedures = [make_procedure(goal=f"Goal {i}") for i in range(n)]
    generators = {}
    for name, rate in pass_rates.items():
        generator = make_generator(model=name, generator_id=name)
        generators[name] = generator
        for procedure in procedures:
            generation = make_generation(generator=generator, procedure=procedure)
            make_judgment(generation=generation, judge=judge, failures=() if rng.random() < rate else FAIL)
    return judge, generators


def _discordant_by_loop(judge: Judge, a: Generator, b: Generator) -> tuple[int, int]:
    def verdicts(g: Generator) -> dict[int, bool]:
        rows = Judgment.objects.filter(judge=judge, generator=g, parse_failed=False)
        return {j.generation.procedure_id: not j.has_failure for j in rows.select_related("generation")}

    va, vb = verdicts(a), verdicts(b)
    shared = va.keys() & vb.keys()
    return sum(va[p] and not vb[p] for p in shared), sum(vb[p] and not va[p] for p in shared)


@pytest.mark.django_db
def test_it_counts_discordant_examples_and_adjusts_across_the_judges_pairs() -> None:
    judge, generators = _world({"strong": 0.9, "mid": 0.55, "weak": 0.2}, n=40)
    a_generation = generators["weak"].generations.first()
    assert a_generation is not None
    Judgment.objects.filter(generation=a_generation).update(parse_failed=True)  # left out of the pairs
    pairs = paired.paired_tests()[judge.judge_id]
    assert pairs.n_pairs == 3
    raw = []
    for a, b in [("mid", "strong"), ("mid", "weak"), ("strong", "weak")]:
        test = pairs.between(a, b)
        assert test is not None and (test.generator_a, test.generator_b) == (a, b)
        assert (test.a_only, test.b_only) == _discordant_by_loop(judge, generators[a], generators[b])
        assert test.n_shared == (39 if "weak" in (a, b) else 40)
        assert test.p_value == pytest.approx(binomtest(test.a_only, test.n_discordant).pvalue)
        raw.append(test.p_value)
    adjusted = paired.holm(raw)
    tests = [pairs.between(a, b) for a, b in [("mid", "strong"), ("mid", "weak"), ("strong", "weak")]]
    assert [t.p_holm for t in tests if t] == pytest.approx(adjusted)
    strong_weak = pairs.between("strong", "weak")
    assert strong_weak is not None and strong_weak.separable
    assert pairs.separability == pytest.approx(pairs.n_separable / 3)


@pytest.mark.django_db
def test_it_pairs_only_the_examples_both_were_judged_on() -> None:
    judge = make_judge()
    a, b = make_generator(generator_id="a"), make_generator(generator_id="b")
    shared, only_a = make_procedure(goal="Both"), make_procedure(goal="A only")
    make_judgment(generation=make_generation(generator=a, procedure=shared), judge=judge)
    make_judgment(generation=make_generation(generator=b, procedure=shared), judge=judge, failures=FAIL)
    make_judgment(generation=make_generation(generator=a, procedure=only_a), judge=judge)
    test = paired.paired_tests()[judge.judge_id].between("a", "b")
    assert test is not None and (test.n_shared, test.a_only, test.b_only, test.p_value) == (1, 1, 0, 1.0)


@pytest.mark.django_db
def test_the_leaderboard_marks_separable_neighbours_and_states_separability(admin_client: Client) -> None:
    judge, _ = _world({"strong": 0.95, "weak": 0.1, "weaker": 0.08}, n=30)
    html = admin_client.get(reverse("judging:leaderboard")).content.decode()
    pairs = paired.paired_tests()[judge.judge_id]
    assert f"separates {pairs.n_separable} of 3 pairs" in html
    assert "≠ next" in html and "≈ next" in html  # strong vs weak separable, weak vs weaker not
    body = admin_client.get(reverse("api:leaderboard")).json()
    rows: list[dict[str, Any]] = body["results"] if isinstance(body, dict) else body
    by_generator = {row["generator_id"]: row for row in rows}
    assert by_generator["strong"]["separable_from_next"] is True
    assert by_generator["weak"]["separable_from_next"] is False
    assert by_generator["weaker"]["separable_from_next"] is None  # last of its judge
    csv = admin_client.get(reverse("judging:leaderboard_csv")).content.decode()
    assert "p_holm_next,separable_from_next" in csv.splitlines()[0]


@pytest.mark.django_db
def test_the_compare_page_lists_discordant_examples_and_opens_them_side_by_side(admin_client: Client) -> None:
    judge = make_judge(model="judge")
    a, b = (
        make_generator(model="model-a", generator_id="a"),
        make_generator(model="model-b", generator_id="b"),
    )
    both_pass, a_wins = make_procedure(goal="Both pass"), make_procedure(goal="Only <A> passes")
    for procedure, b_fails in [(both_pass, False), (a_wins, True)]:
        make_judgment(generation=make_generation(generator=a, procedure=procedure), judge=judge)
        make_judgment(
            generation=make_generation(generator=b, procedure=procedure),
            judge=judge,
            failures=[("B forgot <script>", [2], [1])] if b_fails else (),
        )
    query = {"judge": judge.judge_id, "a": "a", "b": "b"}
    html = admin_client.get(reverse("judging:compare"), query).content.decode()
    assert "Only &lt;A&gt; passes" in html and "Both pass" not in html
    assert "A only" in html and "1 / 0" in html.replace('<span class="muted">/</span>', "/")
    page = admin_client.get(reverse("judging:compare_example", args=[a_wins.pk]), query).content.decode()
    assert "B forgot &lt;script&gt;" in page and "model-a" in page and "model-b" in page
    assert "No critical failures." in page
    assert admin_client.get(reverse("judging:compare"), {**query, "b": "nope"}).status_code == 404


@pytest.mark.django_db
def test_compare_pages_need_staff(client: Client) -> None:
    response = client.get(reverse("judging:compare"), {"judge": "x", "a": "a", "b": "b"})
    assert response.status_code in (302, 403)


@pytest.mark.django_db
def test_cached_paired_tests_follow_every_new_judgment() -> None:
    from judging import versions

    judge, generators = _world({"a": 0.9, "b": 0.2}, n=12)
    before = paired.paired_tests([judge.judge_id])[judge.judge_id].between("a", "b")
    version = versions.judgments_version()
    assert paired.paired_tests([judge.judge_id])[judge.judge_id].between("a", "b") == before  # cached
    procedure = make_procedure(goal="One more")
    for name, failures in [("a", ()), ("b", FAIL)]:
        generation = make_generation(generator=generators[name], procedure=procedure)
        make_judgment(generation=generation, judge=judge, failures=failures)
    assert versions.judgments_version() != version
    after = paired.paired_tests([judge.judge_id])[judge.judge_id].between("a", "b")
    assert after is not None and before is not None
    assert (after.n_shared, after.a_only) == (before.n_shared + 1, before.a_only + 1)
