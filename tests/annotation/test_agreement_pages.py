"""Agreement of a study annotated through the real services: the figures equal those of the pure functions on
the same labels, and the pages and the API show them to staff only."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.models import Study, StudyItem
from annotation.kinds.critical_failures.agreement_data import study_agreement
from annotation.kinds.critical_failures.posted import FailureInput, Submission
from h2e_site.stats.verdicts import Label, alpha_binary
from judging.models import Generation
from tests.annotation.conftest import annotate_all, make_study, qualified
from tests.factories import make_judge, make_judgment, make_user

pytestmark = pytest.mark.django_db

# Per participant, per item (in position order): True = critical failure. Human majorities: item 0 failure
# (3 of 4), item 2 no failure (1 of 4); items 1 and 3 end in 2-2 ties.
VERDICTS = {
    1: [True, True, False, True],
    2: [True, False, False, False],
    3: [False, True, False, True],
    4: [True, False, True, False],
}


def annotate(study: Study, verdicts: dict[int, list[bool]] = VERDICTS) -> None:
    """Each participant annotates every item, giving the verdict VERDICTS has for the item's rank."""
    positions = {generation.pk: rank for rank, generation in enumerate(items_in_order(study))}
    for n, labels in verdicts.items():

        def vote(assignment: Any, n: int = n, labels: list[bool] = labels) -> Submission:
            has_failure = labels[positions[assignment.item.generation_id]]
            failures = [FailureInput("Skips a step", [2], [n % 3 + 1])] if has_failure else []
            return Submission(has_failure, failures, user_agent="test", active_seconds=30.0 + n)

        annotate_all(qualified(study, n), vote)


def verdict(judge: Any, generation: Generation, says_failure: bool) -> None:
    make_judgment(
        judge=judge, generation=generation, failures=[("Wrong order", [1], [2])] if says_failure else []
    )


def items_in_order(study: Study) -> list[Generation]:
    return [item.generation for item in study.items.order_by("position").select_related("generation")]


@pytest.fixture
def study() -> Study:
    study = make_study(n_items=4, k=4, slug="agree", items_per_participant=0)
    annotate(study)
    return study


def test_it_computes_the_figures_of_the_stored_annotations(study: Study) -> None:
    result = study_agreement(study=study)
    expected = [
        Label(n, item.pk, VERDICTS[n][position])
        for n in VERDICTS
        for position, item in enumerate(items_in_order(study))
    ]
    assert result.alpha_binary == pytest.approx(alpha_binary(expected))
    assert (result.n_items, result.n_annotators, result.n_labels, result.n_human_ties) == (4, 4, 16, 2)
    assert [a.n_items for a in result.annotators] == [4, 4, 4, 4]
    assert [a.median_active_seconds for a in result.annotators] == [31.0, 32.0, 33.0, 34.0]
    assert result.ci.samples > 0 and result.ci.low is not None


def test_it_compares_each_judge_with_the_human_majority(study: Study) -> None:
    items = items_in_order(study)
    judge, other = make_judge(model="gpt-5"), make_judge(model="how2judge")
    # human majorities: item 0 failure (3 of 4), 1 tie, 2 no failure (1 of 4), 3 tie
    for item, says_failure in zip(items, [True, True, True, False], strict=True):
        verdict(judge, item, says_failure)
    make_judgment(judge=other, generation=items[0], parse_failed=True)
    result = study_agreement(study=study)
    by_model = {figures.judge.model: figures for figures in result.judges}
    gpt = by_model["gpt-5"].agreement
    assert (gpt.overall.n, gpt.overall.agreed, gpt.overall.ties) == (2, 1, 2)
    assert (gpt.has_failure.rate, gpt.no_failure.rate) == (1.0, 0.0)
    assert gpt.cells == (1, 0, 1, 0)
    assert by_model["how2judge"].n_parse_failed == 1
    assert by_model["how2judge"].agreement.n_not_judged == 4


def test_the_api_returns_every_promised_key(admin_client: Client, study: Study) -> None:
    judge = make_judge(model="gpt-5")
    for item in items_in_order(study):
        verdict(judge, item, True)
    response = admin_client.get(reverse("agreement-api"), {"study": study.slug})
    assert response.status_code == 200
    body = response.json()
    for key in (
        "alpha_binary",
        "ci_low",
        "ci_high",
        "alpha_first_failure",
        "alpha_step_sets",
        "n_items",
        "n_annotators",
        "loo_agreement",
        "judges",
    ):
        assert key in body, key
    [row] = body["judges"]
    assert set(row) >= {
        "judge_id",
        "agreement",
        "agreement_has_failure",
        "agreement_no_failure",
        "cohen_kappa",
        "n",
        "n_ties",
    }
    assert (row["n"], row["n_ties"], row["agreement"]) == (2, 2, 0.5)
    assert row["confusion"] == {
        "has_failure": {"has_failure": 1, "no_failure": 0},
        "no_failure": {"has_failure": 1, "no_failure": 0},
    }
    assert [a["n_items"] for a in body["loo_agreement"]] == [4, 4, 4, 4]


