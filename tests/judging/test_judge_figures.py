"""The judge-only half of the report card (#12 item 3): Cohen's kappa and Gwet's AC1 by hand and against
statsmodels, the §D.5 length-bias regression against an independent maximum-likelihood fit, and the
instrument, other-judge, cost and flip figures read off crafted rows."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.optimize import minimize
from statsmodels.stats.inter_rater import cohens_kappa

from annotation.kinds.critical_failures import judge_figures
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.stats.agreement import Confusion, cohen_kappa, gwet_ac1, observed_agreement
from judging.job_kinds import JUDGE
from judging.models import JudgeError, Judgment
from tests.factories import make_generation, make_judge, make_judgment, make_procedure

FAIL = [("Misses a step.", [1], [1])]


def confusion(tt: int, tf: int, ft: int, ff: int) -> Confusion:
    return {True: {True: tt, False: tf}, False: {True: ft, False: ff}}


def test_kappa_and_ac1_by_hand() -> None:
    # n = 50, p_o = 35/50 = .7; first rater says True 25/50 = .5, second 30/50 = .6.
    # kappa: p_e = .5 x .6 + .5 x .4 = .5, (.7 - .5) / .5 = .4
    # AC1: pi = (.5 + .6) / 2 = .55, p_e = 2 x .55 x .45 = .495, (.7 - .495) / .505
    table = confusion(20, 5, 10, 15)
    assert observed_agreement(table) == pytest.approx(0.7)
    assert cohen_kappa(table) == pytest.approx(0.4)
    assert gwet_ac1(table) == pytest.approx(0.205 / 0.505)


def test_ac1_stays_high_where_kappa_collapses_on_one_dominant_class() -> None:
    # 90 % raw agreement, both raters say True 95 % of the time:
    # kappa: p_e = .95^2 + .05^2 = .905, (.9 - .905) / .095 = -1/19; AC1: p_e = 2 x .95 x .05 = .095
    table = confusion(90, 5, 5, 0)
    assert cohen_kappa(table) == pytest.approx(-1 / 19)
    assert gwet_ac1(table) == pytest.approx((0.9 - 0.095) / 0.905)


@pytest.mark.parametrize("cells", [(20, 5, 10, 15), (3, 0, 1, 9), (7, 7, 2, 40), (1, 2, 3, 4)])
def test_kappa_is_statsmodels(cells: tuple[int, int, int, int]) -> None:
    tt, tf, ft, ff = cells
    assert cohen_kappa(confusion(*cells)) == pytest.approx(cohens_kappa(np.array([[tt, tf], [ft, ff]])).kappa)


def test_undefined_agreement_is_none() -> None:
    assert cohen_kappa(confusion(0, 0, 0, 0)) is None
    assert gwet_ac1(confusion(0, 0, 0, 0)) is None
    assert cohen_kappa(confusion(5, 0, 0, 0)) is None  # chance agreement 1


def _crafted_rows(n: int = 400, seed: int = 3) -> list[tuple[bool, float, int, int, int | None]]:
    """Verdicts drawn from a known logistic model: log-odds of no failure = -2 + 0.02 rho + 0.1 steps."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        rho, steps, resources = rng.uniform(40, 160), rng.randint(5, 15), rng.randint(0, 6)
        topic = rng.choice([1, 2, None])
        p = 1 / (1 + math.exp(-(-2 + 0.02 * rho + 0.1 * steps)))
        rows.append((rng.random() < p, rho, steps, resources, topic))
    return rows


def _independent_fit(rows: list[tuple[bool, float, int, int, int | None]]) -> tuple[float, float]:
    """beta and standard error of rho by minimising the negative log-likelihood with scipy and inverting the
    observed information X' W X by hand: the same design as the app's (intercept, rho, steps, resources,
    topic dummies with topic 1 as baseline), none of the app's code."""
    y = np.array([r[0] for r in rows], dtype=float)
    x = np.array([[1.0, r[1], r[2], r[3], float(r[4] == 2), float(r[4] is None)] for r in rows], dtype=float)

    def nll(beta: np.ndarray) -> float:
        eta = x @ beta
        return float(np.sum(np.logaddexp(0, eta) - y * eta))

    def grad(beta: np.ndarray) -> np.ndarray:
        return x.T @ (1 / (1 + np.exp(-(x @ beta))) - y)

    beta = minimize(nll, np.zeros(x.shape[1]), jac=grad, method="BFGS", options={"gtol": 1e-10}).x
    p = 1 / (1 + np.exp(-(x @ beta)))
    covariance = np.linalg.inv(x.T @ (x * (p * (1 - p))[:, None]))
    return float(beta[1]), float(math.sqrt(covariance[1, 1]))


def test_length_bias_is_the_maximum_likelihood_logit_with_its_wald_interval() -> None:
    rows = _crafted_rows()
    bias = judge_figures.length_bias(rows)
    beta, se = _independent_fit(rows)
    assert bias.n == 400 and bias.problem == ""
    assert bias.odds_ratio == pytest.approx(math.exp(beta), rel=1e-5)
    assert bias.ci_low == pytest.approx(math.exp(beta - 1.959964 * se), rel=1e-4)
    assert bias.ci_high == pytest.approx(math.exp(beta + 1.959964 * se), rel=1e-4)
    assert bias.ci_low is not None and bias.ci_low > 1.0  # the crafted judge does favour longer answers
    assert bias.percent_per_10_points == pytest.approx(100 * (math.exp(beta) ** 10 - 1), rel=1e-4)


