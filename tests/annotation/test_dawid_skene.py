"""Dawid-Skene beside the majority (issue #23 item 6): our numpy EM equals crowd-kit's DawidSkene on a crafted
set (a careful annotator, a spammer and average annotators, where the majority is wrong and Dawid-Skene right)
and on generated sets; competence and chance mean what the page says; and the agreement pages and APIs of
two kinds show the figures of studies annotated through the real services."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.base.beyond_majority import QuestionEstimate, question_estimates
from annotation.base.models import Annotation, Study
from annotation.base.registry import kind_for
from annotation.flow import services
from annotation.kinds.critical_failures.posted import FailureInput, Submission
from annotation.kinds.critical_failures.questions import FAILURE, NO_FAILURE
from annotation.kinds.pairwise.questions import OUTCOME_NAMES
from h2e_site.stats.dawid_skene import CrowdLabel, DawidSkene, dawid_skene, majority_label
from tests.annotation.conftest import annotate_all, make_study, pid, qualified, read_everything
from tests.annotation.pairwise.helpers import answer, make_pairwise_study
from tests.annotation.test_agreement_pages import VERDICTS, annotate, items_in_order


def study_beyond_majority(*, study: Study) -> list[QuestionEstimate]:
    """What each kind's agreement page shows: its categorical questions, each with its fit."""
    return question_estimates(kind_for(study).categorical_questions(study))


# --- a crafted set ------------------------------------------------------------------------------------------

# 30 items, the first 15 with a critical failure. The careful annotator is always right; the spammer always
# says "no failure"; the three average annotators are each wrong on 5 to 7 items, two of them together on
# items 0, 1 and 2, where with the spammer they outvote the careful annotator and the third.
N_ITEMS = 30
TRUTH = [FAILURE] * 15 + [NO_FAILURE] * 15
WRONG = {"avg-1": {0, 1, 5, 9, 17, 21, 26}, "avg-2": {0, 1, 2, 7, 12, 19, 24}, "avg-3": {2, 4, 14, 22, 28}}
CAREFUL, SPAMMER = "careful", "spammer"


def flipped(label: str) -> str:
    return NO_FAILURE if label == FAILURE else FAILURE


def crafted() -> list[CrowdLabel]:
    labels = []
    for unit, truth in enumerate(TRUTH):
        labels.append(CrowdLabel(unit, CAREFUL, truth))
        labels.append(CrowdLabel(unit, SPAMMER, NO_FAILURE))
        for annotator, wrong in WRONG.items():
            labels.append(CrowdLabel(unit, annotator, flipped(truth) if unit in wrong else truth))
    return labels


def crowd_kit(labels: Sequence[CrowdLabel]) -> CrowdKitDawidSkene:
    frame = pd.DataFrame(
        {
            "task": [repr(label.unit) for label in labels],
            "worker": [label.annotator for label in labels],
            "label": [label.label for label in labels],
        }
    )
    with warnings.catch_warnings():  # crowd-kit 1.4.2 uses pandas keywords that pandas 3 deprecates
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="crowdkit")
        return CrowdKitDawidSkene(n_iter=100, tol=1e-5).fit(frame)


def assert_equals_crowd_kit(fit: DawidSkene, reference: CrowdKitDawidSkene) -> None:
    """Same posteriors (to 1e-9), same labels wherever the top two posteriors are not tied, same rounds."""
    probas = reference.probas_
    assert fit.iterations == len(reference.loss_history_)
    for unit in fit.units:
        row = probas.loc[repr(unit.unit)]
        assert unit.posterior == pytest.approx(float(row.max()), abs=1e-9)
        top_two = sorted(row.to_numpy())[-2:]
        if len(top_two) < 2 or top_two[1] - top_two[0] > 1e-6:
            assert unit.label == reference.labels_.loc[repr(unit.unit)]


def competence_of(fit: DawidSkene, annotator: str) -> Any:
    return next(row for row in fit.annotators if row.annotator == annotator)


def test_it_finds_the_truth_where_the_majority_is_wrong() -> None:
    fit = dawid_skene(crafted())
    by_unit = {unit.unit: unit for unit in fit.units}
    assert [by_unit[i].label for i in range(N_ITEMS)] == TRUTH
    assert {unit.unit for unit in fit.differences} == {0, 1, 2}  # the majority says no failure there
    assert all(by_unit[i].majority == NO_FAILURE and by_unit[i].posterior > 0.9 for i in (0, 1, 2))


def test_its_labels_and_posteriors_equal_crowd_kit_s() -> None:
    labels = crafted()
    reference = crowd_kit(labels)
    assert_equals_crowd_kit(dawid_skene(labels), reference)
    assert list(reference.labels_.loc[[repr(i) for i in range(N_ITEMS)]]) == TRUTH


