"""Prolific's webhooks (docs/prolific-api.md §7): POST /prolific/hooks/.

- Signature: X-Prolific-Request-Signature must be base64(HMAC-SHA256(PROLIFIC_WEBHOOK_SECRET,
  X-Prolific-Request-Timestamp + the raw body)), compared in constant time; a timestamp that is not a UNIX
  time in ASCII digits, or more than MAX_AGE_SECONDS away from now, is refused too (a replayed delivery).
  Refused: 403, nothing stored.
- Shape: the body is parsed once, bounded (MAX_BODY_CHARS, h2e_site.bounds' depth; no NaN, NUL or lone
  surrogate), and must be one of §7's events: `event_type` and `resource_id` (a Prolific id) always; a
  submission.status.change also a `participant_id` (a PID) and a `status` Prolific's submissions have
  (annotation.base.prolific_ids.SUBMISSION_STATUSES), a study.status.change a study's status. X-Event-ID is
  stored
  whole (at most the column's length), X-Timestamp (when Prolific sent the event) must be a UNIX time.
  Anything else: 400 naming the field, nothing stored.
- Once: X-Event-ID is stored unique (ProlificEvent); a redelivery of an event already stored answers 200
  and changes nothing, even when two deliveries arrive at once.
- submission.status.change: the participant whose SESSION_ID is the submission (resource_id) and whose PID is
  the event's participant_id gets the status recorded (ParticipantStatus); on RETURNED or TIMED-OUT their
  active item is released in the same request (services.participant_release). Answered 200 but applied to
  nobody (`ignored` says why), the event stored: a submission no participant here has (never looked up by PID
  alone: a PID takes part in many studies), and an event sent before one already applied to the same
  submission (Prolific does not keep the order: §7, "drop older events per resource").
- Other event types are stored and otherwise ignored.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation.base.models import Participant
from annotation.base.prolific_ids import PID_PATTERN, PROLIFIC_ID_PATTERN, study_status, submission_status
from annotation.prolific import statuses
from annotation.prolific.models import ParticipantStatus, ProlificEvent
from h2e_site.bounds import json_loads_bounded

MAX_AGE_SECONDS = 600
MAX_BODY_CHARS = 65_536  # §7's bodies are four or five short fields
UNIX_TIME = re.compile(r"[0-9]{1,10}", re.ASCII)  # seconds, no sign, no Unicode digits
SUBMISSION_EVENT = "submission.status.change"
STATUS_OF = {SUBMISSION_EVENT: submission_status, "study.status.change": study_status}


def _max_length(name: str) -> int:
    """The column's length: what it holds is stored whole or refused, never cut."""
    field = ProlificEvent._meta.get_field(name)
    assert isinstance(field, models.CharField) and field.max_length is not None
    return field.max_length


class EventRefused(ValueError):
    """A delivery whose headers or body are not a §7 event; the message names the part."""


@dataclass(frozen=True)
class HookEvent:
    """A delivery's event, checked: what ProlificEvent stores."""

    event_id: str
    sent_at: datetime
    event_type: str
    resource_id: str
    status: str
    participant_id: str
    payload: dict[str, Any]


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """What Prolific sends in X-Prolific-Request-Signature for this timestamp and body."""
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def _refusal(request: HttpRequest) -> JsonResponse | None:
    secret = settings.PROLIFIC_WEBHOOK_SECRET
    if not secret:
        return JsonResponse(
            {"detail": "PROLIFIC_WEBHOOK_SECRET is not set: every event is refused"}, status=403
        )
    timestamp = request.headers.get("X-Prolific-Request-Timestamp", "")
    sent = request.headers.get("X-Prolific-Request-Signature", "")
    if not hmac.compare_digest(sent.encode(), signature(secret, timestamp, request.body).encode()):
        return JsonResponse({"detail": "X-Prolific-Request-Signature does not match the body"}, status=403)
    if not UNIX_TIME.fullmatch(timestamp):
        return JsonResponse(
            {"detail": "X-Prolific-Request-Timestamp: not a UNIX time (seconds, ASCII digits)"}, status=403
        )
    if abs(time.time() - int(timestamp)) > MAX_AGE_SECONDS:
        return JsonResponse({"detail": "X-Prolific-Request-Timestamp is too far from now"}, status=403)
    return None


