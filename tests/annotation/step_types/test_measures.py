"""Step-type labels, agreement and scores on crafted data, each checked against a value worked out by hand
(the arithmetic is in the comments) or against the `krippendorff` package directly."""

from __future__ import annotations

import math
from fractions import Fraction

import krippendorff
import numpy as np
import pytest
from scipy.stats import binomtest

from annotation.kinds.step_types.candidates import Candidate, StepType, candidates
from annotation.kinds.step_types.measures import (
    ALL,
    TASK_EXPERT,
    Contradiction,
    Expert,
    Majority,
    StepTypeLabel,
    TaskExpertLabel,
    agreement_table,
    annotator_ratings,
    contradiction_rate,
    evaluate,
    evaluate_by_topic,
    expert_flag,
    f1_per_type,
    gold_labels,
    interchangeable_counterpart,
    krippendorff_alpha,
    labels_from_marks,
    majority_labels,
    pairwise_kappa,
    per_topic,
    task_expert_majority,
)
from h2e_site.stats.agreement import PairwiseKappa, average_pairwise_kappa
from h2e_site.stats.classification import Scores, macro_f1

SEQ, INT, OPT = StepType.SEQUENTIAL, StepType.INTERCHANGEABLE, StepType.OPTIONAL
STEPS = {"u1": 5, "u2": 4}  # u1: 4 sequential, 3 interchangeable, 3 optional; u2: 3, 2, 2
TOPIC = {"u1": "Food", "u2": "Car"}

# annotator -> unit -> type -> 1 (holds) / 0 per candidate in step order. C did not do u2: missing there.
MARKS = {
    "A": {"u1": {SEQ: [1, 1, 0, 1], INT: [0, 0, 0], OPT: [1, 0, 0]},
          "u2": {SEQ: [1, 0, 1], INT: [0, 0], OPT: [0, 1]}},
    "B": {"u1": {SEQ: [1, 0, 0, 1], INT: [0, 0, 0], OPT: [1, 0, 1]},
          "u2": {SEQ: [1, 1, 1], INT: [0, 0], OPT: [0, 1]}},
    "C": {"u1": {SEQ: [1, 1, 1, 0], INT: [1, 0, 0], OPT: [0, 0, 1]}},
}  # fmt: skip


def keys(unit: str, step_type: StepType) -> list[str]:
    return [c.key for c in candidates(STEPS[unit]) if c.step_type is step_type]


def crafted() -> list[StepTypeLabel]:
    return [
        StepTypeLabel(unit, annotator, key, bool(value), topic=TOPIC[unit])
        for annotator, units in MARKS.items()
        for unit, by_type in units.items()
        for step_type, values in by_type.items()
        for key, value in zip(keys(unit, step_type), values, strict=True)
    ]


def label(
    annotator: str, holds: bool, expert: bool | None = None, key: str = "sequential:0-1"
) -> StepTypeLabel:
    return StepTypeLabel("u", annotator, key, holds, expert)


# --- Submissions as labels ----------------------------------------------------------------------------------


def test_it_turns_marks_into_one_label_per_candidate() -> None:
    labels = labels_from_marks(
        unit="u",
        annotator="A",
        n_steps=4,
        marked={"sequential:1-2": False, "optional@0:1": None},
        topic="Food",
    )
    assert [(x.candidate_key, x.holds, x.expert) for x in labels] == [
        ("sequential:0-1", False, None),
        ("sequential:1-2", True, False),
        ("sequential:2-3", False, None),
        ("interchangeable@0:1-2", False, None),
        ("interchangeable@1:2-3", False, None),
        ("optional@0:1", True, None),
        ("optional@1:2", False, None),
    ]
    assert {x.topic for x in labels} == {"Food"}


def test_it_refuses_marks_that_are_not_candidates_of_the_procedure() -> None:
    with pytest.raises(ValueError, match="'optional@2:3'"):
        labels_from_marks(unit="u", annotator="A", n_steps=4, marked={"optional@2:3": False})


def test_it_refuses_two_labels_by_one_annotator_on_one_item() -> None:
    with pytest.raises(ValueError, match="labelled"):
        majority_labels([label("A", True), label("A", False)])
    with pytest.raises(ValueError, match="labelled"):
        pairwise_kappa([label("A", True), label("A", False)], SEQ)