def test_the_spammer_is_at_chance_and_the_careful_annotator_near_one() -> None:
    fit = dawid_skene(crafted())
    spammer, careful = competence_of(fit, SPAMMER), competence_of(fit, CAREFUL)
    assert spammer.competence == pytest.approx(spammer.chance, abs=1e-6)
    assert spammer.chance == pytest.approx(0.5, abs=0.01)  # the prior of "no failure": half the items
    assert careful.competence > 0.99
    for annotator, wrong in WRONG.items():  # the average ones: about their share right
        assert competence_of(fit, annotator).competence == pytest.approx(1 - len(wrong) / N_ITEMS, abs=0.05)
    assert {row.n_labels for row in fit.annotators} == {N_ITEMS}


def test_a_random_spammer_is_near_chance_too() -> None:
    import random

    rng = random.Random(7)
    labels = [label for label in crafted() if label.annotator != SPAMMER]
    labels += [CrowdLabel(unit, SPAMMER, rng.choice([FAILURE, NO_FAILURE])) for unit in range(N_ITEMS)]
    fit = dawid_skene(labels)
    spammer = competence_of(fit, SPAMMER)
    assert abs(spammer.competence - spammer.chance) < 0.2 < competence_of(fit, CAREFUL).competence - 0.7
    assert_equals_crowd_kit(fit, crowd_kit(labels))


def test_the_majority_is_more_than_half_never_a_plurality() -> None:
    from collections import Counter

    assert majority_label(Counter({"a": 2, "b": 1})) == "a"
    assert majority_label(Counter({"a": 2, "b": 2})) is None
    assert majority_label(Counter({"a": 2, "b": 1, "c": 1})) is None
    assert dawid_skene([]).units == []


@st.composite
def crowds(draw: Any) -> list[CrowdLabel]:
    n_units = draw(st.integers(2, 12))
    annotators = [f"w{i}" for i in range(draw(st.integers(2, 5)))]
    classes = ["x", "y", "z"][: draw(st.integers(2, 3))]
    labels = []
    for unit in range(n_units):
        given_by = draw(st.lists(st.sampled_from(annotators), min_size=1, unique=True))
        labels += [CrowdLabel(unit, a, draw(st.sampled_from(classes))) for a in given_by]
    return labels


@settings(max_examples=40, deadline=None)
@given(crowds())
def test_it_equals_crowd_kit_on_generated_sets(labels: list[CrowdLabel]) -> None:
    assert_equals_crowd_kit(dawid_skene(labels), crowd_kit(labels))


# --- the pages and the APIs, on studies annotated through the services --------------------------------------


@pytest.mark.django_db
def test_it_shows_the_critical_failures_study_beyond_its_majority(staff: Client) -> None:
    study = make_study(n_items=4, k=4, slug="agree", items_per_participant=0)
    annotate(study)
    generations = items_in_order(study)
    expected = dawid_skene(
        [
            CrowdLabel(g.pk, pid(n), FAILURE if VERDICTS[n][rank] else NO_FAILURE)
            for n in VERDICTS
            for rank, g in enumerate(generations)
        ]
    )
    [estimate] = study_beyond_majority(study=study)
    assert estimate.fit == expected
    assert {unit.unit for unit in expected.differences} >= {generations[1].pk, generations[3].pk}  # the ties

    page = staff.get(reverse("agreement:study", args=[study.slug]))
    text = page.content.decode()
    assert page.status_code == 200 and "Beyond the majority (Dawid\N{EN DASH}Skene)" in text
    for row in expected.annotators:
        assert row.annotator in text and f"{row.competence:.3f}" in text
    for unit in expected.differences:
        assert reverse("failures:generation_detail", args=[unit.unit]) in text
    assert "What Dawid\N{EN DASH}Skene assumes" in text and "Competence" in text

    body = staff.get(reverse("agreement-api"), {"study": study.slug}).json()
    [question] = body["dawid_skene"]
    assert question["question"] == "has_failure" and question["n_labels"] == 16
    assert [a["competence"] for a in question["annotators"]] == [a.competence for a in expected.annotators]
    assert question["differences"] == [str(unit.unit) for unit in expected.differences]


def answer_pairs(study: Study, outcomes: dict[int, str]) -> None:
    """Participant n answers every pair with the outcome `outcomes[n]` on the pair (A better, ...)."""
    shown = {"a_better": ("left", "right"), "b_better": ("right", "left")}
    for n, outcome in outcomes.items():

        def verdict(assignment: Any, outcome: str = outcome) -> Any:
            left = assignment.presentation["left"]
            said = shown[outcome][0 if left == "a" else 1]
            other = "right" if said == "left" else "left"
            return answer(said, [(other, [1])], left=left)

        annotate_all(qualified(study, n), verdict)


