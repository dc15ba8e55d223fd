"""The step_types study kind on the shared annotation engine (#13 items 1-2): items over procedures, the
reading gate over the procedure's steps, the participant's marks validated on the server (unknown
candidates, missing expert answers, expert answers for unmarked candidates), one label per candidate stored,
attention checks, and the item page over HTTP."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.models import Annotation, Assignment, Study, StudyItem
from annotation.base.registry import StudyKind
from annotation.flow import services
from annotation.kinds.step_types import guidelines
from annotation.kinds.step_types.candidates import candidates
from annotation.kinds.step_types.models import StepCandidate, StepTypeLabel
from annotation.kinds.step_types.spec import StepTypesSubmission
from mining.models import Split
from tests.annotation.conftest import qualified, read_everything
from tests.annotation.test_views import qualify, read_all, url
from tests.factories import make_procedure, make_topic

pytestmark = pytest.mark.django_db

STEPS = [
    "Lay the base item flat",
    "Place the patch",
    "Heat up an iron",
    "Cover with a towel",
    "Press the iron",
]


def make_step_study(
    *, n_procedures: int = 3, k: int = 3, dwell: int = 0, attention_checks: int = 0, every: int = 0
) -> Study:
    topic = make_topic("Home and Garden")
    for i in range(n_procedures):
        make_procedure(goal=f"Iron on a patch, variant {i}", steps=STEPS, topic=topic)
    make_procedure(goal="Too short", steps=["One", "Two"], topic=topic)  # no anchored candidate: left out
    make_procedure(goal="Other topic", steps=STEPS, topic="Cars")
    return services.study_create(
        title="Patch steps",
        slug="patch-steps",
        kind=StudyKind.STEP_TYPES,
        selection=services.Selection(topic_ids=[topic.pk], splits=[Split.BENCH]),
        attention_checks=attention_checks,
        annotators_per_item=k,
        min_dwell_seconds=dwell,
        items_per_participant=0,
        attention_check_every=every,
    )


def submission(marks: dict[str, bool | None], expert: bool | None = False) -> StepTypesSubmission:
    return StepTypesSubmission(marks=marks, expert_knowledge=expert, user_agent="test")


def test_a_study_of_procedures_with_the_kinds_own_texts() -> None:
    study = make_step_study(attention_checks=2)
    items = list(study.items.order_by("position"))
    regular = [item for item in items if not item.is_attention_check]
    assert study.kind == StudyKind.STEP_TYPES
    assert len(regular) == 3 and all(item.procedure and item.generation is None for item in regular)
    assert {item.procedure.topic.name for item in regular} == {"Home and Garden"}
    checks = [item for item in items if item.is_attention_check]
    assert len(checks) == 2
    assert {candidates(5)[0].key} <= {c.key for c in candidates(5)}  # payloads name real candidates
    for check in checks:
        assert check.payload["expects"] in {c.key for c in candidates(len(check.procedure.steps))}
    assert study.training_text == guidelines.TRAINING
    assert study.comprehension_questions == guidelines.default_comprehension_questions()


def test_the_participant_reads_every_step_then_one_label_per_candidate_is_stored() -> None:
    study = make_step_study()
    participant = qualified(study, 1)
    assignment = services.assignment_next(participant=participant)
    assert assignment is not None and assignment.n_reading_steps == len(STEPS)
    assignment = read_everything(assignment)
    marks = {"sequential:0-1": False, "interchangeable@0:1-2": False, "optional@2:3": True}
    result = services.annotation_submit(assignment=assignment, submission=submission(marks, expert=True))
    annotation = result.annotation
    assert annotation.has_failure is None and annotation.answer == {"expert_knowledge": True}
    labels = {label.candidate.key: label for label in StepTypeLabel.objects.filter(annotation=annotation)}
    assert set(labels) == {c.key for c in candidates(len(STEPS))}  # every candidate, marked or not
    assert {key for key, label in labels.items() if label.holds} == set(marks)
    assert labels["optional@2:3"].expert is True and labels["sequential:0-1"].expert is False
    assert labels["sequential:1-2"].holds is False and labels["sequential:1-2"].expert is None
    assert all(label.annotator == participant.prolific_pid for label in labels.values())
    assert StepCandidate.objects.filter(procedure=assignment.item.procedure).count() == 3 * len(STEPS) - 5


@pytest.mark.parametrize(
    ("marks", "expert", "field"),
    [
        ({"sequential:7-8": False}, False, "mark"),  # no such candidate in 5 steps
        ({"sequential:0-1": None}, False, "expert-sequential:0-1"),  # marked, expert question unanswered
        ({}, None, "expert_knowledge"),  # the task-level question unanswered
    ],
)
def test_the_service_refuses_an_incomplete_or_impossible_answer(
    marks: dict[str, bool | None], expert: bool | None, field: str
) -> None:
    study = make_step_study()
    assignment = read_everything(services.assignment_next(participant=qualified(study, 1)))
    with pytest.raises(services.Refused) as refused:
        services.annotation_submit(assignment=assignment, submission=submission(marks, expert))
    assert refused.value.field == field
    assert not Annotation.objects.exists() and not StepTypeLabel.objects.exists()


def test_the_shared_gates_hold_for_this_kind_too() -> None:
    study = make_step_study(dwell=60)
    assignment = services.assignment_next(participant=qualified(study, 1))
    assert assignment is not None
    services.assignment_acknowledge_goal(assignment=assignment)
    services.assignment_reveal_step(assignment=assignment, number=1)
    Assignment.objects.filter(pk=assignment.pk).update(
        issued_at=assignment.issued_at - timedelta(seconds=120)
    )
    assignment.refresh_from_db()
    with pytest.raises(services.Refused, match=r"\(1 of 5 read\)"):
        services.annotation_submit(assignment=assignment, submission=submission({}))
    fresh = services.assignment_next(participant=assignment.participant)
    assert fresh is not None and fresh.pk == assignment.pk  # the same item, still leased


def test_k_participants_per_procedure_exactly() -> None:
    study = make_step_study(n_procedures=1, k=2)
    for n in (1, 2):
        assignment = read_everything(services.assignment_next(participant=qualified(study, n)))
        services.annotation_submit(assignment=assignment, submission=submission({}))
    assert services.assignment_next(participant=qualified(study, 3)) is None
    item = study.items.get()
    assert (item.assigned_count, item.completed_count) == (2, 2)


def test_an_attention_check_passes_only_with_exactly_the_instructed_mark() -> None:
    """It says: mark only that candidate and say that it needs no expert knowledge."""
    study = make_step_study(n_procedures=1, attention_checks=1, every=1)
    check = StudyItem.objects.get(study=study, is_attention_check=True)
    expected = check.payload["expects"]
    other = "sequential:0-1" if expected != "sequential:0-1" else "optional@0:1"
    results = []
    tries = [(1, {expected: False}), (2, {expected: False, other: False}), (3, {expected: True})]
    for n, marks in tries:
        participant = qualified(study, n)
        while (assignment := services.assignment_next(participant=participant)) is not None:
            assignment = read_everything(assignment)
            services.annotation_submit(assignment=assignment, submission=submission(marks))
            participant.refresh_from_db()
        results.append(Annotation.objects.get(participant=participant, item=check).attention_passed)
    assert results == [True, False, False]


# --- over HTTP ---------------------------------------------------------------------------------------------


def test_the_item_page_lists_the_candidates_once_every_step_is_read(client: Client) -> None:
    study = make_step_study()
    qualify(client, study)
    page = client.get(reverse("annotator:item", args=[study.slug]))
    assert page.status_code == 200 and "Read every step to see the questions." in page.content.decode()
    assignment = page.context["assignment"]
    read_all(client, study, assignment)
    html = client.get(reverse("annotator:item", args=[study.slug])).content.decode()
    assert 'value="sequential:0-1"' in html and 'value="optional@2:3"' in html
    assert "At step 0: steps 1 and 2" in html and "Does this task as a whole need expert" in html


def _post(client: Client, study: Study, assignment: Assignment, data: dict[str, object]) -> object:
    return client.post(url("submit", study, assignment), data)


def test_a_posted_answer_is_stored_and_the_next_item_follows(client: Client) -> None:
    study = make_step_study()
    qualify(client, study)
    assignment = client.get(reverse("annotator:item", args=[study.slug])).context["assignment"]
    read_all(client, study, assignment)
    data = {
        "mark": ["sequential:0-1", "optional@1:2"],
        "expert-sequential:0-1": "no",
        "expert-optional@1:2": "yes",
    }
    response = _post(client, study, assignment, {**data, "expert_knowledge": "no", "active_seconds": "12.5"})
    assert response.status_code == 302
    annotation = Annotation.objects.get(assignment=assignment)
    held = set(
        StepTypeLabel.objects.filter(annotation=annotation, holds=True).values_list(
            "candidate__key", flat=True
        )
    )
    assert held == {"sequential:0-1", "optional@1:2"} and annotation.active_seconds is not None


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (
            {"mark": ["sequential:0-9"]},
            b"mark: &#x27;sequential:0-9&#x27; is not a candidate of this procedure",
        ),
        ({"mark": ["bogus"]}, b"&#x27;bogus&#x27; is not a candidate"),
        ({"mark": ["sequential:0-1", "sequential:0-1"], "expert-sequential:0-1": "no"}, b"marked once"),
        ({"expert-sequential:0-1": "yes"}, b"the candidate is not marked"),
        ({"mark": ["sequential:0-1"], "expert-sequential:0-1": "maybe"}, b"is not yes or no"),
        ({"expert_knowledge": "perhaps"}, b"expert_knowledge: &#x27;perhaps&#x27; is not yes or no"),
        # an answer sent twice, even the same one, is refused as a repeated mark is (the last would win)
        (
            {"mark": ["sequential:0-1"], "expert-sequential:0-1": ["yes", "no"]},
            b"expert-sequential:0-1: &#x27;yes,no&#x27; is not one answer",
        ),
        (
            {"mark": ["sequential:0-1"], "expert-sequential:0-1": ["no", "no"]},
            b"expert-sequential:0-1: &#x27;no,no&#x27; is not one answer",
        ),
        ({"expert_knowledge": ["yes", "no"]}, b"expert_knowledge: &#x27;yes,no&#x27; is not one answer"),
    ],
)
def test_a_bad_post_is_a_400_naming_the_field_and_nothing_is_stored(
    client: Client, data: dict[str, object], named: bytes
) -> None:
    study = make_step_study()
    qualify(client, study)
    assignment = client.get(reverse("annotator:item", args=[study.slug])).context["assignment"]
    read_all(client, study, assignment)
    response = _post(client, study, assignment, {"expert_knowledge": "no", **data})
    assert response.status_code == 400
    assert named in response.content  # type: ignore[attr-defined]
    assert not Annotation.objects.exists()


def test_a_refusal_is_shown_next_to_the_candidate_and_keeps_the_marks(client: Client) -> None:
    study = make_step_study()
    qualify(client, study)
    assignment = client.get(reverse("annotator:item", args=[study.slug])).context["assignment"]
    read_all(client, study, assignment)
    response = _post(client, study, assignment, {"mark": ["optional@2:3"], "expert_knowledge": "yes"})
    assert response.status_code == 400  # type: ignore[attr-defined]
    html = response.content.decode()  # type: ignore[attr-defined]
    assert (
        'id="expert-optional@2:3-anchor"' in html
        and "say whether it needs expert or domain knowledge" in html
    )
    assert 'value="optional@2:3" checked' in html and 'name="expert_knowledge" value="yes" checked' in html


def test_the_study_builder_makes_a_step_types_study_from_procedures(admin_client: Client) -> None:
    topic = make_topic("Home and Garden")
    for i in range(2):
        make_procedure(goal=f"Patch {i}", steps=STEPS, topic=topic)
    make_procedure(goal="In the pool split", steps=STEPS, topic=topic, split=Split.POOL)
    form = admin_client.get(reverse("annotation:study_create"), {"kind": "step_types"})
    html = form.content.decode()
    assert form.status_code == 200 and 'name="splits"' in html and 'name="generators"' not in html
    assert "Sequential (i, i+1)" in html  # the SIO training text is the default
    questions = form.context["form"].fields["comprehension_questions"].initial
    data = {
        "kind": "step_types", "title": "Patches", "slug": "patches", "topics": [topic.pk],
        "splits": ["bench"], "seed": 0, "annotators_per_item": 3, "items_per_participant": 10,
        "min_dwell_seconds": 30,
        "estimated_item_minutes": 3, "attention_checks": 0, "attention_check_every": 0,
        "instructions": guidelines.GUIDELINES, "consent_text": "Consent.",
        "training_text": guidelines.TRAINING, "comprehension_questions": questions,
    }  # fmt: skip
    response = admin_client.post(reverse("annotation:study_create"), data)
    assert response.status_code == 302, response.context["form"].errors if response.context else response
    study = Study.objects.get(slug="patches")
    assert study.kind == StudyKind.STEP_TYPES and study.items.count() == 2  # the pool procedure left out
    page = admin_client.get(reverse("annotation:study_detail", args=[study.slug])).content.decode()
    assert "Patch 0" in page and "Step types" in page
    assert admin_client.get(reverse("annotation:study_create"), {"kind": "bogus"}).status_code == 400