def test_length_bias_says_why_it_cannot_be_estimated() -> None:
    assert "19 examples" in judge_figures.length_bias(_crafted_rows(19)).problem
    same = [(True, *row[1:]) for row in _crafted_rows(50)]
    assert "every verdict is the same" in judge_figures.length_bias(same).problem  # type: ignore[arg-type]
    assert judge_figures.length_bias(same).odds_ratio is None  # type: ignore[arg-type]


def test_length_bias_drops_a_covariate_that_never_varies() -> None:
    rows = [(row[0], row[1], 8, 2, None) for row in _crafted_rows(200)]  # one step count, one topic
    bias = judge_figures.length_bias(rows)
    assert bias.odds_ratio is not None and bias.problem == ""


@pytest.mark.django_db
def test_length_bias_rows_read_rho_steps_resources_and_topic_from_the_database() -> None:
    judge = make_judge()
    procedure = make_procedure(steps=["a", "b", "c"], topic="Health")
    procedure.n_tokens, procedure.resources = 40, ["oil", "cup"]
    procedure.save()
    generation = make_generation(procedure=procedure)
    generation.n_tokens = 50
    generation.save()
    make_judgment(generation=generation, judge=judge, failures=FAIL)
    make_judgment(judge=judge, parse_failed=True)  # left out
    assert judge_figures.length_bias_rows(judge) == [(False, 125.0, 3, 2, procedure.topic_id)]


@pytest.mark.django_db
def test_instrument_failures_count_parse_failures_and_failed_requests_apart() -> None:
    judge = make_judge()
    make_judgment(judge=judge)
    make_judgment(judge=judge, failures=FAIL)
    make_judgment(judge=judge, parse_failed=True)
    JudgeError.objects.create(judge=judge, generation=make_generation(), error="HTTP 503")
    figures = judge_figures.instrument(judge)
    assert (figures.n_judgments, figures.parse_failures.k, figures.parse_failures.n, figures.n_errors) == (
        3,
        1,
        3,
        1,
    )


@pytest.mark.django_db
def test_agreement_with_other_judges_is_counted_item_by_item() -> None:
    judge, other = make_judge(model="judge-a"), make_judge(model="judge-b")
    # (this judge fails it, the other fails it) on four generations; a fifth only this judge scored.
    for mine, theirs in [(True, True), (True, False), (False, False), (False, False)]:
        generation = make_generation()
        make_judgment(generation=generation, judge=judge, failures=FAIL if mine else ())
        make_judgment(generation=generation, judge=other, failures=FAIL if theirs else ())
    make_judgment(judge=judge)
    (pair,) = judge_figures.other_judges(judge)
    assert pair.other == other and pair.n == 4
    assert pair.agreement == pytest.approx(3 / 4)
    # p_o = .75, shares .5 and .25: p_e = .5 x .25 + .5 x .75 = .5, kappa = .5
    assert pair.kappa.value == pytest.approx(0.5)


@pytest.mark.django_db
def test_cost_and_latency_come_from_the_usage_its_jobs_recorded(tmp_path: object) -> None:
    judge = make_judge(model="judge-priced")
    for n, prompt, completion, latency in [(3, 3000, 600, 6.0), (1, 1000, 200, 2.0)]:
        usage = {"n": n, "prompt_tokens": prompt, "completion_tokens": completion, "latency_s": latency}
        Job.objects.create(
            kind=JUDGE, status=JobStatus.SUCCEEDED, parameters={"judge": judge.pk, "usage": usage}
        )
    Job.objects.create(kind=JUDGE, status=JobStatus.SUCCEEDED, parameters={"judge": judge.pk + 99})
    cost = judge_figures.cost(judge)
    assert (cost.n_jobs, cost.n_answered) == (2, 4)
    assert cost.tokens_per_judgment == (1000.0, 200.0)
    assert cost.latency_per_judgment_s == pytest.approx(2.0)
    prices = judge_figures.Cost(2, 4, 4000, 800, 0, 8.0, (2.0, 8.0))
    assert prices.usd_per_judgment == pytest.approx((1000 * 2.0 + 200 * 8.0) / 1e6)


def test_prices_are_read_per_model_from_a_yaml_file(tmp_path: object) -> None:
    from pathlib import Path

    file = Path(str(tmp_path)) / "prices.yaml"
    file.write_text("gpt-4.1:\n  prompt: 2.0\n  completion: 8.0\n", encoding="utf-8")
    assert judge_figures.prices("gpt-4.1", file) == (2.0, 8.0)
    assert judge_figures.prices("unknown", file) is None
    assert judge_figures.prices("gpt-4.1", file.with_name("missing.yaml")) is None


@pytest.mark.django_db
def test_flips_are_the_share_of_rerun_verdicts_that_changed() -> None:
    judge = make_judge()
    for previous, now in [(True, False), (False, False), (True, True), (None, True)]:
        judgment = make_judgment(judge=judge, failures=FAIL if now else ())
        Judgment.objects.filter(pk=judgment.pk).update(previous_has_failure=previous)
    flips = judge_figures.flips(judge)
    assert (flips.k, flips.n) == (1, 3)