# --- Majorities and the expert flag -------------------------------------------------------------------------


def test_it_takes_two_of_three_as_the_majority() -> None:
    majorities = majority_labels([label("A", True), label("B", True), label("C", False)])
    assert majorities == {("u", "sequential:0-1"): Majority("u", "sequential:0-1", yes=2, no=1, expert=None)}
    assert majorities["u", "sequential:0-1"].holds is True
    assert (
        majority_labels([label("A", True), label("B", False), label("C", False)])["u", "sequential:0-1"].holds
        is False
    )


def test_it_reports_an_even_split_of_four_as_a_tie_and_keeps_it_out_of_the_gold() -> None:
    tie = majority_labels([label("A", True), label("B", True), label("C", False), label("D", False)])
    assert tie["u", "sequential:0-1"].tie and tie["u", "sequential:0-1"].holds is None
    assert tie["u", "sequential:0-1"].expert is None
    assert gold_labels(tie) == {("u", "sequential:0-1"): False}
    three_of_four = majority_labels([label("A", True), label("B", True), label("C", True), label("D", False)])
    assert three_of_four["u", "sequential:0-1"].holds is True
    assert gold_labels(three_of_four) == {("u", "sequential:0-1"): True}


def test_it_counts_the_majority_over_the_labels_an_item_has() -> None:
    # one of three missing: 1-1 is a tie, 2-0 a majority
    assert majority_labels([label("A", True), label("B", False)])["u", "sequential:0-1"].holds is None
    assert majority_labels([label("A", True), label("B", True)])["u", "sequential:0-1"].holds is True


@pytest.mark.parametrize(
    ("marks", "expected"),
    [
        # footnote 4: two of three mark it and disagree on expert knowledge -> Unsure
        ([(True, True), (True, False), (False, None)], Expert.UNSURE),
        ([(True, False), (True, False), (False, None)], Expert.NO),
        ([(True, True), (True, True), (False, None)], Expert.YES),
        # all three mark it: the majority of three answers always decides
        ([(True, True), (True, False), (True, False)], Expert.NO),
        ([(True, True), (True, True), (True, False)], Expert.YES),
        # not a positive item: no expert label (the paper labels positives only)
        ([(True, True), (False, None), (False, None)], None),
        # an unanswered expert question does not vote
        ([(True, True), (True, None), (False, None)], Expert.YES),
        ([(True, None), (True, None), (False, None)], None),
        # k = 4: three mark it, 1 yes 1 no 1 unanswered -> Unsure; four mark it 2-2 -> Unsure
        ([(True, True), (True, False), (True, None), (False, None)], Expert.UNSURE),
        ([(True, True), (True, True), (True, False), (True, False)], Expert.UNSURE),
        # k = 4, 2 of 4 mark it: a tie, not positive -> None
        ([(True, True), (True, True), (False, None), (False, None)], None),
    ],
)
def test_it_flags_expert_knowledge_as_footnote_4(
    marks: list[tuple[bool, bool | None]], expected: Expert | None
) -> None:
    labels = [label(f"a{i}", holds, expert) for i, (holds, expert) in enumerate(marks)]
    assert expert_flag(labels) is expected
    assert majority_labels(labels)["u", "sequential:0-1"].expert is expected


def test_it_takes_the_task_level_majority_with_ties_as_none() -> None:
    labels = [
        TaskExpertLabel("u1", "A", True),
        TaskExpertLabel("u1", "B", True),
        TaskExpertLabel("u1", "C", False),
        TaskExpertLabel("u2", "A", False),
        TaskExpertLabel("u2", "B", True),
    ]
    assert task_expert_majority(labels) == {"u1": True, "u2": None}


# --- Agreement ----------------------------------------------------------------------------------------------


