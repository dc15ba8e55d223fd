"""A judge's report card against the humans of a study (#12 item 3): agreement overall and per class with
Wilson intervals, kappa and AC1, the human leave-one-out band and the trivial baselines on the same items,
each checked against a hand computation on a study annotated through the real services; the page and the
API to staff only."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.kinds.critical_failures.report_card import fit_length_threshold, report_card
from h2e_site.stats import wilson_interval
from judging.models import Generation
from mining.models import Procedure
from tests.annotation.conftest import make_study
from tests.annotation.test_agreement_pages import annotate, items_in_order, verdict
from tests.factories import make_judge

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged() -> dict[str, object]:
    """The 4-item study of test_agreement_pages (human majorities: item 0 failure, item 2 none, items 1 and
    3 tied); the judge judged items 0 and 2 only, and says "failure" on both."""
    study = make_study(n_items=4, k=4, slug="card", items_per_participant=0)
    annotate(study)
    judge = make_judge(model="org/judge-under-test")
    items = items_in_order(study)
    verdict(judge, items[0], True)
    verdict(judge, items[2], True)
    tokens = [(50, 100), (80, 100), (100, 100), (90, 100)]  # (generated, reference) per item
    for generation, (gen_tokens, ref_tokens) in zip(items, tokens, strict=True):
        Generation.objects.filter(pk=generation.pk).update(n_tokens=gen_tokens)
        Procedure.objects.filter(pk=generation.procedure_id).update(n_tokens=ref_tokens)
    return {"study": study, "judge": judge}


def test_it_measures_the_judge_against_the_human_majority_on_the_items_it_judged(
    judged: dict[str, object],
) -> None:
    card = report_card(judged["judge"])  # type: ignore[arg-type]
    (study,) = card.studies
    # Item 0: humans and judge say failure (agree); item 2: humans none, judge failure (disagree).
    assert (study.overall.k, study.overall.n) == (1, 2)
    assert study.overall.interval == wilson_interval(1, 2)
    assert (study.on_has_failure.k, study.on_has_failure.n) == (1, 1)
    assert (study.on_no_failure.k, study.on_no_failure.n) == (0, 1)
    # confusion[human][judge]: T->T 1, F->T 1. p_o = .5; humans say T .5, judge 1: p_e = .5, kappa = 0.
    # AC1: pi = .75, p_e = 2 x .75 x .25 = .375, (.5 - .375) / .625 = .2
    assert study.agreement.cohen_kappa == pytest.approx(0.0)
    assert study.agreement.gwet_ac1 == pytest.approx(0.2)


def test_the_human_ceiling_is_leave_one_out_on_the_same_items(judged: dict[str, object]) -> None:
    (study,) = report_card(judged["judge"]).studies  # type: ignore[arg-type]
    # Items 0 (T, T, F, T) and 2 (F, F, F, T) by participants 1-4; each against the other three's majority:
    # P1 agrees on both, P2 on both, P3 only on item 2, P4 only on item 0: band 1/2 .. 2/2, pooled 6 of 8.
    assert study.loo_band == (0.5, 1.0)
    assert (study.loo_pooled.k, study.loo_pooled.n) == (6, 8)


def test_the_trivial_baselines_score_on_the_same_items(judged: dict[str, object]) -> None:
    (study,) = report_card(judged["judge"]).studies  # type: ignore[arg-type]
    by_name = {baseline.name: baseline.agreement for baseline in study.baselines}
    assert (by_name['always "has failure"'].k, by_name['always "has failure"'].n) == (1, 2)
    assert (by_name['never "has failure"'].k, by_name['never "has failure"'].n) == (1, 2)
    # gen/ref: item 0 (humans: failure) 0.5, item 2 (humans: none) 1.0. Thresholds tried: 0.5 (1 right),
    # 1.0 (both right): "failure" when shorter than the reference by more than 0 % of its tokens.
    length = next(baseline for baseline in study.baselines if baseline.name == "length rule")
    assert (length.agreement.k, length.agreement.n) == (2, 2)
    assert "by more than 0 % of its tokens" in length.note


def test_the_length_rule_threshold_is_fitted_by_hand() -> None:
    # gen/ref ratios with the majority label; "failure iff ratio < t": t = 0.8 gets all four right.
    items = [(0.5, True), (0.7, True), (0.9, False), (1.2, False)]
    assert fit_length_threshold(items) == (0.9, 4)
    # Nothing separates them: the smallest threshold that does best wins (ties: the first).
    assert fit_length_threshold([(1.0, True), (1.0, False)]) == (1.0, 1)


def test_a_judge_of_no_study_has_no_study_rows() -> None:
    assert report_card(make_judge()).studies == []


def test_the_page_and_the_api_show_the_card_to_staff(admin_client: Client, judged: dict[str, object]) -> None:
    judge = judged["judge"]
    page = admin_client.get(reverse("judges:report_card", args=[judge.judge_id]))  # type: ignore[attr-defined]
    assert page.status_code == 200
    html = page.content.decode()
    for text in ["Instrument failures", "Agreement with the human majority", "Gwet", "leave-one-out"]:
        assert text in html
    api = admin_client.get(reverse("judge-report-card-api", args=[judge.judge_id]))  # type: ignore[attr-defined]
    assert api.status_code == 200
    body = api.json()
    assert body["judge_id"] == judge.judge_id  # type: ignore[attr-defined]
    (study,) = body["studies"]
    assert study["agreement"]["k"] == 1 and study["agreement"]["n"] == 2
    assert study["gwet_ac1"] == pytest.approx(0.2)
    assert set(body) >= {"instrument", "length_bias", "other_judges", "cost", "flips"}


def test_unknown_judges_are_404_and_outsiders_are_refused(client: Client, admin_client: Client) -> None:
    assert admin_client.get(reverse("judges:report_card", args=["nope"])).status_code == 404
    assert admin_client.get(reverse("judge-report-card-api", args=["nope"])).status_code == 404
    judge = make_judge()
    page = client.get(reverse("judges:report_card", args=[judge.judge_id]))
    assert page.status_code in (302, 403)
    assert client.get(reverse("judge-report-card-api", args=[judge.judge_id])).status_code in (401, 403)


def test_the_human_ceiling_leaves_out_the_items_the_humans_tie_on_as_the_judge_does(
    admin_client: Client, judged: dict[str, object]
) -> None:
    """#19 item 20: the judge also judged item 1, a 2-2 human tie (P1 T, P2 F, P3 T, P4 F), which its
    agreement leaves out. Leaving one annotator out of a tie leaves a 2-1 majority against them: all four
    would disagree there, and the ceiling would drop from 6 of 8 to 6 of 12 (band 1/3 .. 2/3 instead of
    1/2 .. 1). On the same items as the judge (0 and 2), the figures are those of the test above."""
    judge = judged["judge"]
    verdict(judge, items_in_order(judged["study"])[1], True)  # type: ignore[arg-type]
    (study,) = report_card(judge).studies  # type: ignore[arg-type]
    assert (study.overall.k, study.overall.n, study.agreement.overall.ties) == (1, 2, 1)
    assert (study.loo_pooled.k, study.loo_pooled.n) == (6, 8)
    assert study.loo_band == (0.5, 1.0)
    by_name = {baseline.name: baseline.agreement for baseline in study.baselines}
    assert by_name['always "has failure"'].n == 2  # the baselines too
    html = admin_client.get(reverse("judges:report_card", args=[judge.judge_id])).content.decode()  # type: ignore[attr-defined]
    assert "1 item on which the humans tie is left out of every figure below" in html
    assert "6 / 8" in html
