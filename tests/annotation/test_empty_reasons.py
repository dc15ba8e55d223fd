"""Every empty state of the researcher pages says its true reason (#19 item 16), each reached by building that
state: no study, a study not judged, only parse failures, no items, nobody entered, nobody submitted, only
attention checks, labels on other items than the judge's, every shared item a human tie; and an undefined
kappa is "—" with the same reason on the report card's two tables and the agreement page."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.models import Annotation, StudyItem
from annotation.kinds.critical_failures.report_card import SkippedStudy, report_card
from judging.models import Judge
from tests.annotation.conftest import annotate_all, make_study, no_failure, qualified
from tests.annotation.goal_step.test_mc_kind import make_mc_study
from tests.annotation.step_types.labelled import FOUR_STEPS, add_item, step_study
from tests.annotation.test_agreement_pages import annotate, items_in_order, verdict
from tests.factories import make_judge, make_judgment, make_procedure

pytestmark = pytest.mark.django_db
ONE_ITEM = "undefined: only 1 item to compare (at least 2 needed)"


def skipped_reason(judge: Judge) -> str:
    card = report_card(judge)
    assert card.studies == []
    (skipped,) = card.skipped
    assert isinstance(skipped, SkippedStudy)
    return skipped.reason


def page(client: Client, name: str, *args: str) -> str:
    response = client.get(reverse(name, args=args))
    assert response.status_code == 200
    return response.content.decode()


# --- the report card ---------------------------------------------------------------------------------------


def test_without_any_study_the_card_says_so(admin_client: Client) -> None:
    judge = make_judge()
    make_judgment(judge=judge)
    card = report_card(judge)
    assert card.studies == [] and card.skipped == []
    assert card.no_study_reason.startswith("No critical-failures annotation study exists yet")
    assert "No critical-failures annotation study exists yet" in page(
        admin_client, "judges:report_card", judge.judge_id
    )


def test_a_judge_that_judged_none_of_the_studys_generations() -> None:
    make_study(n_items=2, slug="unjudged")
    judge = make_judge()
    make_judgment(judge=judge)  # a generation of no study
    assert report_card(judge).no_study_reason == (
        "This judge has judged no generation of the annotation study yet: judge a study's generations to "
        "compare it with the humans."
    )


def test_a_judge_whose_verdicts_on_the_study_all_failed_to_parse() -> None:
    study = make_study(n_items=2, slug="unparsed")
    judge = make_judge()
    make_judgment(judge=judge, generation=items_in_order(study)[0], parse_failed=True)
    assert report_card(judge).no_study_reason.startswith(
        "Every verdict of this judge on the generations of the annotation study failed to parse"
    )


def test_a_judged_study_nobody_has_entered(admin_client: Client) -> None:
    study = make_study(n_items=2, slug="unentered")
    judge = make_judge()
    verdict(judge, items_in_order(study)[0], True)
    reason = skipped_reason(judge)
    assert reason == (
        "No human label yet: no annotator has submitted an item of this study (nobody has entered it yet)."
    )
    html = page(admin_client, "judges:report_card", judge.judge_id)
    assert "nobody has entered it yet" in html and "has judged no generation" not in html


def test_a_judged_study_entered_but_not_submitted() -> None:
    study = make_study(n_items=2, slug="entered")
    judge = make_judge()
    verdict(judge, items_in_order(study)[0], True)
    qualified(study, 1)
    assert skipped_reason(judge).endswith("(1 participant entered, none has submitted an item yet).")


def test_a_judged_study_with_only_attention_checks_submitted(admin_client: Client) -> None:
    study = make_study(
        n_items=2, k=1, slug="checks", attention_checks=1, attention_check_every=1, items_per_participant=0
    )
    annotate_all(qualified(study, 1), lambda _: no_failure())
    Annotation.objects.filter(study=study, item__is_attention_check=False).delete()
    judge = make_judge()
    verdict(judge, items_in_order(study)[0], True)
    assert skipped_reason(judge) == (
        "No human label yet: the annotators have submitted only attention checks (1), which never enter "
        "agreement."
    )
    assert "only attention checks (1)" in page(admin_client, "agreement:study", study.slug)


def test_a_study_without_items(admin_client: Client) -> None:
    study = make_study(n_items=1, slug="itemless")
    StudyItem.objects.filter(study=study).delete()
    assert "This study has no items: its selection chose none." in page(
        admin_client, "agreement:study", study.slug
    )


def test_labels_on_other_items_than_the_judges(admin_client: Client) -> None:
    study = make_study(n_items=4, k=4, slug="apart", items_per_participant=0)
    annotate(study)
    items = items_in_order(study)
    judge = make_judge(model="org/apart")
    verdict(judge, items[0], True)
    Annotation.objects.filter(study=study, item__generation=items[0]).delete()
    assert skipped_reason(judge) == (
        "The annotators have labelled 3 items of this study, none of them among the 1 this judge has a "
        "verdict on (parse failures are no verdict)."
    )
    html = page(admin_client, "agreement:study", study.slug)
    assert (
        "1 judge judged generations of this study, but none of the 3 items the annotators have labelled."
        in html
    )


def test_a_study_no_judge_has_judged(admin_client: Client) -> None:
    study = make_study(n_items=4, k=4, slug="nojudge", items_per_participant=0)
    annotate(study)
    assert "No judge has judged this study&#x27;s generations yet." in page(
        admin_client, "agreement:study", study.slug
    )


def test_a_card_whose_shared_items_are_all_human_ties(admin_client: Client) -> None:
    study = make_study(n_items=4, k=4, slug="tied", items_per_participant=0)
    annotate(study)  # items 1 and 3 end 2-2
    judge = make_judge(model="org/tied")
    verdict(judge, items_in_order(study)[1], True)
    (card,) = report_card(judge).studies
    assert (card.overall.n, card.agreement.overall.ties) == (0, 1)
    assert card.agreement.kappa.undefined == "undefined: no item to compare (at least 2 needed)"
    html = page(admin_client, "judges:report_card", judge.judge_id)
    assert "Every item both the humans and this judge labelled is a human tie" in html


# --- kappa on one item: "—" with the reason everywhere ------------------------------------------------------


def test_kappa_on_one_item_is_undefined_on_every_card_and_page(admin_client: Client) -> None:
    """The issue's case: on n = 1, one card showed "—" and another 0.000. The judge judged item 0 (humans:
    failure) and says "none": one item, disagreeing. Another judge judged that one generation too, saying
    "failure": one shared generation, disagreeing."""
    study = make_study(n_items=4, k=4, slug="one", items_per_participant=0)
    annotate(study)
    items = items_in_order(study)
    judge, other = make_judge(model="org/one"), make_judge(model="org/other")
    verdict(judge, items[0], False)
    verdict(other, items[0], True)
    card = report_card(judge)
    (study_card,) = card.studies
    assert study_card.overall.n == 1
    assert study_card.agreement.kappa.value is None and study_card.agreement.kappa.undefined == ONE_ITEM
    assert study_card.agreement.ac1.undefined == ONE_ITEM
    (pair,) = card.other_judges
    assert pair.kappa.value is None and pair.kappa.undefined == ONE_ITEM
    html = page(admin_client, "judges:report_card", judge.judge_id)
    undefined = re.findall(r'<span class="not-computed" title="([^"]*)"[^>]*>—</span>', html)
    assert undefined.count(ONE_ITEM) == 3  # kappa and AC1 against the humans, kappa against the other judge
    assert "κ <strong>0.000" not in html
    body = admin_client.get(reverse("judge-report-card-api", args=[judge.judge_id])).json()
    assert body["studies"][0]["cohen_kappa"] is None
    assert body["studies"][0]["cohen_kappa_undefined"] == ONE_ITEM
    assert body["other_judges"][0]["cohen_kappa"] is None
    agreement = page(admin_client, "agreement:study", study.slug)
    assert agreement.count(f'title="{ONE_ITEM}"') == 2  # each judge's kappa
    assert (
        admin_client.get(reverse("agreement-api"), {"study": study.slug}).json()["judges"][0]["cohen_kappa"]
        is None
    )


# --- step types, multiple choice, the overview -------------------------------------------------------------


def test_a_step_types_study_without_labels(admin_client: Client) -> None:
    study = step_study("st-empty")
    add_item(study, make_procedure(goal="Bake a cake", steps=FOUR_STEPS))
    assert "nobody has entered it yet" in page(admin_client, "agreement:study", study.slug)


def test_a_multiple_choice_study_without_answers(admin_client: Client) -> None:
    study = make_mc_study()
    html = page(admin_client, "agreement:study", study.slug)
    assert "No answers yet" in html and "nobody has entered it yet" in html


def test_the_overview_without_a_study_then_without_a_label(admin_client: Client) -> None:
    assert "No critical-failures or step-types study exists yet." in page(admin_client, "agreement:overview")
    make_study(n_items=1, slug="lonely")
    assert "The study has no human label yet (attention checks never count)." in page(
        admin_client, "agreement:overview"
    )
    make_study(n_items=1, slug="lonelier")
    assert "None of the 2 studies has a human label yet" in page(admin_client, "agreement:overview")


def test_a_judges_disagreements_say_why_there_are_none(admin_client: Client) -> None:
    study = make_study(n_items=4, k=4, slug="quiet", items_per_participant=0)
    judge = make_judge(model="org/quiet")
    items = items_in_order(study)
    verdict(judge, items[0], True)
    url = ("agreement:judge_disagreements", study.slug, judge.judge_id)
    assert "nobody has entered it yet" in page(admin_client, *url)
    annotate(study)  # item 0: humans say failure (3 of 4), as the judge does
    assert "On the one item both labelled, org/quiet gives the human majority" in page(admin_client, *url)
    other = make_judge(model="org/absent")
    make_judgment(judge=other, generation=items[0], parse_failed=True)
    html = page(admin_client, "agreement:judge_disagreements", study.slug, other.judge_id)
    assert "org/absent has no verdict on any of the 4 items the annotators labelled" in html