def test_it_averages_pairwise_kappa_on_sequential_with_missing_labels_as_worked_out_by_hand() -> None:
    # Items: u1 s0..s3, u2 s0..s2. A = 1101 101, B = 1001 111, C = 1110 --- (missing on u2).
    # A-B on 7 items: TT 4, TF 1, FT 1, FF 1; p_o = 5/7; A and B 5/7 True: p_e = 25/49 + 4/49 = 29/49;
    #   kappa = (35/49 - 29/49) / (20/49) = 6/20 = 3/10.
    # A-C on u1's 4 items: TT 2, TF 1, FT 1, FF 0; p_o = 1/2; A 3/4, C 3/4 True: p_e = 9/16 + 1/16 = 5/8;
    #   kappa = (1/2 - 5/8) / (3/8) = -1/3.
    # B-C on 4: TT 1, TF 1, FT 2, FF 0; p_o = 1/4; B 1/2, C 3/4 True: p_e = 3/8 + 1/8 = 1/2;
    #   kappa = (1/4 - 1/2) / (1/2) = -1/2.
    # Mean over the three pairs: (3/10 - 1/3 - 1/2) / 3 = (9 - 10 - 15) / 90 = -8/45.
    result = pairwise_kappa(crafted(), SEQ)
    assert result.pairs == 3 and result.undefined == 0
    assert result.kappa == pytest.approx(float(Fraction(-8, 45)))


def test_it_averages_pairwise_kappa_on_optional_as_worked_out_by_hand() -> None:
    # Items: u1 o0..o2, u2 o0..o1. A = 100 01, B = 101 01, C = 001 --.
    # A-B on 5: TT 2, FT 1, FF 2; p_o = 4/5; A 2/5, B 3/5 True: p_e = 6/25 + 6/25 = 12/25;
    #   kappa = (20/25 - 12/25) / (13/25) = 8/13.
    # A-C on 3: TF 1, FT 1, FF 1; p_o = 1/3; A 1/3, C 1/3: p_e = 1/9 + 4/9 = 5/9;
    #   kappa = (-2/9) / (4/9) = -1/2.
    # B-C on 3: TT 1, TF 1, FF 1; p_o = 2/3; B 2/3, C 1/3: p_e = 2/9 + 2/9 = 4/9; kappa = (2/9) / (5/9) = 2/5.
    # Mean: (8/13 - 1/2 + 2/5) / 3 = (80 - 65 + 52) / 130 / 3 = 67/390.
    result = pairwise_kappa(crafted(), OPT)
    assert result.kappa == pytest.approx(float(Fraction(67, 390)))
    assert result.pairs == 3


def test_it_leaves_out_pairs_whose_kappa_is_undefined() -> None:
    # Interchangeable: A = 000 00, B = 000 00, C = 100 --.
    # A-B: every shared item False for both, p_e = 1: undefined, left out.
    # A-C on 3: FT 1, FF 2; p_o = 2/3; A 0, C 1/3 True: p_e = 0 + 1 * 2/3 = 2/3; kappa = 0. B-C the same.
    assert pairwise_kappa(crafted(), INT) == PairwiseKappa(kappa=0.0, pairs=2, undefined=1)


def test_it_does_not_pair_annotators_who_share_no_item() -> None:
    assert average_pairwise_kappa({"A": {"x": True, "y": False}, "B": {"z": True}}) == PairwiseKappa(
        None, 0, 0
    )


def reliability(step_type: StepType) -> np.ndarray:
    """The annotators x items matrix written out independently of the code under test (NaN: missing)."""
    rows = []
    for annotator in ("A", "B", "C"):
        row: list[float] = []
        for unit in ("u1", "u2"):
            values = MARKS[annotator].get(unit, {}).get(step_type)
            row += [float(v) for v in values] if values else [math.nan] * len(keys(unit, step_type))
        rows.append(row)
    return np.array(rows)


@pytest.mark.parametrize("step_type", [SEQ, INT, OPT])
def test_it_computes_alpha_as_the_krippendorff_package_with_nan_for_missing(step_type: StepType) -> None:
    expected = krippendorff.alpha(reliability_data=reliability(step_type), level_of_measurement="nominal")
    assert krippendorff_alpha(crafted(), step_type) == pytest.approx(expected)


def test_it_gives_no_alpha_without_pairable_disagreement_or_without_pairs() -> None:
    same = [label("A", False), label("B", False)]
    assert krippendorff_alpha(same, SEQ) is None
    assert krippendorff_alpha([label("A", True)], SEQ) is None
    assert krippendorff_alpha([], SEQ) is None


