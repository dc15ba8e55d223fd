"""A studio study on Prolific: its draft (what Prolific is told), its transitions, and syncing its
submissions back onto the participants (docs/prolific-api.md §2-4).

The draft, from the study itself:
- the external URL: the study's entry page with PROLIFIC_PID, STUDY_ID and SESSION_ID as Prolific's
  {{%...%}} placeholders (prolific_id_option url_parameters);
- completion codes: the study's completion code (COMPLETED, reviewed by hand before approval) and its
  screen-out code (SCREENED_OUT, participants who failed the comprehension check on every attempt; Prolific
  does not allow rejecting them, so Prolific is asked to request a return) and its failed-attention-check
  code (FAILED_ATTENTION_CHECK, reviewed by hand: a participant who failed at least the study's
  attention_fail_limit attention checks);
- places: ceil(regular items x annotators per item / items per participant) (items per participant 0: one
  participant takes every item, so annotators-per-item places);
- estimated minutes: ceil(items a participant takes x the study's minutes per item, attention checks
  included, + SETUP_MINUTES for consent, training and the check);
- maximum allowed minutes: never below Prolific's documented minimum for the estimated minutes
  (codebook.prolific_max_minutes: 2 + 2X + 2*sqrt(X), rounded up), or the study's leases end to end (lease
  minutes x items a participant takes) when they allow longer;
- reward (minor units: pence/cents), name and description from the form.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Count

from annotation.base import codebook
from annotation.base.models import Annotation, Participant, Study
from annotation.base.prolific_ids import normalised_status
from annotation.prolific import statuses
from annotation.prolific.client import ProlificClient, ProlificError

SETUP_MINUTES = 5


def participant_items(study: Study) -> int:
    """Regular items one participant takes."""
    regular = study.items.not_attention_checks().count()
    return min(study.items_per_participant, regular) if study.items_per_participant else regular


def places(study: Study) -> int:
    regular = study.items.not_attention_checks().count()
    if not study.items_per_participant:
        return study.annotators_per_item
    return max(1, math.ceil(regular * study.annotators_per_item / study.items_per_participant))


def estimated_minutes(study: Study) -> int:
    items = participant_items(study)
    checks = items // study.attention_check_every if study.attention_check_every else 0
    return math.ceil((items + checks) * study.estimated_item_minutes) + SETUP_MINUTES


def maximum_allowed_minutes(study: Study) -> int:
    """The draft's maximum_allowed_time (the module's docstring)."""
    leases = study.lease_minutes * max(1, participant_items(study))
    return max(codebook.prolific_max_minutes(estimated_minutes(study)), leases)


def study_draft(study: Study, *, entry_url: str, name: str, description: str, reward: int) -> dict[str, Any]:
    """What Prolific is sent to create the study as a draft (the module's docstring says each field)."""
    placeholders = "&".join(f"{key}={{{{%{key}%}}}}" for key in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"))
    url = f"{entry_url}?{placeholders}"
    return {
        "name": name,
        "internal_name": f"studio:{study.slug}",
        "description": description,
        "external_study_url": url,
        "prolific_id_option": "url_parameters",
        "completion_codes": [
            {
                "code": study.completion_code,
                "code_type": "COMPLETED",
                "actor": "participant",
                "actions": [{"action": "MANUALLY_REVIEW"}],
            },
            {
                "code": study.screenout_code,
                "code_type": "SCREENED_OUT",
                "actor": "participant",
                "actions": [
                    {"action": "REQUEST_RETURN", "return_reason": "Did not pass the comprehension check"}
                ],
            },
            {
                "code": study.attention_failed_code,
                "code_type": "FAILED_ATTENTION_CHECK",
                "actor": "participant",
                "actions": [{"action": "MANUALLY_REVIEW"}],
            },
        ],
        "total_available_places": places(study),
        "estimated_completion_time": estimated_minutes(study),
        "maximum_allowed_time": maximum_allowed_minutes(study),
        "reward": reward,
        "device_compatibility": ["desktop"],
        "metadata": study.slug,
    }


def study_publish_draft(study: Study, client: ProlificClient, **draft: Any) -> str:
    """Create the draft on Prolific and keep its id on the study (STUDY_ID must then match it)."""
    created = client.study_create(study_draft(study, **draft))
    Study.objects.filter(pk=study.pk).update(prolific_study_id=created["id"])
    study.prolific_study_id = created["id"]
    return str(created["id"])


def submissions_sync(study: Study, client: ProlificClient) -> dict[str, int]:
    """Each submission's status onto its participant (a ParticipantStatus when it changed); a RETURNED or
    TIMED-OUT one frees the participant's item. Every page is read (and checked by the client) before
    anything is recorded, then all is recorded in one transaction: a bad page records nothing. Counts:
    submissions read, statuses recorded, released."""
    submissions = list(client.submissions(study.prolific_study_id))
    counts = {"submissions": len(submissions), "recorded": 0, "released": 0}
    participants = {p.prolific_pid: p for p in Participant.objects.counted().filter(study=study)}
    with transaction.atomic():
        for submission in submissions:
            participant = participants.get(str(submission["participant_id"]).lower())
            if participant is None:
                continue
            status = normalised_status(submission["status"])
            last = (
                participant.prolific_statuses.order_by("-at", "-id").values_list("status", flat=True).first()
            )
            if last == status:
                continue
            counts["released"] += statuses.participant_status_record(participant=participant, status=status)
            counts["recorded"] += 1
    return counts


REJECTION_CATEGORIES = (
    "TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK", "LOW_EFFORT",
    "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER",
)  # fmt: skip


REVIEW_ACTIONS = (
    ("APPROVE", "Approve"),
    ("REJECT", "Reject"),
    ("REQUEST_RETURN", "Screen out (ask to return)"),
)
RETURN_REASON = "Did not pass the comprehension check"


def review_refusal(
    action: str, row: dict[str, Any], category: str = "", approved_by_name: bool = False
) -> str:
    """Why the studio will not send `action` for this submission ("" when it will): only submissions awaiting
    review are reviewed; a participant the comprehension check screened out is never rejected (Prolific does
    not allow it) but asked to return, and only they are; they are not approved either (it pays the full
    reward to someone asked to return) unless confirmed by name (`approved_by_name`); a rejection for failed
    attention checks (FAILED_CHECK) needs at least the study's `attention_fail_limit` failed checks recorded
    by the studio. The engagement gates (dwell, reading, goal) are never a ground: whoever finished passed
    them, since the server refuses an answer that did not."""
    participant, status = row["participant"], row["status"]
    if status != "AWAITING REVIEW":
        return f"the submission is {status}, not awaiting review"
    screened = participant is not None and participant.stage == "screened_out"
    if action == "REJECT" and screened:
        return "screened out by the comprehension check: not a rejection ground on Prolific (screen them out)"
    if action == "APPROVE" and screened and not approved_by_name:
        return (
            "screened out by the comprehension check and asked to return: approving pays them the full "
            "reward, so it is sent only if you tick their PROLIFIC_PID below"
        )
    if action == "REQUEST_RETURN" and not screened:
        return "not screened out by the comprehension check: approve it, or reject it on a Prolific ground"
    if action == "REJECT" and category == "FAILED_CHECK":
        limit = participant.study.attention_fail_limit if participant is not None else 1
        if row["failed_checks"] < limit:
            return (
                f"{row['failed_checks']} failed attention check(s) recorded, fewer than the study's "
                f"{limit}: not a ground for FAILED_CHECK"
            )
    return ""


def review_rows(study: Study, client: ProlificClient) -> list[dict[str, Any]]:
    """The study's submissions on Prolific, each beside the studio's participant (None when unknown here)."""
    participants = {p.prolific_pid: p for p in Participant.objects.counted().filter(study=study)}
    failed = _failed_checks(study)
    rows = []
    for submission in client.submissions(study.prolific_study_id):
        participant = participants.get(submission["participant_id"].lower())
        rows.append(
            {
                "id": submission["id"],
                "participant_id": submission["participant_id"],
                "status": normalised_status(submission["status"]),
                "participant": participant,
                "screened_out": participant is not None and participant.stage == "screened_out",
                "failed_checks": failed.get(participant.pk, 0) if participant is not None else 0,
            }
        )
    return rows


def _failed_checks(study: Study) -> dict[int, int]:
    """Participant pk -> the attention checks they failed."""
    failed = Annotation.objects.filter(study=study, attention_passed=False).attention_checks()
    return dict(failed.values("participant_id").annotate(n=Count("pk")).values_list("participant_id", "n"))


def review_plan(rows: list[dict[str, Any]], data: dict[str, Any]) -> list[dict[str, Any]]:
    """The chosen submissions, each with what the studio refuses to send for it ("" for nothing); a
    screened-out participant is approved only when their submission is also in `approve_screened`."""
    chosen = set(data.get("submissions", []))
    by_name = set(data.get("approve_screened", []))
    category = data.get("rejection_category", "")
    return [
        {**row, "refusal": review_refusal(data["action"], row, category, row["id"] in by_name)}
        for row in rows
        if row["id"] in chosen
    ]


@dataclass
class ReviewSent:
    sent: int = 0
    refused: list[str] = field(default_factory=list)  # what Prolific refused, per submission
    stopped: str = ""  # Prolific failing (a 5xx or no answer after the retries): the rest was not sent


def review_send(
    client: ProlificClient,
    plan: list[dict[str, Any]],
    data: dict[str, Any],
    on_sent: Callable[[ReviewSent], None] = lambda sent: None,
) -> ReviewSent:
    """Send the planned transitions the studio does not refuse, each recorded on its participant when
    Prolific answers it. A refusal of one (a 4xx) is kept and the others are sent; Prolific failing (a 5xx
    or no answer after the retries) stops there: what was sent stays recorded, the rest is not sent."""
    outcome = ReviewSent()
    for row in plan:
        if row["refusal"]:
            continue
        try:
            _review_one(client, row, data)
        except ProlificError as refused:
            if refused.status is None or refused.status >= 500:
                outcome.stopped = str(refused)
                return outcome
            outcome.refused.append(f"{row['id']}: {refused}")
        else:
            outcome.sent += 1
        on_sent(outcome)
    return outcome


def _review_one(client: ProlificClient, row: dict[str, Any], data: dict[str, Any]) -> None:
    if data["action"] == "REQUEST_RETURN":
        client.request_return(row["id"], RETURN_REASON)  # the status changes when they return
        return
    answer = client.submission_transition(
        row["id"],
        data["action"],
        message=data.get("message", ""),
        rejection_category=data.get("rejection_category", ""),
    )
    if row["participant"] is not None:
        status = normalised_status(answer["status"])
        statuses.participant_status_record(participant=row["participant"], status=status)
