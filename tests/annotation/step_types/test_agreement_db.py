"""Agreement of a step-types study from labels stored in the database (labelled.py builds them through the
models): Table 6 against values worked out by hand (the arithmetic is in the comments), the majority with
k = 3 and a tie with k = 4, the Unsure rule of footnote 4, the SEQUENTIAL/INTERCHANGEABLE contradiction rate,
attention checks; and the page and API, staff only."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.models import Study
from annotation.kinds.step_types.agreement import study_labels, study_step_types_agreement
from annotation.kinds.step_types.measures import ALL, TASK_EXPERT, Expert
from annotation.kinds.step_types.models import StepTypeLabelSet
from h2e_site.stats import wilson_interval
from tests.factories import make_procedure

from .labelled import THREE_STEPS, add_item, annotate, pid, step_study, table6_study

pytestmark = pytest.mark.django_db

# Table 6 of the worked example (labelled.MARKS), 1 = holds, "-" = missing; p1 is Food, p2 is Car.
#
# SEQUENTIAL        p1:0-1 p1:1-2 p1:2-3 | p2:0-1 p2:1-2 p2:2-3
#   A                 1      1      0    |   1      0      1
#   B                 1      0      0    |   1      1      1
#   C                 1      1      1    |   0      1      -
# kappa = (p_o - p_e) / (1 - p_e), p_e = P(yes)P(yes') + P(no)P(no') over the items both labelled.
#   All:  A-B (6 items): TT 3, TF 1, FT 1, FF 1; p_o = 4/6, p_e = (4/6)(4/6) + (2/6)(2/6) = 20/36
#                        kappa = (24/36 - 20/36) / (16/36) = 1/4
#         A-C (5 items): TT 2, TF 1, FT 2, FF 0; p_o = 2/5, p_e = (3/5)(4/5) + (2/5)(1/5) = 14/25
#                        kappa = (10/25 - 14/25) / (11/25) = -4/11
#         B-C (5 items): TT 2, TF 1, FT 2, FF 0; the same: -4/11
#         mean = (1/4 - 4/11 - 4/11) / 3 = (11/44 - 32/44) / 3 = -7/44
#   Food: A-B: TT 1, TF 1, FF 1; p_o = 2/3, p_e = (2/3)(1/3) + (1/3)(2/3) = 4/9; kappa = (2/9)/(5/9) = 2/5
#         A-C: TT 2, FT 1; p_o = 2/3, p_e = (2/3)(1) + (1/3)(0) = 2/3; kappa = 0
#         B-C: TT 1, FT 2; p_o = 1/3, p_e = (1/3)(1) = 1/3; kappa = 0;  mean = 2/15
#   Car:  A-B (3): TT 2, FT 1; p_o = 2/3, p_e = (2/3)(1) = 2/3; kappa = 0
#         A-C (2): TF 1, FT 1; p_o = 0, p_e = (1/2)(1/2) + (1/2)(1/2) = 1/2; kappa = -1
#         B-C (2): TT 1, TF 1; p_o = 1/2, p_e = (1)(1/2) + 0 = 1/2; kappa = 0;  mean = -1/3
# Krippendorff's alpha (nominal), All: coincidences o_cc' (each pair of values within an item, weighted
#   1/(m_u - 1)): the three 3-label items with 1,1,1 give o11 += 3; each of the four mixed 3-label items
#   gives one o11 or o00 and one o01 and one o10; p2:2-3 (1,1 by two annotators) gives o11 += 2.
#   o11 = 3 + 1 + 1 + 1 + 2 = 8, o00 = 1, o01 = o10 = 4; n = 17, n1 = 12, n0 = 5
#   alpha = 1 - (n - 1)(o01 + o10) / (2 n0 n1) = 1 - 16 * 8 / 120 = -1/15
#
# INTERCHANGEABLE   p1@0 p1@1 | p2@0 p2@1
#   A                 0    0  |  1    0
#   B                 0    1  |  1    0
#   C                 0    0  |  1    0
#   All:  A-B: TT 1, FT 1, FF 2; p_o = 3/4, p_e = (1/4)(2/4) + (3/4)(2/4) = 1/2; kappa = 1/2
#         A-C: identical; p_o = 1, p_e = (1/4)^2 + (3/4)^2 = 5/8; kappa = 1
#         B-C: as A-B, 1/2;  mean = 2/3
#         alpha: o11 = 3 (p2@0), o00 = 3 + 3 + 1, o01 = o10 = 1 (p1@1); n = 12, n0 = 8, n1 = 4
#         alpha = 1 - 11 * 2 / (2 * 8 * 4) = 21/32
#   Food: A-B: FF 1, FT 1; p_o = 1/2, p_e = 0 + (1)(1/2) = 1/2; kappa = 0. A-C: both all 0: p_e = 1,
#         undefined, left out. B-C: 0.  mean = 0 over 2 pairs
#   Car:  all three identical (1, 0): p_e = 1/2, kappa = 1 for every pair; mean = 1
#
# OPTIONAL          p1@0 p1@1 | p2@0 p2@1
#   A                 1    0  |  0    0
#   B                 1    0  |  0    0
#   C                 0    0  |  0    0
#   All:  A-B identical: p_e = (1/4)^2 + (3/4)^2 = 5/8, kappa = 1
#         A-C: TF 1, FF 3; p_o = 3/4, p_e = (1/4)(0) + (3/4)(1) = 3/4; kappa = 0. B-C: 0.  mean = 1/3
#   Food: A-B: kappa 1 (p_e = 1/2); A-C: TF 1, FF 1, p_o = 1/2, p_e = 1/2, 0; B-C: 0.  mean = 1/3
#   Car:  every label 0: every pair undefined; no kappa
#
# TASK-LEVEL EXPERT  p1 p2:  A 1 0,  B 1 1,  C 1 0
#   All:  A-B: TT 1, FT 1; p_o = 1/2, p_e = (1/2)(1) + (1/2)(0) = 1/2; kappa = 0
#         A-C identical (1, 0): p_e = 1/2, kappa = 1. B-C: as A-B, 0.  mean = 1/3
#   Food: one item, all 1: every pair undefined; no kappa
#   Car:  one item (p2): every pair shares a single item, so every kappa is undefined (h2e_site.stats'
#         rule: fewer than 2 items); no kappa
HAND_KAPPA: dict[str, dict[str, float | None]] = {
    "sequential": {ALL: -7 / 44, "Food": 2 / 15, "Car": -1 / 3},
    "interchangeable": {ALL: 2 / 3, "Food": 0.0, "Car": 1.0},
    "optional": {ALL: 1 / 3, "Food": 1 / 3, "Car": None},
    TASK_EXPERT: {ALL: 1 / 3, "Food": None, "Car": None},
}
HAND_PAIRS = {
    "sequential": {ALL: 3, "Food": 3, "Car": 3},
    "interchangeable": {ALL: 3, "Food": 2, "Car": 3},
    "optional": {ALL: 3, "Food": 3, "Car": 0},
    TASK_EXPERT: {ALL: 3, "Food": 0, "Car": 0},
}


@pytest.fixture
def study() -> Study:
    return table6_study()[0]


def unit(study: Study, name: str) -> str:
    return str(
        study.items.get(
            procedure__source_example_id=f"{study.slug}-{name}", is_attention_check=False
        ).procedure_id
    )


def test_it_computes_table_6_by_hand_from_the_stored_labels(study: Study) -> None:
    result = study_step_types_agreement(study=study)
    assert result.columns == [ALL, "Car", "Food"]
    assert [row.title for row in result.rows] == [
        "Sequential",
        "Interchangeable",
        "Optional",
        "Task-level expert",
    ]
    for row, by_column in HAND_KAPPA.items():
        for column, kappa in by_column.items():
            cell = result.table[row][column]
            assert cell.kappa == (None if kappa is None else pytest.approx(kappa)), (row, column)
            assert cell.pairs == HAND_PAIRS[row][column], (row, column)
    assert result.table["sequential"][ALL].alpha == pytest.approx(-1 / 15)
    assert result.table["interchangeable"][ALL].alpha == pytest.approx(21 / 32)
    # Items with at least two labels: every sequential pair (p2:2-3 has A's and B's), 4 of each other type.
    assert [result.table[t][ALL].items for t in ("sequential", "interchangeable", "optional")] == [6, 4, 4]
    assert (result.n_procedures, result.n_annotators, result.n_labels) == (2, 3, 3 * 14 - 1)


def test_it_leaves_the_attention_checks_and_the_missing_label_out(study: Study) -> None:
    labels, task_labels, sources = study_labels(study=study)
    assert len(labels) == 41  # 3 annotators x 2 procedures x 7 candidates, less the missing one
    assert len(task_labels) == 6
    assert sorted(sources.values()) == ["table6-p1", "table6-p2"]
    assert not any(
        label.annotator == pid("C")
        and label.unit == unit(study, "p2")
        and label.candidate_key == "sequential:2-3"
        for label in labels
    )


def test_it_takes_the_majority_of_three_and_flags_expert_knowledge(study: Study) -> None:
    result = study_step_types_agreement(study=study)
    p1, p2 = unit(study, "p1"), unit(study, "p2")
    m = result.majorities
    assert (m[(p1, "sequential:1-2")].yes, m[(p1, "sequential:1-2")].no, m[(p1, "sequential:1-2")].holds) == (
        2,
        1,
        True,
    )
    assert m[(p1, "sequential:2-3")].holds is False  # only C marked it
    assert m[(p2, "sequential:2-3")].yes == 2 and m[(p2, "sequential:2-3")].no == 0  # C's label missing
    counts = {c.step_type: c for c in result.counts}
    seq, inter, opt = counts["sequential"], counts["interchangeable"], counts["optional"]
    assert (seq.candidates, seq.positives, seq.negatives, seq.ties) == (6, 5, 1, 0)
    assert (inter.candidates, inter.positives, inter.negatives, inter.ties) == (4, 1, 3, 0)
    assert (opt.candidates, opt.positives, opt.negatives, opt.ties) == (4, 1, 3, 0)
    assert (seq.expert_yes, seq.expert_no, seq.unsure) == (2, 1, 2)
    assert (inter.expert_yes, inter.expert_no, inter.unsure) == (0, 1, 0)
    assert (opt.expert_yes, opt.expert_no, opt.unsure) == (0, 0, 1)


def test_it_says_unsure_when_the_markers_disagree_on_expert_knowledge(study: Study) -> None:
    m = study_step_types_agreement(study=study).majorities
    p1, p2 = unit(study, "p1"), unit(study, "p2")
    # Footnote 4: two of three marked it and their expert answers conflict.
    assert m[(p1, "sequential:1-2")].expert is Expert.UNSURE  # A yes, C no
    assert m[(p1, "optional@0:1")].expert is Expert.UNSURE  # A yes, B no
    assert m[(p2, "sequential:2-3")].expert is Expert.UNSURE  # A yes, B no (C's label missing)
    # All three marked it: the majority of their answers.
    assert m[(p1, "sequential:0-1")].expert is Expert.YES  # yes, yes, no
    assert m[(p2, "interchangeable@0:1-2")].expert is Expert.NO
    # Two agree.
    assert m[(p2, "sequential:0-1")].expert is Expert.NO and m[(p2, "sequential:1-2")].expert is Expert.YES
    # Not a majority: no flag, whatever the one marker said.
    assert m[(p1, "sequential:2-3")].expert is None


def test_it_computes_the_contradiction_rate_of_the_majority_labels(study: Study) -> None:
    c = study_step_types_agreement(study=study).contradiction
    # Sequential pairs that hold: p1 0-1, 1-2; p2 0-1, 1-2, 2-3 (5). Those with an interchangeable
    # counterpart (same two steps at anchor j-1, so not 0-1): p1 1-2 (p1 @0:1-2 does not hold), p2 1-2
    # (p2 @0:1-2 holds: a contradiction), p2 2-3 (p2 @1:2-3 does not hold). 1 of 3.
    assert (c.both, c.comparable, c.sequential) == (1, 3, 5)
    assert c.rate == pytest.approx(1 / 3)


def test_it_scores_attention_checks_per_participant(study: Study) -> None:
    scores = {a.prolific_pid: a for a in study_step_types_agreement(study=study).attention}
    assert (scores[pid("A")].items, scores[pid("A")].passed, scores[pid("A")].total) == (2, 1, 1)
    assert (scores[pid("B")].passed, scores[pid("B")].total, scores[pid("B")].rate) == (0, 1, 0.0)
    assert (scores[pid("C")].total, scores[pid("C")].rate) == (0, None)


def test_it_reports_a_tie_with_four_annotators_and_never_breaks_it() -> None:
    study = step_study("four", k=4)
    item = add_item(study, make_procedure(goal="Check the oil", steps=THREE_STEPS, topic="Car"))
    # sequential:0-1 2 of 4 (tie); sequential:1-2 3 of 4 (holds; expert yes / no / unanswered: Unsure);
    # interchangeable@0:1-2 1 of 4; optional@0:1 none.
    marks: dict[str, dict[str, bool | None]] = {
        "A": {"sequential:0-1": True, "sequential:1-2": True, "interchangeable@0:1-2": False},
        "B": {"sequential:0-1": False, "sequential:1-2": False},
        "C": {"sequential:1-2": None},
        "D": {},
    }
    for annotator, given in marks.items():
        annotate(item, annotator, given, task_expert=annotator in "AB")
    result = study_step_types_agreement(study=study)
    p = str(item.procedure_id)
    tie = result.majorities[(p, "sequential:0-1")]
    assert (tie.yes, tie.no, tie.tie, tie.holds, tie.expert) == (2, 2, True, None, None)
    assert result.majorities[(p, "sequential:1-2")].holds is True
    assert result.majorities[(p, "sequential:1-2")].expert is Expert.UNSURE
    counts = {c.step_type: c for c in result.counts}
    assert (counts["sequential"].positives, counts["sequential"].ties, counts["sequential"].negatives) == (
        1,
        1,
        0,
    )
    assert [(t.candidate, t.yes, t.no) for t in result.ties] == [("sequential:0-1", 2, 2)]
    # The tie is not a sequential pair that holds; 1-2's counterpart @0:1-2 does not hold.
    assert (result.contradiction.both, result.contradiction.comparable, result.contradiction.sequential) == (
        0,
        1,
        1,
    )
    # Task level, one procedure: A, B yes; C, D no. Every one of the 6 pairs shares this single item, so
    # every kappa is undefined by the one rule (fewer than 2 items) whether the pair agrees (p_e = 1) or not
    # (before the rule, the 4 mixed pairs gave 0 and the 2 agreeing ones "—"). No mean; the reason says so.
    task = result.table[TASK_EXPERT][ALL]
    assert (task.kappa, task.pairs, task.items) == (None, 0, 1)
    assert task.kappa_undefined.startswith("undefined: κ is undefined for each of the 6 annotator pairs")


def test_it_has_no_figures_without_labels() -> None:
    result = study_step_types_agreement(study=step_study("empty"))
    assert result.n_labels == 0 and result.contradiction.rate is None
    assert result.table["sequential"][ALL].kappa is None
    assert TASK_EXPERT not in result.table


# --- pages and API -----------------------------------------------------------------------------------------


def test_it_shows_a_step_types_study_at_its_agreement_url(
    study: Study, staff: Client, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(12):
        response = staff.get(reverse("agreement:study", args=[study.slug]))
    assert response.status_code == 200
    assert "annotation/step_types_agreement.html" in [t.name for t in response.templates]
    html = response.content.decode()
    for text in ("Sequential", "Interchangeable", "Optional", "Task-level expert", "-0.16", "0.67", "Food"):
        assert text in html
    assert pid("A") in html and "1 / 1" in html and "0 / 1" in html
    # The contradiction rate on both bases (#19 item 19). Sequential pairs that hold (majority): p1:0-1,
    # p1:1-2, p2:0-1, p2:1-2, p2:2-3 (5). Comparable (a counterpart, so not x:0-1): p1:1-2 (@0 does not hold),
    # p2:1-2 (@0 holds), p2:2-3 (@1 does not): 1 of 3. Every sequential pair, the paper's base: 1 of 5.
    assert "33&nbsp;%" in html and "1 of 3 pairs whose interchangeable counterpart was labelled" in html
    assert "20&nbsp;%" in html and "1 of 5 sequential pairs" in html
    low, high = wilson_interval(1, 5) or (0.0, 0.0)
    assert f"95 % Wilson {low:.3f}\N{EN DASH}{high:.3f}). Paper, on this base: 9 %" in html


def test_it_shows_a_label_set_and_the_list_of_label_sets(staff: Client) -> None:
    StepTypeLabelSet.objects.create(name="sio-test", source_file="sio.jsonl")
    listing = staff.get(reverse("agreement:step_types_label_sets"))
    assert listing.status_code == 200 and b"sio-test" in listing.content
    page = staff.get(reverse("agreement:step_types_label_set", args=["sio-test"]))
    assert page.status_code == 200 and b"No labels yet" in page.content
    assert staff.get(reverse("agreement:step_types_label_set", args=["nope"])).status_code == 404


def test_it_serves_the_same_figures_as_json(study: Study, staff: Client) -> None:
    data = staff.get(reverse("step-types-agreement-api"), {"study": study.slug}).json()
    assert data["study"] == study.slug and data["label_set"] is None
    assert data["columns"] == [ALL, "Car", "Food"]
    assert list(data["table"]) == ["sequential", "interchangeable", "optional", TASK_EXPERT]
    assert data["table"]["sequential"][ALL]["kappa"] == pytest.approx(-7 / 44)
    assert data["table"]["sequential"][ALL]["alpha"] == pytest.approx(-1 / 15)
    assert data["table"]["optional"]["Car"]["kappa"] is None
    assert data["counts"]["sequential"] == {
        "candidates": 6,
        "positives": 5,
        "negatives": 1,
        "ties": 0,
        "expert_yes": 2,
        "expert_no": 1,
        "unsure": 2,
    }
    assert data["contradiction"]["rate"] == pytest.approx(1 / 3)
    low, high = wilson_interval(1, 5) or (None, None)
    assert data["contradiction"]["of_sequential"] == {
        "k": 1,
        "n": 5,
        "rate": 0.2,
        "ci_low": low,
        "ci_high": high,
    }
    assert (data["contradiction"]["of_comparable"]["k"], data["contradiction"]["of_comparable"]["n"]) == (
        1,
        3,
    )
    assert {a["prolific_pid"]: a["passed"] for a in data["attention"]} == {
        pid("A"): 1,
        pid("B"): 0,
        pid("C"): 0,
    }
    assert len(data["majorities"]) == 14
    unsure = [m for m in data["majorities"] if m["expert"] == "unsure"]
    assert {(m["source_example_id"], m["candidate"]) for m in unsure} == {
        ("table6-p1", "sequential:1-2"),
        ("table6-p1", "optional@0:1"),
        ("table6-p2", "sequential:2-3"),
    }


def test_it_refuses_an_api_query_without_exactly_one_source(study: Study, staff: Client) -> None:
    url = reverse("step-types-agreement-api")
    assert staff.get(url).status_code == 400
    assert staff.get(url, {"study": study.slug, "label_set": "x"}).status_code == 400
    assert staff.get(url, {"study": "nope"}).status_code == 404
    assert staff.get(url, {"label_set": "nope"}).status_code == 404


@pytest.mark.parametrize(
    "name, args",
    [
        ("agreement:study", ["table6"]),
        ("agreement:step_types_label_sets", []),
        ("agreement:step_types_label_set", ["sio-test"]),
    ],
)
def test_it_keeps_the_pages_to_staff(study: Study, user_client: Client, name: str, args: list[str]) -> None:
    StepTypeLabelSet.objects.create(name="sio-test")
    url = reverse(name, args=args)
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and reverse("login") in anonymous["Location"]
    assert user_client.get(url).status_code == 403


def test_it_keeps_the_api_to_staff(study: Study, user_client: Client) -> None:
    url = reverse("step-types-agreement-api")
    assert Client().get(url, {"study": study.slug}).status_code in {401, 403}
    assert user_client.get(url, {"study": study.slug}).status_code == 403


def test_it_answers_only_get(study: Study, staff: Client) -> None:
    assert staff.post(reverse("agreement:study", args=[study.slug])).status_code == 405
    assert staff.post(reverse("agreement:step_types_label_sets")).status_code == 405
    assert staff.post(reverse("step-types-agreement-api"), {"study": study.slug}).status_code == 405