def hook_event(request: HttpRequest) -> HookEvent:
    """The signed delivery's event, its shape checked against §7; EventRefused naming what is not."""
    event_id = request.headers.get("X-Event-ID", "")
    if not event_id or len(event_id) > _max_length("event_id") or not event_id.isprintable():
        raise EventRefused(f"X-Event-ID: 1 to {_max_length('event_id')} printable characters expected")
    payload = _body(request.body)
    event_type = payload.get("event_type")
    if not isinstance(event_type, str) or not 0 < len(event_type) <= _max_length("event_type"):
        raise EventRefused(
            f"body.event_type: a string of 1 to {_max_length('event_type')} characters expected"
        )
    resource_id = payload.get("resource_id")
    if not isinstance(resource_id, str) or not PROLIFIC_ID_PATTERN.fullmatch(resource_id):
        raise EventRefused("body.resource_id: a Prolific id (1 to 64 letters, digits, _ or -) expected")
    if "metadata" in payload and not isinstance(payload["metadata"], dict):
        raise EventRefused("body.metadata: an object expected")
    return HookEvent(
        event_id=event_id,
        sent_at=_sent_at(request),
        event_type=event_type,
        resource_id=resource_id,
        status=_status(event_type, payload),
        participant_id=_participant_id(event_type, payload),
        payload=payload,
    )


def _body(body: bytes) -> dict[str, Any]:
    try:
        payload = json_loads_bounded("body", body, max_chars=MAX_BODY_CHARS)
    except UnicodeDecodeError as exc:
        raise EventRefused(f"body: not UTF-8 ({exc.reason})") from exc
    except ValueError as exc:  # too long, too deep, not JSON, NaN, a NUL or a lone surrogate
        raise EventRefused(str(exc)) from exc
    if not isinstance(payload, dict):
        raise EventRefused("body: a JSON object expected")
    return payload


def _sent_at(request: HttpRequest) -> datetime:
    """X-Timestamp, when Prolific sent the event (the signature's timestamp when it is left out)."""
    stamp = request.headers.get("X-Timestamp", request.headers["X-Prolific-Request-Timestamp"])
    if not UNIX_TIME.fullmatch(stamp) or int(stamp) > time.time() + MAX_AGE_SECONDS:
        raise EventRefused("X-Timestamp: a UNIX time (seconds, ASCII digits), not in the future, expected")
    return datetime.fromtimestamp(int(stamp), tz=UTC)


def _status(event_type: str, payload: dict[str, Any]) -> str:
    check = STATUS_OF.get(event_type)
    if check is None:
        return ""  # an event type §7 gives no status
    try:
        return check(payload.get("status"))
    except ValueError as exc:
        raise EventRefused(f"body.status: {exc}") from exc


def _participant_id(event_type: str, payload: dict[str, Any]) -> str:
    if event_type != SUBMISSION_EVENT:
        return ""
    pid = payload.get("participant_id")
    if not isinstance(pid, str) or not PID_PATTERN.fullmatch(pid):
        raise EventRefused("body.participant_id: a Prolific participant id (24 hex characters) expected")
    return pid.lower()


@csrf_exempt
@require_POST
def prolific_hook(request: HttpRequest) -> JsonResponse:
    refused = _refusal(request)
    if refused is not None:
        return refused
    try:
        event = hook_event(request)
    except EventRefused as bad:
        return JsonResponse({"detail": str(bad)}, status=400)
    try:
        with transaction.atomic():
            stored = _event_store(event)
            released, ignored = (
                _event_apply(stored, event.participant_id)
                if event.event_type == SUBMISSION_EVENT
                else (0, "not a submission status change: stored only")
            )
    except IntegrityError:  # the same event delivered twice at once: the other request stored it
        return JsonResponse({"event": event.event_id, "duplicate": True})
    return JsonResponse(
        {"event": event.event_id, "duplicate": False, "released": released, "ignored": ignored}
    )


def _event_store(event: HookEvent) -> ProlificEvent:
    return ProlificEvent.objects.create(
        event_id=event.event_id,
        sent_at=event.sent_at,
        event_type=event.event_type,
        resource_id=event.resource_id,
        status=event.status,
        payload=event.payload,
    )


def _event_apply(event: ProlificEvent, pid: str) -> tuple[int, str]:
    """The submission's participant gets the status (RETURNED / TIMED-OUT releases their item) unless a
    later-sent event was applied to it already. (items released, why nothing was applied or "")."""
    participants = list(
        Participant.objects.select_for_update()  # two events of one submission: one after the other
        .filter(prolific_session_id=event.resource_id, prolific_pid=pid, is_preview=False)
        .order_by("pk")
    )
    if not participants:
        return 0, "no participant here has this submission (resource_id) and participant_id: nothing changed"
    newer = (
        ParticipantStatus.objects.filter(participant__in=participants, event__sent_at__gt=event.sent_at)
        .order_by("-event__sent_at")
        .first()
    )
    if newer is not None:
        return 0, f"sent before the {newer.status} event already applied to this submission: nothing changed"
    released = sum(
        statuses.participant_status_record(participant=p, status=event.status, event=event)
        for p in participants
    )
    return released, ""