def test_it_lays_out_agreement_as_table_6() -> None:
    task_labels = [
        TaskExpertLabel("u1", "A", True, "Food"),
        TaskExpertLabel("u1", "B", True, "Food"),
        TaskExpertLabel("u1", "C", False, "Food"),
        TaskExpertLabel("u2", "A", False, "Car"),
        TaskExpertLabel("u2", "B", True, "Car"),
    ]
    table = agreement_table(crafted(), task_labels)
    assert list(table) == ["sequential", "interchangeable", "optional", TASK_EXPERT]
    assert list(table["sequential"]) == [ALL, "Car", "Food"]
    assert table["sequential"][ALL].kappa == pytest.approx(-8 / 45)
    assert table["sequential"][ALL].items == 7
    # Food (u1 only): A-B: TT 2, TF 1, FF 1; p_o = 3/4; A 3/4, B 1/2: p_e = 3/8 + 1/8 = 1/2; kappa = 1/2.
    # A-C = -1/3 and B-C = -1/2 as above (C only did u1). Mean (1/2 - 1/3 - 1/2) / 3 = -1/9.
    assert table["sequential"]["Food"].kappa == pytest.approx(-1 / 9)
    # Car (u2): only A-B: A 101, B 111: TT 2, FT 1; p_o = 2/3; A 2/3, B 1: p_e = 2/3; kappa = 0.
    assert table["sequential"]["Car"].kappa == pytest.approx(0.0)
    assert table["sequential"]["Car"].pairs == 1
    expected_alpha = krippendorff.alpha(reliability_data=reliability(SEQ), level_of_measurement="nominal")
    assert table["sequential"][ALL].alpha == pytest.approx(expected_alpha)
    # Task level: A-B on u1, u2: TT 1, FT 1; p_o = 1/2; A 1/2, B 1: p_e = 1/2; kappa = 0.
    # A-C and B-C share u1 only: a single item, undefined by the one rule (h2e_site.stats), left out.
    # Mean 0 over the one pair A-B.
    assert table[TASK_EXPERT][ALL].kappa == pytest.approx(0.0)
    assert table[TASK_EXPERT][ALL].pairs == 1


def test_it_leaves_the_task_row_out_without_task_answers() -> None:
    assert TASK_EXPERT not in agreement_table(crafted())


def test_it_splits_rows_by_topic_with_all_first() -> None:
    rows = [("a", "Food"), ("b", None), ("c", "Car"), ("d", "Food")]
    assert per_topic(rows, lambda row: row[1]) == {
        ALL: rows,
        "Car": [("c", "Car")],
        "Food": [("a", "Food"), ("d", "Food")],
    }


def test_it_groups_ratings_by_annotator_and_type() -> None:
    ratings = annotator_ratings(crafted(), INT)
    assert ratings["C"] == {("u1", "interchangeable@0:1-2"): True, ("u1", "interchangeable@1:2-3"): False,
                            ("u1", "interchangeable@2:3-4"): False}  # fmt: skip


# --- SEQUENTIAL and INTERCHANGEABLE together ----------------------------------------------------------------


def test_it_compares_a_sequential_pair_with_the_interchangeable_pair_on_the_same_steps() -> None:
    assert interchangeable_counterpart(Candidate.sequential(3)) == Candidate.interchangeable(2)
    counterpart = interchangeable_counterpart(Candidate.sequential(3))
    assert counterpart is not None and counterpart.steps == (3, 4)
    assert interchangeable_counterpart(Candidate.sequential(0)) is None
    with pytest.raises(ValueError, match="not a sequential pair"):
        interchangeable_counterpart(Candidate.optional(0))


