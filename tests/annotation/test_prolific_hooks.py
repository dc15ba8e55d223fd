"""Prolific's webhooks: signed or refused, once per event id, and a return on Prolific frees the item at
once (within the same request)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client

from annotation import services
from annotation.models import Assignment, AssignmentStatus, ParticipantStatus, ProlificEvent, StudyItem
from tests.annotation.conftest import make_study, qualified
from tests.prolific_server import signed_event

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
    assert answer.status_code == 200 and answer.json() == {"event": "e1", "duplicate": False, "released": 1}
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
    body, headers = signed_event({"event_type": "study.progress.change"}, secret=SECRET, event_id="e4")
    missing = _post(client, body, {k: v for k, v in headers.items() if k != "X-Event-ID"})
    assert missing.status_code == 400 and "X-Event-ID" in missing.json()["detail"]
    assert client.get(URL).status_code == 405
    other, other_headers = signed_event({"event_type": "study.progress.change"}, secret=SECRET, event_id="e5")
    assert _post(client, other, other_headers).json() == {"event": "e5", "duplicate": False, "released": 0}
