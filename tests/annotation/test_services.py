"""Services: study creation, exactly-k assignment, leases, the server's gates, idempotent submission."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotation.base import codebook
from annotation.base.models import Annotation, Assignment, AssignmentStatus, Stage, StudyItem
from annotation.flow import services
from annotation.kinds.critical_failures.posted import FailureInput, Submission
from annotation.kinds.critical_failures.spec import generations_selected
from tests.annotation.conftest import annotate_all, make_study, no_failure, qualified, read_everything
from tests.factories import make_generation, make_generator, make_judge, make_judgment, make_procedure

pytestmark = pytest.mark.django_db


def test_it_defaults_the_lease_to_prolifics_maximum_time() -> None:
    assert codebook.prolific_max_minutes(2) == 9  # Prolific's least: 2 + 2*2 + 2*sqrt(2) = 8.83
    assert codebook.prolific_max_minutes(9) == 26
    assert make_study(n_items=1).lease_minutes == 9


def test_it_selects_a_seeded_random_sample() -> None:
    generator = make_generator()
    ids = [make_generation(generator=generator).pk for _ in range(10)]
    selection = services.Selection(generator_ids=[generator.pk], sample_size=4, seed=7)
    first = generations_selected(selection=selection)
    assert first == generations_selected(selection=selection)
    assert len(first) == 4 and set(first) <= set(ids)
    assert first != generations_selected(
        selection=services.Selection(generator_ids=[generator.pk], sample_size=4, seed=8)
    )


def test_it_selects_by_topic_and_leaves_out_generations_without_l2() -> None:
    health = make_generation(procedure=make_procedure(topic="Health"))
    make_generation(procedure=make_procedure(topic="Religion"))
    make_generation(procedure=make_procedure(topic="Health"), predicted_steps=[])
    selected = generations_selected(selection=services.Selection(topic_ids=[health.procedure.topic_id]))
    assert selected == [health.pk]


def test_it_selects_the_generations_two_judges_disagree_on() -> None:
    judge_a, judge_b = make_judge(), make_judge()
    agree, disagree, one_judge = make_generation(), make_generation(), make_generation()
    fail = [("Skips a step", [1], [1])]
    make_judgment(generation=agree, judge=judge_a, failures=fail)
    make_judgment(generation=agree, judge=judge_b, failures=fail)
    make_judgment(generation=disagree, judge=judge_a, failures=fail)
    make_judgment(generation=disagree, judge=judge_b)
    make_judgment(generation=one_judge, judge=judge_a, failures=fail)
    selection = services.Selection(disagreeing_judge_ids=[judge_a.pk, judge_b.pk])
    assert generations_selected(selection=selection) == [disagree.pk]


def test_it_creates_items_with_k_as_their_target_and_attention_checks_apart() -> None:
    study = make_study(n_items=3, k=2, attention_checks=2)
    items = list(study.items.order_by("position"))
    assert [i.target_annotations for i in items if not i.is_attention_check] == [2, 2, 2]
    checks = [i for i in items if i.is_attention_check]
    assert len(checks) == 2 and {c.attention_expects_failure for c in checks} == {True, False}


def test_it_gives_each_item_exactly_k_annotations_and_no_participant_an_item_twice() -> None:
    study = make_study(n_items=2, k=3, items_per_participant=0)
    seen: dict[int, list[int]] = {}
    for n in range(5):
        participant = qualified(study, n)
        seen[participant.pk] = [a.item_id for a in annotate_all(participant, lambda _: no_failure())]
    assert all(len(items) == len(set(items)) for items in seen.values())
    assert [i.completed_count for i in StudyItem.objects.filter(study=study)] == [3, 3]
    assert Annotation.objects.filter(study=study).count() == 6


def test_it_fills_items_evenly() -> None:
    study = make_study(n_items=3, k=3)
    items = [services.assignment_next(participant=qualified(study, n)).item_id for n in range(3)]  # type: ignore[union-attr]
    assert len(set(items)) == 3


def test_it_resumes_the_same_assignment_until_it_is_submitted() -> None:
    study = make_study(n_items=3)
    participant = qualified(study, 1)
    first = services.assignment_next(participant=participant)
    assert first is not None
    assert services.assignment_next(participant=participant) == first


def test_it_reclaims_expired_leases_and_refuses_the_late_submission() -> None:
    study = make_study(n_items=1, k=1, lease_minutes=5)
    slow, fast = qualified(study, 1), qualified(study, 2)
    leased = services.assignment_next(participant=slow)
    assert leased is not None
    assert services.assignment_next(participant=fast) is None  # the only slot is leased
    later = timezone.now() + timedelta(minutes=6)
    assert services.leases_reclaim(study=study, now=later) == 1
    leased.refresh_from_db()
    assert leased.status == AssignmentStatus.EXPIRED
    assert services.assignment_next(participant=fast) is not None
    with pytest.raises(services.Refused) as refused:
        services.annotation_submit(assignment=read_everything_expired(leased), submission=no_failure())
    assert refused.value.status == 409
    assert StudyItem.objects.get(study=study).assigned_count == 1


def read_everything_expired(assignment: Assignment) -> Assignment:
    Assignment.objects.filter(pk=assignment.pk).update(
        goal_acknowledged_at=timezone.now(),
        step_revealed_at=["t"] * assignment.n_reading_steps,
        n_revealed=assignment.n_reading_steps,
    )
    return assignment


def test_it_never_over_assigns_an_item_even_by_a_direct_update() -> None:
    study = make_study(n_items=1, k=2)
    item = StudyItem.objects.get(study=study)
    with pytest.raises(IntegrityError), transaction.atomic():
        StudyItem.objects.filter(pk=item.pk).update(assigned_count=F("target_annotations") + 1)


def test_it_refuses_a_second_active_assignment_for_a_participant_in_the_database() -> None:
    study = make_study(n_items=2)
    participant = qualified(study, 1)
    first = services.assignment_next(participant=participant)
    assert first is not None
    other = StudyItem.objects.exclude(pk=first.item_id).get(study=study, is_attention_check=False)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(
            study=study,
            participant=participant,
            item=other,
            issued_at=timezone.now(),
            lease_expires_at=timezone.now(),
            n_reading_steps=1,
        )


@pytest.mark.parametrize(
    ("acknowledge", "steps", "dwell", "message"),
    [
        (False, 0, 0, "read the goal"),
        (True, 3, 0, "3 of 4 read"),
        (True, 4, 90, "Submission opens 90 s"),
    ],
)
def test_it_refuses_a_submission_that_skips_a_gate(
    acknowledge: bool, steps: int, dwell: int, message: str
) -> None:
    study = make_study(n_items=1, dwell=dwell)
    assignment = services.assignment_next(participant=qualified(study, 1))
    assert assignment is not None
    if acknowledge:
        services.assignment_acknowledge_goal(assignment=assignment)
    for n in range(1, steps + 1):
        services.assignment_reveal_step(assignment=assignment, number=n)
    with pytest.raises(services.Refused) as refused:
        services.annotation_submit(assignment=assignment, submission=no_failure())
    assert message in refused.value.message and refused.value.status == 400
    assert not Annotation.objects.exists()


@pytest.mark.parametrize(
    ("failures", "message"),
    [
        ([], "at least one critical failure"),
        ([FailureInput("  ", [1], [])], "needs a description"),
        ([FailureInput("Skips rinsing", [4], [])], "does not exist"),
        ([FailureInput("Skips rinsing", [], [0])], "does not exist"),
    ],
)
def test_it_refuses_a_failure_without_description_or_with_unknown_steps(
    failures: list[FailureInput], message: str
) -> None:
    study = make_study(n_items=1)
    assignment = read_everything(services.assignment_next(participant=qualified(study, 1)))
    with pytest.raises(services.Refused) as refused:
        services.annotation_submit(assignment=assignment, submission=Submission(True, failures))
    assert message in refused.value.message


def test_it_refuses_a_submission_without_a_choice() -> None:
    study = make_study(n_items=1)
    assignment = read_everything(services.assignment_next(participant=qualified(study, 1)))
    with pytest.raises(services.Refused, match="Choose"):
        services.annotation_submit(assignment=assignment, submission=Submission(None, []))


def test_it_stores_failures_like_a_judge_and_is_idempotent() -> None:
    study = make_study(n_items=1)
    participant = qualified(study, 1)
    assignment = read_everything(services.assignment_next(participant=participant))
    submission = Submission(
        True, [FailureInput("No rinse", [3], [4, 4]), FailureInput("Too much oil", [], [1])]
    )
    first = services.annotation_submit(assignment=assignment, submission=submission)
    again = services.annotation_submit(assignment=assignment, submission=no_failure())
    assert first.created and not again.created and again.annotation == first.annotation
    annotation = Annotation.objects.get()
    assert annotation.has_failure and annotation.n_failures == 2
    assert [(f.description, f.l1_steps, f.l2_steps) for f in annotation.failures.all()] == [
        ("No rinse", [3], [4]),
        ("Too much oil", [], [1]),
    ]
    assert len(annotation.step_revealed_at) == 4 and annotation.goal_acknowledged_at is not None
    item = StudyItem.objects.get(study=study)
    assert (item.assigned_count, item.completed_count) == (1, 1)
    participant.refresh_from_db()
    assert participant.items_completed == 1


def test_it_reveals_l2_steps_in_order_after_the_goal() -> None:
    study = make_study(n_items=1)
    assignment = services.assignment_next(participant=qualified(study, 1))
    assert assignment is not None
    with pytest.raises(services.Refused, match="read the goal"):
        services.assignment_reveal_step(assignment=assignment, number=1)
    services.assignment_acknowledge_goal(assignment=assignment)
    with pytest.raises(services.Refused, match="next one is step 1"):
        services.assignment_reveal_step(assignment=assignment, number=2)
    services.assignment_reveal_step(assignment=assignment, number=1)
    again = services.assignment_reveal_step(assignment=assignment, number=1)
    assert again.n_revealed == 1


def test_it_mixes_in_attention_checks_and_scores_them() -> None:
    study = make_study(n_items=4, k=1, attention_checks=1, attention_check_every=2, items_per_participant=0)
    participant = qualified(study, 1)
    kinds = [a.item.is_attention_check for a in annotate_all(participant, lambda _: no_failure())]
    assert kinds == [False, False, True, False, False]
    check = Annotation.objects.get(item__is_attention_check=True)
    assert check.attention_passed is (check.item.attention_expects_failure is False)
    assert participant.items_completed == 4


def test_it_stops_at_the_items_per_participant() -> None:
    study = make_study(n_items=3, items_per_participant=2)
    participant = qualified(study, 1)
    for _ in range(2):
        assignment = services.assignment_next(participant=participant)
        services.annotation_submit(assignment=read_everything(assignment), submission=no_failure())
        participant.refresh_from_db()
    assert services.assignment_next(participant=participant) is None


def test_it_screens_out_after_two_failed_comprehension_checks() -> None:
    study = make_study(n_items=1)
    participant = services.participant_enter(
        study=study, prolific_pid="a" * 24, prolific_study_id="", prolific_session_id="", user_agent=""
    )
    services.participant_consent(participant=participant)
    services.participant_finish_training(participant=participant)
    first = services.comprehension_grade(participant=participant, answers={})
    assert not first.passed and first.attempts_left == 1
    second = services.comprehension_grade(participant=participant, answers={0: 0})
    assert second.attempts_left == 0
    participant.refresh_from_db()
    assert participant.stage == Stage.SCREENED_OUT
    with pytest.raises(services.Refused):
        services.comprehension_grade(participant=participant, answers={})


def test_it_keeps_a_returning_pid_where_it_was() -> None:
    study = make_study(n_items=1)
    participant = qualified(study, 3)
    again = services.participant_enter(
        study=study,
        prolific_pid=participant.prolific_pid,
        prolific_study_id="",
        prolific_session_id="",
        user_agent="",
    )
    assert again.pk == participant.pk and again.stage == Stage.ITEMS


def test_it_exports_every_annotation_with_its_evidence() -> None:
    from annotation.kinds.critical_failures.exports import EXPORT_FIELDS, annotations_export

    study = make_study(n_items=1)
    assignment = read_everything(services.assignment_next(participant=qualified(study, 1)))
    services.annotation_submit(
        assignment=assignment,
        submission=Submission(True, [FailureInput("No rinse", [3], [4])], active_seconds=12.5),
    )
    rows = list(annotations_export(study=study))
    assert len(rows) == 1 and list(rows[0]) == EXPORT_FIELDS
    assert rows[0]["critical_failures"] == [{"failure": "No rinse", "L1_steps": [3], "L2_steps": [4]}]
    assert rows[0]["active_seconds"] == 12.5 and len(rows[0]["step_revealed_at"]) == 4


@pytest.mark.django_db(transaction=True)
def test_it_waits_for_the_last_open_item_rather_than_turning_the_participant_away() -> None:
    import threading
    import time

    from django.db import connection

    study = make_study(n_items=1, k=2)
    participant = qualified(study, 1)
    item = StudyItem.objects.get(study=study)
    locked, release = threading.Event(), threading.Event()

    def hold_the_row() -> None:  # another request's transaction holding the item's row (e.g. a submit)
        with transaction.atomic():
            StudyItem.objects.select_for_update().get(pk=item.pk)
            locked.set()
            release.wait(5)
        connection.close()

    holder = threading.Thread(target=hold_the_row)
    holder.start()
    locked.wait(5)
    threading.Timer(0.5, release.set).start()
    started = time.monotonic()
    assignment = services.assignment_next(participant=participant)
    holder.join()
    assert assignment is not None and assignment.item_id == item.pk
    assert time.monotonic() - started >= 0.4


@pytest.mark.django_db(transaction=True)
def test_it_stores_one_annotation_when_the_same_submission_arrives_twice_at_once() -> None:
    import threading

    from django.db import connection

    study = make_study(n_items=1)
    assignment = read_everything(services.assignment_next(participant=qualified(study, 1)))
    start = threading.Barrier(2)
    results: list[bool] = []

    def submit() -> None:
        start.wait(5)
        results.append(services.annotation_submit(assignment=assignment, submission=no_failure()).created)
        connection.close()

    threads = [threading.Thread(target=submit) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False, True]
    assert Annotation.objects.count() == 1 and StudyItem.objects.get(study=study).completed_count == 1
