"""The pairwise kind: its builder's pairs, the left/right draw, the reading gate over both L2s, its answers'
checks, what it stores and exports, its attention checks and its figures, through the engine's services."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from django.http import QueryDict

from annotation.base.models import Annotation, Assignment, StudyItem
from annotation.base.registry import kind_for
from annotation.base.types import Refused
from annotation.flow import services
from annotation.kinds.pairwise.data import canonical_outcome, export_rows
from annotation.kinds.pairwise.figures import study_figures
from annotation.kinds.pairwise.models import PairwiseItem
from annotation.kinds.pairwise.spec import PairFailure, PairSubmission, pairs_selected
from judging.models import PairwiseJudgment
from tests.annotation.conftest import qualified, read_everything
from tests.factories import make_judge, make_judgment

from .helpers import STEPS, make_generators, make_pairwise_study

pytestmark = pytest.mark.django_db


def submission(
    assignment: Assignment, verdict: str, failures: list[tuple[str, list[int]]] | None = None
) -> PairSubmission:
    """An answer as the item page would send it: the verdict as shown, each failure (side, its L2 steps)."""
    return PairSubmission(
        verdict=verdict,
        left=assignment.presentation["left"],
        failures=[
            PairFailure(i, side, f"failure {i}", set(), set(steps))
            for i, (side, steps) in enumerate(failures or [])
        ],
        user_agent="test",
    )


def pair_generators(item: StudyItem) -> tuple[str, str]:
    pair = PairwiseItem.objects.select_related("generation_a__generator", "generation_b__generator").get(
        item=item
    )
    return pair.generation_a.generator.generator_id, pair.generation_b.generator.generator_id


def test_the_builder_pairs_every_two_generators_on_every_goal() -> None:
    study = make_pairwise_study(n_goals=2)
    items = list(study.items.not_attention_checks())
    assert len(items) == 6  # 3 pairs of generators x 2 goals
    assert len({item.subject_key for item in items}) == 6
    pairs = PairwiseItem.objects.filter(item__study=study).select_related("generation_a", "generation_b")
    for pair in pairs:
        assert pair.generation_a.procedure_id == pair.generation_b.procedure_id
        assert pair.item.subject_key == f"pair:{pair.generation_a_id}:{pair.generation_b_id}"
    assert Counter(pair_generators(item) for item in items) == {
        ("gen-a", "gen-b"): 2,
        ("gen-a", "gen-c"): 2,
        ("gen-b", "gen-c"): 2,
    }


def test_a_sample_takes_the_pairs_of_generators_in_turn() -> None:
    study = make_pairwise_study(n_goals=5, sample_size=7, seed=3)
    counts = Counter(pair_generators(item) for item in study.items.not_attention_checks())
    assert sum(counts.values()) == 7
    assert max(counts.values()) - min(counts.values()) <= 1 and len(counts) == 3
    again = pairs_selected(services.Selection(**{**study.selection, "sample_size": 7, "seed": 3}))
    stored = list(
        PairwiseItem.objects.filter(item__study=study)
        .order_by("item__position")
        .values_list("generation_a_id", "generation_b_id")
    )
    assert again == stored  # the same seed and selection draw the same pairs


def test_fewer_than_two_generators_are_refused() -> None:
    with pytest.raises(Exception, match="at least two generators"):
        make_pairwise_study(generators=make_generators(("gen-a",)))


def test_each_item_is_shown_both_ways_over_its_participants_and_the_side_is_recorded() -> None:
    study = make_pairwise_study(n_goals=1, k=4)
    lefts: dict[int, list[str]] = {}
    for n in range(4):
        participant = qualified(study, n)
        while (assignment := services.assignment_next(participant=participant)) is not None:
            lefts.setdefault(assignment.item_id, []).append(assignment.presentation["left"])
            assignment = read_everything(assignment)
            services.annotation_submit(assignment=assignment, submission=submission(assignment, "both_none"))
            participant.refresh_from_db()
    assert len(lefts) == 3
    for shown in lefts.values():
        assert sorted(shown) == ["a", "a", "b", "b"]
    stored = Counter(a.answer["left"] for a in Annotation.objects.filter(study=study))
    assert stored == {"a": 6, "b": 6}


def test_the_reading_gate_covers_both_l2s() -> None:
    study = make_pairwise_study(n_goals=1, k=1)
    participant = qualified(study, 1)
    assignment = services.assignment_next(participant=participant)
    a, b = pair_generators(assignment.item)
    assert assignment.n_reading_steps == len(STEPS[a]) + len(STEPS[b])
    steps = kind_for(study).reading_steps(assignment.item, assignment.presentation)
    left, right = (a, b) if assignment.presentation["left"] == "a" else (b, a)
    assert steps == STEPS[left] + STEPS[right]
    services.assignment_acknowledge_goal(assignment=assignment)
    services.assignment_reveal_step(assignment=assignment, number=1)
    with pytest.raises(Refused, match="Read every step of both L2s"):
        services.annotation_submit(assignment=assignment, submission=submission(assignment, "both_none"))
    assert not Annotation.objects.exists()


REFUSED: list[tuple[str, list[tuple[str, list[int]]], str, str]] = [
    ("", [], "verdict", "Choose which L2"),
    ("both_none", [("left", [1])], "verdict", "You listed critical failures"),
    ("left", [], "verdict", "list the critical failures of the second L2"),
    ("left", [("left", [1]), ("right", [1])], "verdict", "more than the first one has"),
    ("both_fail", [("left", [1])], "verdict", "as many critical failures for each L2"),
    ("right", [("left", [1]), ("", [1])], "failure:2", "first or the second L2"),
    ("right", [("left", [99])], "failure:1", "does not have"),
    ("right", [("left", [])], "failure:1", "select the L1 and/or L2 step"),
]


@pytest.mark.parametrize(("verdict", "failures", "field", "message"), REFUSED)
def test_an_inconsistent_answer_is_refused_and_nothing_is_stored(
    verdict: str, failures: list[tuple[str, list[int]]], field: str, message: str
) -> None:
    study = make_pairwise_study(n_goals=1, k=1)
    assignment = read_everything(services.assignment_next(participant=qualified(study, 1)))
    with pytest.raises(Refused, match=message) as refused:
        services.annotation_submit(
            assignment=assignment, submission=submission(assignment, verdict, failures)
        )
    assert refused.value.field == field
    assert not Annotation.objects.exists()
    assert Assignment.objects.get(pk=assignment.pk).status == "active"


def test_the_answer_is_stored_with_the_side_shown_and_exported_on_the_pair() -> None:
    study = make_pairwise_study(n_goals=1, k=1)
    assignment = read_everything(services.assignment_next(participant=qualified(study, 1)))
    failures = [("right", [1]), ("right", [2])]
    services.annotation_submit(assignment=assignment, submission=submission(assignment, "left", failures))
    annotation = Annotation.objects.get()
    left = assignment.presentation["left"]
    right = "b" if left == "a" else "a"
    assert annotation.answer["left"] == left and annotation.answer["verdict"] == "left"
    assert annotation.n_failures == 2
    [row] = list(export_rows(study))
    assert row["outcome"] == ("a_better" if left == "a" else "b_better")
    assert row["left_generator"] == row[f"generator_{left}"]
    assert [f["generation"] for f in row["critical_failures"]] == [right, right]
    assert [f["L2_steps"] for f in row["critical_failures"]] == [[1], [2]]


@pytest.mark.parametrize(
    ("verdict", "left", "outcome"),
    [
        ("left", "a", "a_better"),
        ("left", "b", "b_better"),
        ("right", "a", "b_better"),
        ("right", "b", "a_better"),
        ("both_none", "b", "tie_none"),
        ("both_fail", "a", "tie_fail"),
    ],
)
def test_a_verdict_said_on_screen_is_an_outcome_on_the_pair(verdict: str, left: str, outcome: str) -> None:
    assert canonical_outcome(verdict, left) == outcome


def test_attention_checks_instruct_a_side_and_are_scored() -> None:
    study = make_pairwise_study(n_goals=1, k=1, attention_checks=2, attention_check_every=1)
    checks = list(StudyItem.objects.filter(study=study, is_attention_check=True).order_by("position"))
    assert [c.payload["expects"] for c in checks] == ["right", "left"]
    participant = qualified(study, 1)
    passed = []
    while (assignment := services.assignment_next(participant=participant)) is not None:
        assignment = read_everything(assignment)
        item = assignment.item
        verdict = item.payload["expects"] if item.is_attention_check and not passed else "both_none"
        services.annotation_submit(assignment=assignment, submission=submission(assignment, verdict))
        if item.is_attention_check:
            passed.append(Annotation.objects.get(assignment_id=assignment.pk).attention_passed)
        participant.refresh_from_db()
    assert passed == [True, False]


def _annotate_preferring(study: Any, order: list[str], n_participants: int) -> None:
    """Every participant prefers the generator earlier in `order`, listing one failure on the other side."""
    rank = {g: i for i, g in enumerate(order)}
    for n in range(n_participants):
        participant = qualified(study, 100 + n)
        while (assignment := services.assignment_next(participant=participant)) is not None:
            assignment = read_everything(assignment)
            a, b = pair_generators(assignment.item)
            better = a if rank[a] < rank[b] else b
            left_generator = a if assignment.presentation["left"] == "a" else b
            shown = "left" if better == left_generator else "right"
            other = "right" if shown == "left" else "left"
            answer = submission(assignment, shown, [(other, [1])])
            services.annotation_submit(assignment=assignment, submission=answer)
            participant.refresh_from_db()


def test_the_figures_rank_the_generators_the_annotators_prefer() -> None:
    study = make_pairwise_study(n_goals=3, k=3)
    _annotate_preferring(study, ["gen-c", "gen-a", "gen-b"], 3)
    figures = study_figures(study, resamples=50)
    humans = figures.humans
    assert humans.n_answers == 27 and humans.n_items == 9 and humans.n_majorities == 9
    assert [s.generator for s in humans.ranking.strengths] == ["gen-c", "gen-a", "gen-b"]
    assert humans.alpha.value == pytest.approx(1.0)
    shown_left = sum(
        a.answer["verdict"] == "left"
        for a in Annotation.objects.filter(study=study, item__is_attention_check=False)
    )
    assert humans.position.left.k == shown_left and humans.position.left.n == 27


def test_the_figures_compare_the_twin_and_the_pointwise_judge_with_the_annotators() -> None:
    study = make_pairwise_study(n_goals=2, k=1)
    _annotate_preferring(study, ["gen-c", "gen-a", "gen-b"], 1)
    twin, pointwise = make_judge(judge_id="twin"), make_judge(judge_id="pointwise")
    pairs = list(PairwiseItem.objects.filter(item__study=study).select_related("generation_a__generator"))
    for pair in pairs:  # the twin prefers A shown first, B shown second: it follows the position
        a, b = sorted((pair.generation_a_id, pair.generation_b_id))
        for order in ("ab", "ba"):
            PairwiseJudgment.objects.create(
                judge=twin,
                generation_a_id=a,
                generation_b_id=b,
                order=order,
                verdict="first",
                prompt_sha256="x",
            )
        for generation in (pair.generation_a, pair.generation_b):
            fails = generation.generator.generator_id == "gen-b"
            if not generation.judgments.filter(judge=pointwise).exists():
                make_judgment(
                    generation=generation,
                    judge=pointwise,
                    failures=[("missing boiling", [1], [1])] if fails else [],
                )
    figures = study_figures(study, resamples=50)
    [judge] = figures.judges
    assert judge.judge.judge_id == "twin"
    assert judge.flips.flips.k == 6 and judge.flips.flips.n == 6  # every pair flips with the order
    assert judge.position.left.rate == 1.0
    assert judge.agreement.answers.n == 12
    [point] = figures.pointwise
    # Pointwise prefers anything to gen-b: the 4 pairs with gen-b, where the humans agree; a-vs-c both pass.
    assert point.agreement.agreement.k == 4 and point.agreement.agreement.n == 4
    assert point.agreement.both_pass == 2


@pytest.mark.parametrize(
    "sent",
    [
        "verdict=left&verdict=right",
        "verdict=left&failure-0-description=x&failure-0-side=left&failure-0-side=right",
    ],
)
def test_a_field_sent_twice_is_refused_not_read_as_its_last_value(sent: str) -> None:
    """#31 item 17: the pairwise form reads its one-answer fields as the other forms do (one_answer)."""
    study = make_pairwise_study(n_goals=1, k=1)
    assignment = services.assignment_next(participant=qualified(study, 1))
    form = kind_for(study).parse_form(QueryDict(sent), assignment, user_agent="test")
    assert form.submission is None and form.problem is not None
    assert "is not one answer (it was sent more than once)" in form.problem.message
