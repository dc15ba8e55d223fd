"""The judge report card beside adjudicated gold (#23): per study, the judge's agreement with gold, its
agreement with the human majority on the same items, and the majority's agreement with gold, each k of n
counted by hand on a study annotated through the real services; the reasons when there is no such item; the
page and the JSON API."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.models import Study, StudyItem
from annotation.kinds.critical_failures.gold_events import gold_decide
from annotation.kinds.critical_failures.report_card import (
    GoldComparison,
    SkippedStudy,
    StudyCard,
    report_card,
)
from h2e_site.stats import Share, wilson_interval
from judging.models import Generation, Judge
from tests.annotation.conftest import make_study
from tests.annotation.test_agreement_pages import annotate, items_in_order, verdict
from tests.factories import make_judge, make_judgment, make_user

pytestmark = pytest.mark.django_db

T, F = True, False  # "has a critical failure"
# Per participant, per item (in position order). Human majorities: 0 T (3-1), 1 F (3-1), 2 tie (2-2),
# 3 F (4-0), 4 T (4-0), 5 F (3-1), 6 T (3-1), 7 F (4-0).
VOTES = {
    1: [T, F, T, F, T, F, T, F],
    2: [T, F, F, F, T, F, T, F],
    3: [T, F, T, F, T, T, F, F],
    4: [F, T, F, F, T, F, T, F],
}
# Per item: the judge's verdict (None: a parse failure) and the gold (None: no gold).
JUDGE = [T, T, F, None, T, T, T, F]
GOLD: list[bool | None] = [T, T, F, F, None, F, T, None]  # item 1's gold reverses its majority (F)

FAILURE = [{"description": "Skips the rinse", "l1_steps": [1], "l2_steps": [2]}]


def decide(item: StudyItem, has_failure: bool | None, reviewer: Any) -> None:
    """Set the item's gold (None: clear it)."""
    gold = (
        None
        if has_failure is None
        else {"has_failure": has_failure, "failures": FAILURE if has_failure else []}
    )
    gold_decide(item=item, verdict=gold, reason="Adjudicated from the reference.", user=reviewer)


def judge_items(judge: Judge, generations: list[Generation], verdicts: list[bool | None]) -> None:
    for generation, says in zip(generations, verdicts, strict=True):
        if says is None:
            make_judgment(judge=judge, generation=generation, parse_failed=True)
        else:
            verdict(judge, generation, says)


def regular_items(study: Study) -> list[StudyItem]:
    return list(study.items.order_by("position"))


@pytest.fixture
def graded() -> dict[str, Any]:
    study = make_study(n_items=8, k=4, slug="gold-card", items_per_participant=0)
    annotate(study, VOTES)
    judge = make_judge(model="org/judge-against-gold")
    judge_items(judge, items_in_order(study), JUDGE)
    reviewer = make_user(is_staff=True)
    items = regular_items(study)
    for item, gold in zip(items, GOLD, strict=True):
        if gold is not None:
            decide(item, gold, reviewer)
    decide(items[4], T, reviewer)  # item 4 had gold ...
    decide(items[4], None, reviewer)  # ... cleared later: it has none now
    return {"study": study, "judge": judge}


def card_of(judge: Judge, slug: str) -> StudyCard | SkippedStudy:
    card = report_card(judge)
    (row,) = [row for row in [*card.studies, *card.skipped] if row.study.slug == slug]
    return row


def test_the_gold_figures_are_counted_on_the_gold_items_with_a_judge_verdict(graded: dict[str, Any]) -> None:
    row = card_of(graded["judge"], "gold-card")
    assert isinstance(row, StudyCard)
    gold = row.gold
    # Gold items: 0 T, 1 T, 2 F, 3 F, 5 F, 6 T (4: cleared; 7: none). Item 3's judgment failed to parse: out.
    # Judge vs gold on 0, 1, 2, 5, 6: T=T, T=T, F=F, T!=F, T=T -> 4 of 5.
    assert gold.agreement == Share(4, 5)
    # Judge vs majority on the same items, the tie (item 2) out: 0 T=T, 1 T!=F, 5 T!=F, 6 T=T -> 2 of 4.
    assert gold.majority_agreement == Share(2, 4)
    # Majority vs gold on 0, 1, 5, 6: T=T, F!=T (gold reverses it), F=F, T=T -> 3 of 4.
    assert gold.crowd_agreement == Share(3, 4)
    assert (gold.n_ties, gold.n_unlabelled, gold.undefined) == (1, 0, "")
    # The majority figures are unchanged by gold: judged items with a majority 0, 1, 4, 5, 6, 7 (2 ties, 3
    # parse failure): 0 T=T, 1 T!=F, 4 T=T, 5 T!=F, 6 T=T, 7 F=F -> 4 of 6.
    assert (row.overall.k, row.overall.n) == (4, 6)


