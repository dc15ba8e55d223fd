"""A participant's submission statuses on Prolific, as the studio records them (webhooks and syncs)."""

from __future__ import annotations

from annotation.base.models import Participant
from annotation.base.prolific_ids import RELEASING
from annotation.flow.services import participant_release
from annotation.prolific.models import ParticipantStatus, ProlificEvent


def participant_status_record(
    *, participant: Participant, status: str, event: ProlificEvent | None = None
) -> int:
    """A Prolific submission status the participant reached, recorded; RETURNED or TIMED-OUT (RELEASING)
    frees their item at once (participant_release). How many items were freed."""
    ParticipantStatus.objects.create(participant=participant, status=status, event=event)
    return participant_release(participant=participant) if status in RELEASING else 0