@pytest.mark.django_db
def test_it_shows_the_pairwise_study_beyond_its_majority(staff: Client) -> None:
    study = make_pairwise_study(n_goals=1, k=3)
    answer_pairs(study, {1: "a_better", 2: "a_better", 3: "b_better"})
    rows = Annotation.objects.filter(study=study).values_list("item_id", "participant__prolific_pid")
    outcome = {pid(1): "a_better", pid(2): "a_better", pid(3): "b_better"}
    expected = dawid_skene([CrowdLabel(item, p, OUTCOME_NAMES[outcome[p]]) for item, p in rows])
    [estimate] = study_beyond_majority(study=study)
    assert estimate.fit == expected and len(expected.units) == 3
    assert {unit.majority for unit in expected.units} == {"A better"}

    page = staff.get(reverse("agreement:study", args=[study.slug]))
    text = page.content.decode()
    assert page.status_code == 200 and "Beyond the majority (Dawid\N{EN DASH}Skene)" in text
    assert "Which L2 has fewer critical failures?" in text and pid(3) in text
    body = staff.get(reverse("pairwise-figures-api", args=[study.slug])).json()
    assert body["dawid_skene"][0]["n_items"] == 3
    assert [a["annotator"] for a in body["dawid_skene"][0]["annotators"]] == [pid(1), pid(2), pid(3)]


@pytest.mark.django_db
def test_a_study_without_labels_has_no_section(staff: Client) -> None:
    study = make_study(n_items=2, k=2, slug="empty", items_per_participant=0)
    assert study_beyond_majority(study=study) == []
    page = staff.get(reverse("agreement:study", args=[study.slug]))
    assert page.status_code == 200 and "Beyond the majority" not in page.content.decode()
    assert staff.get(reverse("agreement-api"), {"study": study.slug}).json()["dawid_skene"] == []


@pytest.mark.django_db
def test_attention_checks_are_left_out() -> None:
    study = make_study(
        n_items=2, k=1, slug="checked", items_per_participant=0, attention_checks=1, attention_check_every=1
    )
    participant = qualified(study, 1)
    while (assignment := services.assignment_next(participant=participant)) is not None:
        assignment = read_everything(assignment)
        says = bool(assignment.item.attention_expects_failure)
        failures = [FailureInput("Skips a step", [1], [1])] if says else []
        services.annotation_submit(
            assignment=assignment, submission=Submission(says, failures, user_agent="t")
        )
        participant.refresh_from_db()
    assert Annotation.objects.filter(study=study, item__is_attention_check=True).count() == 1
    [estimate] = study_beyond_majority(study=study)
    assert estimate.fit.n_labels == 2 and len(estimate.fit.units) == 2


@pytest.mark.django_db
def test_a_step_types_study_has_a_question_per_type_and_the_expert_answer(staff: Client) -> None:
    from annotation.kinds.step_types.measures import step_type_of
    from annotation.kinds.step_types.models import StepTypeLabel as StoredLabel
    from tests.annotation.step_types.labelled import table6_study

    study, _ = table6_study()
    estimates = study_beyond_majority(study=study)
    assert [e.question.key for e in estimates] == ["sequential", "interchangeable", "optional", "task_expert"]
    regular = StoredLabel.objects.filter(annotation__study=study, annotation__item__is_attention_check=False)
    keys = list(regular.values_list("candidate__key", flat=True))
    for estimate in estimates[:3]:  # the attention check's labels are left out
        of_type = [key for key in keys if step_type_of(key).value == estimate.question.key]
        assert estimate.fit.n_labels == len(of_type) > 0
    page = staff.get(reverse("agreement:study", args=[study.slug])).content.decode()
    assert (
        "Beyond the majority (Dawid\N{EN DASH}Skene)" in page
        and "Sequential: does the candidate hold?" in page
    )
    body = staff.get(reverse("step-types-agreement-api"), {"study": study.slug}).json()
    assert [q["question"] for q in body["dawid_skene"]] == [e.question.key for e in estimates]


@pytest.mark.django_db
def test_a_multiple_choice_study_has_a_question_per_task(admin_client: Client) -> None:
    from tests.annotation.goal_step.test_mc_kind import answer_all, make_mc_study

    study = make_mc_study()
    for worker in (1, 2, 3):
        answer_all(study, worker, {"Bake bread": 3} if worker == 1 else {})
    estimates = study_beyond_majority(study=study)
    assert sum(e.fit.n_labels for e in estimates) == 3 * study.items.filter(is_attention_check=False).count()
    assert all(unit.majority == unit.label for e in estimates for unit in e.fit.units)  # 2 of 3 right
    page = admin_client.get(reverse("agreement:study", args=[study.slug])).content.decode()
    assert "Beyond the majority (Dawid\N{EN DASH}Skene)" in page
    assert all(f"{e.question.key}: which option?" in page for e in estimates)
