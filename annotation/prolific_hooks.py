"""Prolific's webhooks (docs/prolific-api.md §7): POST /prolific/hooks/.

- Signature: X-Prolific-Request-Signature must be base64(HMAC-SHA256(PROLIFIC_WEBHOOK_SECRET,
  X-Prolific-Request-Timestamp + the raw body)), compared in constant time; a timestamp more than
  MAX_AGE_SECONDS away from now is refused too (a replayed delivery). Refused: 403, nothing stored.
- Once: X-Event-ID is stored unique (ProlificEvent); a redelivery of an event already stored answers 200
  and changes nothing, even when two deliveries arrive at once.
- submission.status.change: the participant (by the submission id, which is their SESSION_ID, else by their
  PROLIFIC_PID) gets the status recorded (ParticipantStatus); on RETURNED or TIMED-OUT their active item is
  released in the same request (services.participant_release): it goes back to the pool at once.
- Other event types are stored and otherwise ignored.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from . import services
from .models import Participant, ProlificEvent
from .prolific import normalised_status

MAX_AGE_SECONDS = 600


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
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > MAX_AGE_SECONDS:
        return JsonResponse({"detail": "X-Prolific-Request-Timestamp is too far from now"}, status=403)
    return None


@csrf_exempt
@require_POST
def prolific_hook(request: HttpRequest) -> JsonResponse:
    refused = _refusal(request)
    if refused is not None:
        return refused
    event_id = request.headers.get("X-Event-ID", "")
    if not event_id:
        return JsonResponse({"detail": "X-Event-ID: missing"}, status=400)
    try:
        payload = json.loads(request.body)
    except ValueError:
        return JsonResponse({"detail": "body: not JSON"}, status=400)
    if not isinstance(payload, dict):
        return JsonResponse({"detail": "body: expected a JSON object"}, status=400)
    try:
        with transaction.atomic():
            event = _event_store(event_id, payload)
            released = _event_apply(event) if event.event_type == "submission.status.change" else 0
    except IntegrityError:  # the same event delivered twice at once: the other request stored it
        return JsonResponse({"event": event_id, "duplicate": True})
    return JsonResponse({"event": event_id, "duplicate": False, "released": released})


def _event_store(event_id: str, payload: dict[str, Any]) -> ProlificEvent:
    return ProlificEvent.objects.create(
        event_id=event_id[:128],
        event_type=str(payload.get("event_type", ""))[:64],
        resource_id=str(payload.get("resource_id", ""))[:64],
        status=normalised_status(str(payload.get("status", "")))[:32],
        payload=payload,
    )


def _event_apply(event: ProlificEvent) -> int:
    """The submission's participant gets the status; RETURNED / TIMED-OUT releases their item."""
    participants = list(Participant.objects.filter(prolific_session_id=event.resource_id, is_preview=False))
    pid = str(event.payload.get("participant_id", "")).lower()
    if not participants and pid:
        participants = list(Participant.objects.filter(prolific_pid=pid, is_preview=False))
    return sum(
        services.participant_status_record(participant=p, status=event.status, event=event)
        for p in participants
    )
