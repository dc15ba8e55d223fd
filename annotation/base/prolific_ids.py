"""What a Prolific entry link holds: the PROLIFIC_PID's form, and a link with a fresh random PID; how
Prolific spells a submission's status.

No Django import here: demo/run.py prints the demo's annotator links with `entry_link`, without setting up
Django.
"""

from __future__ import annotations

import re
import secrets
from urllib.parse import urlencode

PID_PATTERN = re.compile(r"[0-9a-fA-F]{24}", re.ASCII)  # Prolific IDs: 24 hex characters, stored lowercase
PROLIFIC_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}", re.ASCII)  # STUDY_ID and SESSION_ID
# A submission's statuses, as Prolific spells them in objects (docs/prolific-api.md §4.2; UNKNOWN is an enum
# value of its API, undocumented; PROCESSING is shown for a moment after a review, seen by a third-party
# client). Nothing else is one: the webhooks, the sync and the client's answer checks read this one set.
SUBMISSION_STATUSES = frozenset(
    {
        "RESERVED",
        "ACTIVE",
        "TIMED-OUT",
        "AWAITING REVIEW",
        "APPROVED",
        "PARTIALLY APPROVED",
        "RETURNED",
        "REJECTED",
        "SCREENED OUT",
        "UNKNOWN",
        "PROCESSING",
    }
)
RELEASING = frozenset({"RETURNED", "TIMED-OUT"})  # submission statuses that give the participant's item back
# A study's statuses (docs/prolific-api.md §3), as study.status.change events carry them.
STUDY_STATUSES = frozenset(
    {"UNPUBLISHED", "SCHEDULED", "PUBLISHING", "ACTIVE", "PAUSED", "AWAITING REVIEW", "COMPLETED"}
)


def normalised_status(status: str) -> str:
    """Prolific spells statuses with spaces in objects, underscores in filters: TIMED-OUT, AWAITING REVIEW."""
    return status.strip().upper().replace("_", " ").replace("TIMED OUT", "TIMED-OUT")


def submission_status(value: object) -> str:
    """A submission's status as Prolific sent it (in an object, a filter's spelling or a webhook), in the
    spelling of SUBMISSION_STATUSES; ValueError naming the value when it is not one of them."""
    return _one_of("submission status", value, SUBMISSION_STATUSES)


def study_status(value: object) -> str:
    """A study's status, as submission_status does it for STUDY_STATUSES."""
    return _one_of("study status", value, STUDY_STATUSES)


def _one_of(what: str, value: object, statuses: frozenset[str]) -> str:
    if isinstance(value, str) and len(value) <= 40 and normalised_status(value) in statuses:
        return normalised_status(value)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    raise ValueError(f"{shown} is not a {what} Prolific has ({', '.join(sorted(statuses))})")


def random_pid() -> str:
    """A PROLIFIC_PID of the right form that no real participant has a reason to hold."""
    return secrets.token_hex(12)


def entry_link(path: str, *, study_id: str) -> str:
    """The entry `path` (/a/<slug>/) as Prolific would open it, for a new participant: a fresh random PID."""
    pid = random_pid()
    return f"{path}?{urlencode({'PROLIFIC_PID': pid, 'STUDY_ID': study_id, 'SESSION_ID': f'demo-{pid[:8]}'})}"
