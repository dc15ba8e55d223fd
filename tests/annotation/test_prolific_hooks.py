"""Prolific's webhooks: signed or refused, once per event id, and a return on Prolific frees the item at
once (within the same request); a body or a header that is not one of docs/prolific-api.md §7's events is a
400 storing nothing (#31 item 11), and an event is applied to its own submission only, never over a later one
(#31 item 12)."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from annotation.base.models import Assignment, AssignmentStatus, StudyItem
from annotation.base.prolific_ids import RELEASING, SUBMISSION_STATUSES, submission_status
from annotation.flow import services
from annotation.prolific.models import ParticipantStatus, ProlificEvent
from tests.annotation.conftest import make_study, pid, qualified
from tests.fuzzing import fuzz_settings
from tests.prolific_server import signed_body, signed_event

SECRET = "whsec-test"
URL = "/prolific/hooks/"


@pytest.fixture(autouse=True)
def _secret(settings: Any) -> None:
    settings.PROLIFIC_WEBHOOK_SECRET = SECRET


def _post(client: Client, body: bytes, headers: dict[str, str]) -> Any:
    return client.post(URL, body, content_type="application/json", headers=headers)


def _returned(session: str, pid: str, status: str = "RETURNED") -> dict[str, Any]:
    return {
        "resource_id": session,
        "event_type": "submission.status.change",
        "participant_id": pid,
        "status": status,
    }


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["RETURNED", "TIMED-OUT", "TIMED_OUT"])
def test_a_return_frees_the_participants_item_within_the_request(client: Client, status: str) -> None:
    study = make_study(n_items=1, k=1)
    participant = qualified(study, 1)
    assignment = services.assignment_next(participant=participant)
    assert assignment is not None and StudyItem.objects.get(pk=assignment.item_id).assigned_count == 1
    body, headers = signed_event(
        _returned("X", participant.prolific_pid, status), secret=SECRET, event_id="e1"
    )
    answer = _post(client, body, headers)
    assert answer.status_code == 200 and answer.json() == {
        "event": "e1",
        "duplicate": False,
        "released": 1,
        "ignored": "",
    }
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.EXPIRED
    assert StudyItem.objects.get(pk=assignment.item_id).assigned_count == 0  # back in the pool
    other = qualified(study, 2)
    assert services.assignment_next(participant=other) is not None  # someone else can take it now
    assert [s.status for s in ParticipantStatus.objects.filter(participant=participant)] == [
        "TIMED-OUT" if "TIMED" in status else "RETURNED"
    ]


@pytest.mark.django_db
def test_a_repeated_event_changes_nothing(client: Client) -> None:
    study = make_study(n_items=2, k=1)
    participant = qualified(study, 1)
    services.assignment_next(participant=participant)
    body, headers = signed_event(_returned("X", participant.prolific_pid), secret=SECRET, event_id="e7")
    assert _post(client, body, headers).json()["duplicate"] is False
    again = _post(client, body, headers)
    assert again.status_code == 200 and again.json() == {"event": "e7", "duplicate": True}
    assert ProlificEvent.objects.count() == 1 and ParticipantStatus.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"X-Prolific-Request-Signature": "AAAA"}, "does not match"),
        ({"X-Prolific-Request-Timestamp": "1"}, "does not match"),  # the signature covers the timestamp
        ({}, "too far from now"),
    ],
)
def test_a_bad_signature_or_an_old_event_is_refused_and_nothing_stored(
    client: Client, change: dict[str, str], message: str
) -> None:
    study = make_study(n_items=1, k=1)
    participant = qualified(study, 1)
    assignment = services.assignment_next(participant=participant)
    stamp = int(time.time()) - (3_600 if not change else 0)
    body, headers = signed_event(
        _returned("X", participant.prolific_pid), secret=SECRET, event_id="e2", timestamp=stamp
    )
    answer = _post(client, body, {**headers, **change})
    assert answer.status_code == 403 and message in answer.json()["detail"]
    assert not ProlificEvent.objects.exists()
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.ACTIVE


@pytest.mark.django_db
def test_without_a_secret_every_event_is_refused(client: Client, settings: Any) -> None:
    settings.PROLIFIC_WEBHOOK_SECRET = ""
    body, headers = signed_event({"event_type": "study.status.change"}, secret="", event_id="e3")
    answer = _post(client, body, headers)
    assert answer.status_code == 403 and "PROLIFIC_WEBHOOK_SECRET is not set" in answer.json()["detail"]


@pytest.mark.django_db
def test_it_names_what_is_missing_or_malformed(client: Client) -> None:
    body, headers = signed_event(
        {"event_type": "study.progress.change", "resource_id": "S1"}, secret=SECRET, event_id="e4"
    )
    missing = _post(client, body, {k: v for k, v in headers.items() if k != "X-Event-ID"})
    assert missing.status_code == 400 and "X-Event-ID" in missing.json()["detail"]
    assert client.get(URL).status_code == 405
    other, other_headers = signed_event(
        {"event_type": "study.progress.change", "resource_id": "S1"}, secret=SECRET, event_id="e5"
    )
    assert _post(client, other, other_headers).json() == {
        "event": "e5",
        "duplicate": False,
        "released": 0,
        "ignored": "not a submission status change: stored only",
    }


# --- #31 item 11: a signed body that is not a §7 event is a 400, nothing stored -----------------------------


def _leased(n: int = 1) -> tuple[Any, Assignment]:
    study = make_study(n_items=1, k=1)
    participant = qualified(study, n)
    assignment = services.assignment_next(participant=participant)
    assert assignment is not None
    return participant, assignment


def _nothing_stored(assignment: Assignment) -> None:
    assert not ProlificEvent.objects.exists() and not ParticipantStatus.objects.exists()
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.ACTIVE


def _event_text(pid: str, *, status: str = '"RETURNED"', extra: str = "") -> bytes:
    return (
        f'{{"resource_id": "X", "event_type": "submission.status.change", "participant_id": "{pid}", '
        f'"status": {status}{extra}}}'
    ).encode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "named"),
    [
        (lambda pid: _event_text(pid, extra=', "metadata": ' + "[" * 100_000 + "]" * 100_000), "body"),
        (lambda pid: _event_text(pid, extra=', "metadata": {"a": ' + "[" * 40 + "]" * 40 + "}"), "deep"),
        (lambda pid: _event_text(pid, status='"RETURNED\\u0000"'), "NUL"),
        (lambda pid: _event_text(pid, extra=', "k\\u0000": 1'), "NUL"),
        (lambda pid: _event_text(pid, extra=', "time": NaN'), "NaN"),
        (lambda pid: _event_text(pid, extra=', "note": "\\ud800"'), "lone surrogate"),
        (lambda pid: _event_text(pid, extra=', "\\udfff": 1'), "lone surrogate"),
        (lambda pid: _event_text(pid).replace(b"RETURNED", b"RETURNED\xed\xa0\x80"), "not UTF-8"),
        (lambda pid: b"[1, 2]", "a JSON object"),
        (lambda pid: b"{", "not valid JSON"),
    ],
)
def test_a_signed_body_that_cannot_be_read_is_a_400_and_nothing_is_stored(
    client: Client, body: Any, named: str
) -> None:
    participant, assignment = _leased()
    signed, headers = signed_body(body(participant.prolific_pid), secret=SECRET, event_id="e-bad")
    answer = _post(client, signed, headers)
    assert answer.status_code == 400 and named in answer.json()["detail"], answer.content[:300]
    _nothing_stored(assignment)


@pytest.mark.django_db
@pytest.mark.parametrize("stamp", ["9" * 5_000, "²", "1e9", "-1", " 1"])
def test_a_signed_timestamp_that_is_no_unix_time_is_a_403(client: Client, stamp: str) -> None:
    participant, assignment = _leased()
    body, headers = signed_body(
        _event_text(participant.prolific_pid), secret=SECRET, event_id="e-stamp", timestamp=stamp
    )
    answer = _post(client, body, headers)
    assert answer.status_code == 403 and "X-Prolific-Request-Timestamp" in answer.json()["detail"]
    _nothing_stored(assignment)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"event_type": 5}, "body.event_type"),
        ({"event_type": "x" * 65}, "body.event_type"),
        ({"resource_id": None}, "body.resource_id"),
        ({"resource_id": "a/b"}, "body.resource_id"),
        ({"resource_id": "x" * 65}, "body.resource_id"),
        ({"participant_id": "not-a-pid"}, "body.participant_id"),
        ({"participant_id": ["a"]}, "body.participant_id"),
        ({"metadata": [1]}, "body.metadata"),
    ],
)
def test_a_body_not_of_the_documented_shape_is_a_400_naming_the_field(
    client: Client, change: dict[str, Any], named: str
) -> None:
    participant, assignment = _leased()
    payload = {**_returned("X", participant.prolific_pid), **change}
    body, headers = signed_event(payload, secret=SECRET, event_id="e-shape")
    answer = _post(client, body, headers)
    assert answer.status_code == 400 and answer.json()["detail"].startswith(named), answer.json()
    _nothing_stored(assignment)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_FIELDS = st.sampled_from(["event_type", "resource_id", "participant_id", "status", "metadata", "other"])
_FUZZ_IDS = itertools.count()
_VALUES = (
    st.sampled_from(["submission.status.change", "study.status.change", "X", "RETURNED", pid(1)]) | _JSON
)


@pytest.mark.django_db
@given(payload=st.dictionaries(_FIELDS, _VALUES, max_size=6))
@fuzz_settings(60)
def test_a_signed_body_is_never_a_server_error(client: Client, payload: dict[str, Any]) -> None:
    body, headers = signed_event(payload, secret=SECRET, event_id=f"fuzz-{next(_FUZZ_IDS)}")
    stored = ProlificEvent.objects.count()
    answer = _post(client, body, headers)
    assert answer.status_code in {200, 400}, answer.content[:300]
    assert ProlificEvent.objects.count() == stored + (answer.status_code == 200)


# --- #31 item 12: an event is stored whole, has a status Prolific has, and is applied to its own submission
# only, never over a later one -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_event_id_longer_than_the_column_is_refused_not_cut(client: Client) -> None:
    participant, assignment = _leased()
    payload = _returned("X", participant.prolific_pid)
    shared = "e" * 128
    for event_id in (shared + "-first" + "1" * 70, shared + "-second" + "2" * 69):  # 204 characters each
        body, headers = signed_event(payload, secret=SECRET, event_id=event_id)
        answer = _post(client, body, headers)
        assert answer.status_code == 400 and "X-Event-ID" in answer.json()["detail"]
    _nothing_stored(assignment)
    body, headers = signed_event(payload, secret=SECRET, event_id=shared)  # the column's length: stored whole
    assert _post(client, body, headers).json()["released"] == 1
    assert ProlificEvent.objects.get().event_id == shared


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["EXPLODED", 5, {"a": 1}, None, "R" * 500, "returned ", ""])
def test_a_status_prolific_does_not_have_is_refused_and_nothing_recorded(client: Client, status: Any) -> None:
    participant, assignment = _leased()
    payload = {**_returned("X", participant.prolific_pid), "status": status}
    body, headers = signed_event(payload, secret=SECRET, event_id="e-status")
    answer = _post(client, body, headers)
    if status == "returned ":  # Prolific's spelling differs between objects and filters: normalised
        assert answer.status_code == 200 and answer.json()["released"] == 1
        return
    assert answer.status_code == 400 and answer.json()["detail"].startswith("body.status: "), answer.json()
    assert "is not a submission status Prolific has" in answer.json()["detail"]
    _nothing_stored(assignment)


def test_one_vocabulary_of_submission_statuses() -> None:
    assert submission_status("AWAITING_REVIEW") == "AWAITING REVIEW"
    assert submission_status("timed_out") == "TIMED-OUT"
    assert RELEASING <= SUBMISSION_STATUSES
    for bad in ("EXPLODED", 5, {"a": 1}, "R" * 500, "ACTIVE\x00"):
        with pytest.raises(ValueError, match="is not a submission status Prolific has"):
            submission_status(bad)


@pytest.mark.django_db
def test_a_return_for_an_unknown_submission_frees_nobody(client: Client) -> None:
    """The same person in two studies, an item leased in each: a return of a submission no participant here
    has is not looked up by their PID across every study."""
    first, first_lease = _leased()
    second_study = make_study(n_items=1, k=1)
    second = services.participant_enter(
        study=second_study, prolific_pid=first.prolific_pid, prolific_study_id="S2",
        prolific_session_id="Y", user_agent="test",
    )  # fmt: skip
    second.stage = first.stage
    second.save(update_fields=["stage"])
    second_lease = services.assignment_next(participant=second)
    assert second_lease is not None
    body, headers = signed_event(
        _returned("unknown-submission", first.prolific_pid), secret=SECRET, event_id="e-unknown"
    )
    answer = _post(client, body, headers)
    assert answer.status_code == 200
    assert (
        answer.json()["released"] == 0
        and "no participant here has this submission" in answer.json()["ignored"]
    )
    for lease in (first_lease, second_lease):
        assert Assignment.objects.get(pk=lease.pk).status == AssignmentStatus.ACTIVE
    assert not ParticipantStatus.objects.exists()
    assert ProlificEvent.objects.get().resource_id == "unknown-submission"  # kept, as a record
    body, headers = signed_event(_returned("Y", first.prolific_pid), secret=SECRET, event_id="e-known")
    assert _post(client, body, headers).json()["released"] == 1  # its own submission: that study's item only
    assert Assignment.objects.get(pk=second_lease.pk).status == AssignmentStatus.EXPIRED
    assert Assignment.objects.get(pk=first_lease.pk).status == AssignmentStatus.ACTIVE


@pytest.mark.django_db
def test_an_event_sent_before_the_one_applied_does_not_overwrite_it(client: Client) -> None:
    participant, _ = _leased()
    now = int(time.time())

    def deliver(status: str, event_id: str, sent: int) -> Any:
        body, headers = signed_event(
            _returned("X", participant.prolific_pid, status), secret=SECRET, event_id=event_id
        )
        return _post(client, body, {**headers, "X-Timestamp": str(sent)})

    assert deliver("APPROVED", "e-approved", now - 10).json()["ignored"] == ""
    late = deliver("AWAITING REVIEW", "e-review", now - 60)  # sent first, delivered last
    assert late.status_code == 200 and "sent before the APPROVED event" in late.json()["ignored"]
    assert list(ParticipantStatus.objects.values_list("status", flat=True)) == ["APPROVED"]
    assert ProlificEvent.objects.count() == 2  # both kept; a redelivery of either is a duplicate
    assert deliver("RETURNED", "e-returned", now).json()["released"] == 1  # a later one applies
    assert list(ParticipantStatus.objects.values_list("status", flat=True)) == ["APPROVED", "RETURNED"]


@pytest.mark.django_db
# ids: the third value is read from the clock at collection, and pytest-xdist's workers must collect the same
# names (a CI run stopped when they straddled a second).
@pytest.mark.parametrize(
    "sent", ["soon", "9" * 40, str(int(time.time()) + 3_600)], ids=["a-word", "40-digits", "an-hour-ahead"]
)
def test_a_send_time_that_is_no_unix_time_is_a_400(client: Client, sent: str) -> None:
    participant, assignment = _leased()
    body, headers = signed_event(_returned("X", participant.prolific_pid), secret=SECRET, event_id="e-sent")
    answer = _post(client, body, {**headers, "X-Timestamp": sent})
    assert answer.status_code == 400 and "X-Timestamp" in answer.json()["detail"]
    _nothing_stored(assignment)