def test_it_computes_the_contradiction_rate_as_worked_out_by_hand() -> None:
    decisions: dict[tuple[str, str], bool | None] = {
        # u1 (5 steps)
        ("u1", "sequential:0-1"): True,  # no counterpart: sequential only
        ("u1", "sequential:1-2"): True,  # counterpart interchangeable@0:1-2 holds: both
        ("u1", "sequential:2-3"): True,  # counterpart interchangeable@1:2-3 does not: comparable
        ("u1", "sequential:3-4"): False,  # not sequential: its counterpart's True does not count
        ("u1", "interchangeable@0:1-2"): True,
        ("u1", "interchangeable@1:2-3"): False,
        ("u1", "interchangeable@2:3-4"): True,
        ("u1", "optional@0:1"): True,  # other types play no part
        # u2 (4 steps)
        ("u2", "sequential:0-1"): True,  # no counterpart
        ("u2", "sequential:1-2"): True,  # counterpart interchangeable@0:1-2 undecided: not comparable
        ("u2", "sequential:2-3"): True,  # counterpart unparsable (None): comparable, does not hold
        ("u2", "interchangeable@1:2-3"): None,
    }
    # sequential that hold: u1 3 + u2 3 = 6; comparable: u1 1-2, u1 2-3, u2 2-3 = 3; both: u1 1-2 = 1.
    result = contradiction_rate(decisions)
    assert result == Contradiction(both=1, comparable=3, sequential=6)
    assert result.rate == pytest.approx(1 / 3)
    assert result.interval == pytest.approx(binomtest(1, 3).proportion_ci(method="wilson"))
    assert contradiction_rate({}).rate is None and contradiction_rate({}).interval is None


def test_it_computes_the_contradiction_rate_of_human_majorities() -> None:
    # Sequential majorities: u1 s0 (3/3) s1 (2/3) s3 (2/3); u2 s0 s1 s2 (A, B) except u2 s1 is 1-1: a tie.
    # Interchangeable majorities: none hold (u1 i0 is 1/3). Comparable: u1 s1, u1 s3, u2 s2; both: 0.
    result = contradiction_rate(gold_labels(majority_labels(crafted())))
    assert result == Contradiction(both=0, comparable=3, sequential=5)
    assert result.rate == 0.0


# --- Model scores -------------------------------------------------------------------------------------------


GOLD = {
    ("u1", "sequential:0-1"): True,
    ("u1", "sequential:1-2"): True,
    ("u1", "sequential:2-3"): False,
    ("u1", "sequential:3-4"): True,
    ("u2", "sequential:0-1"): True,
    ("u2", "sequential:1-2"): False,
    ("u2", "sequential:2-3"): True,
    ("u1", "interchangeable@0:1-2"): True,
    ("u1", "interchangeable@1:2-3"): False,
    ("u1", "interchangeable@2:3-4"): False,
    ("u2", "interchangeable@0:1-2"): False,
    ("u2", "interchangeable@1:2-3"): True,
    ("u1", "optional@0:1"): False,
    ("u1", "optional@1:2"): False,
    ("u1", "optional@2:3"): False,
    ("u2", "optional@0:1"): False,
    ("u2", "optional@1:2"): False,
}
PREDICTIONS: dict[tuple[str, str], bool | None] = {
    ("u1", "sequential:0-1"): True,  # TP
    ("u1", "sequential:1-2"): False,  # FN
    ("u1", "sequential:2-3"): True,  # FP
    ("u1", "sequential:3-4"): True,  # TP
    ("u2", "sequential:0-1"): True,  # TP
    # u2 sequential:1-2 missing: predicted negative, TN
    ("u2", "sequential:2-3"): None,  # unparsable: negative, FN
    ("u1", "interchangeable@0:1-2"): True,  # TP
    ("u1", "interchangeable@1:2-3"): True,  # FP
    ("u1", "interchangeable@2:3-4"): False,  # TN
    ("u2", "interchangeable@0:1-2"): False,  # TN
    ("u2", "interchangeable@1:2-3"): False,  # FN
    ("u1", "optional@0:1"): True,  # FP; the rest missing: TN
    ("u9", "sequential:0-1"): True,  # not a gold item: ignored
}