def test_the_json_of_a_study_carries_the_gold_figures(graded: dict[str, Any]) -> None:
    row = card_of(graded["judge"], "gold-card")
    body = row.as_json()
    assert body["gold_n_items"] == 5
    assert body["gold_agreement"] == Share(4, 5).as_json()
    assert (body["gold_agreement"]["ci_low"], body["gold_agreement"]["ci_high"]) == wilson_interval(4, 5)
    assert body["gold_majority_agreement"] == Share(2, 4).as_json()
    assert body["crowd_gold_agreement"] == Share(3, 4).as_json()
    assert (body["gold_n_human_ties"], body["gold_n_unlabelled"], body["gold_undefined"]) == (1, 0, "")


def test_a_study_without_gold_says_so() -> None:
    study = make_study(n_items=2, k=1, slug="no-gold", items_per_participant=0)
    annotate(study, {1: [T, F]})
    judge = make_judge()
    judge_items(judge, items_in_order(study), [T, F])
    row = card_of(judge, "no-gold")
    assert isinstance(row, StudyCard)
    assert row.gold == GoldComparison(undefined="no item of this study has adjudicated gold yet")
    assert row.as_json()["gold_undefined"] == "no item of this study has adjudicated gold yet"


def test_gold_only_where_the_judge_has_no_verdict_says_so() -> None:
    study = make_study(n_items=2, k=1, slug="gold-unjudged", items_per_participant=0)
    annotate(study, {1: [T, F]})
    judge = make_judge()
    judge_items(judge, items_in_order(study), [T, None])  # item 1: a parse failure
    decide(regular_items(study)[1], F, make_user(is_staff=True))
    row = card_of(judge, "gold-unjudged")
    assert row.gold.undefined == (
        "none of the 1 gold item has a verdict of this judge (parse failures are no verdict)"
    )
    assert row.gold.agreement == Share(0, 0)


def test_a_study_with_gold_and_no_human_label_still_shows_its_gold_agreement(staff: Client) -> None:
    study = make_study(n_items=3, k=3, slug="gold-first", items_per_participant=0)
    judge = make_judge()
    judge_items(judge, items_in_order(study), [T, F, T])
    reviewer = make_user(is_staff=True)
    items = regular_items(study)
    decide(items[0], T, reviewer)
    decide(items[1], T, reviewer)
    row = card_of(judge, "gold-first")
    assert isinstance(row, SkippedStudy)
    # Items 0 (T=T) and 1 (F!=T): 1 of 2; no majority anywhere: both unlabelled, 0 of 0.
    assert row.gold.agreement == Share(1, 2)
    assert row.gold.majority_agreement == Share(0, 0) == row.gold.crowd_agreement
    assert (row.gold.n_ties, row.gold.n_unlabelled) == (0, 2)
    html = staff.get(reverse("judges:report_card", args=[judge.judge_id])).content.decode()
    assert "gold-first" in html and "1 / 2" in html
    assert "2 gold items no annotator has labelled yet" in html
    body = staff.get(reverse("judge-report-card-api", args=[judge.judge_id])).json()
    (skipped,) = body["studies_without_figures"]
    assert skipped["gold_agreement"] == Share(1, 2).as_json()


def test_the_page_shows_the_gold_figures_beside_the_majority_ones(
    staff: Client, graded: dict[str, Any]
) -> None:
    page = staff.get(reverse("judges:report_card", args=[graded["judge"].judge_id]))
    assert page.status_code == 200
    html = page.content.decode()
    gold = html[html.index("Agreement with adjudicated gold") :]
    gold = gold[: gold.index("</article>")]
    low, high = wilson_interval(4, 5)
    assert "On the 5 items with adjudicated gold and a verdict of this judge" in gold
    for text in ["4 / 5", "80 %", f"{low:.3f}\u2013{high:.3f}", "2 / 4", "50 %", "3 / 4", "75 %"]:
        assert text in gold, text
    assert "1 gold item on which the humans tie" in gold


def test_the_api_gives_the_gold_figures(staff: Client, graded: dict[str, Any]) -> None:
    response = staff.get(reverse("judge-report-card-api", args=[graded["judge"].judge_id]))
    assert response.status_code == 200
    (study,) = response.json()["studies"]
    assert study["gold_n_items"] == 5
    assert (study["gold_agreement"]["k"], study["gold_agreement"]["n"]) == (4, 5)
    assert (study["gold_majority_agreement"]["k"], study["gold_majority_agreement"]["n"]) == (2, 4)
    assert (study["crowd_gold_agreement"]["k"], study["crowd_gold_agreement"]["n"]) == (3, 4)
    assert study["gold_undefined"] == ""