def test_the_api_pools_studies_and_names_unknown_ones(admin_client: Client, study: Study) -> None:
    pooled = admin_client.get(reverse("agreement-api")).json()
    assert (pooled["studies"], pooled["n_items"]) == (["agree"], 4)
    missing = admin_client.get(reverse("agreement-api"), {"study": "agree,nope"})
    assert missing.status_code == 404
    assert "nope" in missing.json()["detail"]


@pytest.mark.parametrize(
    "name,args",
    [
        ("agreement:overview", []),
        ("agreement:study", ["agree"]),
        ("agreement:judge_disagreements", ["agree", "jdg"]),
    ],
)
def test_the_pages_refuse_outsiders(client: Client, study: Study, name: str, args: list[Any]) -> None:
    url = reverse(name, args=args)
    assert client.get(url).status_code == 302  # anonymous: to the login page
    make_user(username="annotator", password="pw")
    client.login(username="annotator", password="pw")
    assert client.get(url).status_code == 403
    assert client.get(reverse("agreement-api"), {"study": "agree"}).status_code == 403


def test_the_pages_refuse_writes(admin_client: Client, study: Study) -> None:
    assert admin_client.post(reverse("agreement:study", args=["agree"])).status_code == 405
    assert admin_client.post(reverse("agreement-api")).status_code == 405


def test_the_study_page_shows_alpha_judges_and_annotators(
    admin_client: Client, study: Study, django_assert_max_num_queries: Any
) -> None:
    judge = make_judge(model="gpt-5")
    for item in items_in_order(study):
        verdict(judge, item, True)
    with django_assert_max_num_queries(12):
        response = admin_client.get(reverse("agreement:study", args=["agree"]))
    html = response.content.decode()
    result = study_agreement(study=study)
    assert f"{result.alpha_binary:.3f}" in html
    assert "<svg" in html and "95 % Wilson CI" in html
    assert (
        "gpt-5" in html and reverse("agreement:judge_disagreements", args=["agree", judge.judge_id]) in html
    )
    assert "2 item" in html  # the tied items are announced


def test_the_disagreements_page_shows_both_sides_escaped(admin_client: Client, study: Study) -> None:
    items = items_in_order(study)
    judge = make_judge(model="gpt-5")
    judgment = make_judgment(
        judge=judge, generation=items[2], failures=[("<script>alert(1)</script>", [1], [2])]
    )
    verdict(judge, items[0], True)  # agrees with the humans: not listed
    response = admin_client.get(reverse("agreement:judge_disagreements", args=["agree", judge.judge_id]))
    html = response.content.decode()
    assert judgment.generation.procedure.goal in html
    assert items[0].procedure.goal not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
    assert f'data-step-prefix="g{items[2].pk}-"' in html
    assert "Skips a step" in html  # the humans' failures beside the judge's
    item = StudyItem.objects.get(study__slug="agree", generation=items[2])
    assert reverse("annotation:adjudicate", args=["agree", item.pk]) in html  # settle it from here


def test_the_overview_lists_studies_with_annotations(admin_client: Client, study: Study) -> None:
    make_study(n_items=1, k=1, slug="empty")
    html = admin_client.get(reverse("agreement:overview")).content.decode()
    assert "Coconut study" in html and reverse("agreement:study", args=["agree"]) in html
    assert reverse("agreement:study", args=["empty"]) not in html


def test_the_judges_chart_sets_the_human_ceiling_on_the_items_with_a_majority(
    admin_client: Client, study: Study
) -> None:
    """#19 item 20 on the agreement page: the judges' agreement leaves the 2-2 items 1 and 3 out, so the human
    ceiling beside it does too. On items 0 (T, T, F, T) and 2 (F, F, F, T) each annotator against the other
    three: P1 2/2, P2 2/2, P3 1/2 (item 2), P4 1/2 (item 0): 6 of 8, band 1/2 .. 1. On all four items every
    annotator also disagrees with the 2-1 majority left on each tie: 6 of 16 (the annotators' table keeps
    that figure: it is the paper's leave-one-out, not a ceiling beside a judge)."""
    result = study_agreement(study=study)
    assert (result.ceiling_pooled.agreed, result.ceiling_pooled.n) == (6, 8)
    assert result.ceiling_range == (0.5, 1.0)
    assert (result.loo_pooled.agreed, result.loo_pooled.n) == (6, 16)
    judge = make_judge(model="gpt-5")
    verdict(judge, items_in_order(study)[0], True)
    html = admin_client.get(reverse("agreement:study", args=[study.slug])).content.decode()
    assert "75.0%" in html  # the humans' bar: 6 of 8