def test_it_scores_each_type_as_worked_out_by_hand() -> None:
    per_type = f1_per_type(PREDICTIONS, GOLD)
    # Sequential: TP 3, FP 1, FN 2, TN 1: P = 3/4, R = 3/5, F1 = 2 (9/20) / (27/20) = 2/3.
    assert per_type[SEQ] == Scores(tp=3, fp=1, fn=2, tn=1)
    assert (per_type[SEQ].precision, per_type[SEQ].recall) == (0.75, 0.6)
    assert per_type[SEQ].f1 == pytest.approx(2 / 3)
    # Interchangeable: TP 1, FP 1, FN 1, TN 2: P = R = F1 = 1/2.
    assert per_type[INT] == Scores(tp=1, fp=1, fn=1, tn=2)
    assert per_type[INT].f1 == pytest.approx(0.5)
    # Optional: TP 0, FP 1, FN 0, TN 4: P = 0/1 = 0, R = 0/0 -> 0.0, F1 -> 0.0 (the paper's Table 9 zeros).
    assert per_type[OPT] == Scores(tp=0, fp=1, fn=0, tn=4)
    assert (per_type[OPT].precision, per_type[OPT].recall, per_type[OPT].f1) == (0.0, 0.0, 0.0)


def test_it_averages_all_over_types_as_table_3() -> None:
    # P = (3/4 + 1/2 + 0) / 3 = 5/12; R = (3/5 + 1/2 + 0) / 3 = 11/30; F1 = (2/3 + 1/2 + 0) / 3 = 7/18.
    # (Micro over the pooled confusion, TP 4 FP 3 FN 3, would give 4/7: not what the paper reports.)
    macro = macro_f1(f1_per_type(PREDICTIONS, GOLD))
    assert macro.precision == pytest.approx(5 / 12)
    assert macro.recall == pytest.approx(11 / 30)
    assert macro.f1 == pytest.approx(7 / 18)
    assert macro.types == 3
    assert evaluate(PREDICTIONS, GOLD).all == macro


def test_it_reproduces_table_3_all_for_llama_3_1_70b() -> None:
    # Counts consistent with Table 3's LLAMA-3.1-70B row and Table 2's 980 / 149 / 98 positives:
    # sequential 891/980 recalled, 891/1059 precise; interchangeable 75/149, 75/222; optional 72/98, 72/279.
    per_type = {
        SEQ: Scores(tp=891, fp=168, fn=89, tn=130),
        INT: Scores(tp=75, fp=147, fn=74, tn=699),
        OPT: Scores(tp=72, fp=207, fn=26, tn=690),
    }
    printed = {SEQ: (84.1, 90.9, 87.4), INT: (33.8, 50.3, 40.4), OPT: (25.8, 73.5, 38.2)}
    for step_type, (p, r, f1) in printed.items():
        s = per_type[step_type]
        assert (round(100 * s.precision, 1), round(100 * s.recall, 1), round(100 * s.f1, 1)) == (p, r, f1)
    macro = macro_f1(per_type)
    assert (round(100 * macro.precision, 1), round(100 * macro.recall, 1), round(100 * macro.f1, 1)) == (
        47.9,
        71.6,
        55.3,
    )


def test_it_leaves_types_without_instances_out_of_all() -> None:
    gold = {("u", "sequential:0-1"): True}
    evaluation = evaluate({("u", "sequential:0-1"): True}, gold)
    assert evaluation.per_type[INT] == Scores(0, 0, 0, 0)
    assert evaluation.all.f1 == 1.0 and evaluation.all.types == 1
    assert macro_f1({}).types == 0


def test_it_scores_per_topic() -> None:
    by_topic = evaluate_by_topic(PREDICTIONS, GOLD, TOPIC)
    assert list(by_topic) == [ALL, "Car", "Food"]
    assert by_topic[ALL] == evaluate(PREDICTIONS, GOLD)
    # Car = u2: sequential TP 1 (s0), TN 1 (s1), FN 1 (s2): P = 1, R = 1/2, F1 = 2/3.
    assert by_topic["Car"].per_type[SEQ] == Scores(tp=1, fp=0, fn=1, tn=1)
    assert by_topic["Car"].per_type[SEQ].f1 == pytest.approx(2 / 3)
    # Food = u1: sequential TP 2, FN 1, FP 1: P = R = F1 = 2/3.
    assert by_topic["Food"].per_type[SEQ] == Scores(tp=2, fp=1, fn=1, tn=0)
