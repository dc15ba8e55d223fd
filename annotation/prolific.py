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
RELEASING = frozenset({"RETURNED", "TIMED-OUT"})  # submission statuses that give the participant's item back


def normalised_status(status: str) -> str:
    """Prolific spells statuses with spaces in objects, underscores in filters: TIMED-OUT, AWAITING REVIEW."""
    return status.strip().upper().replace("_", " ").replace("TIMED OUT", "TIMED-OUT")


def random_pid() -> str:
    """A PROLIFIC_PID of the right form that no real participant has a reason to hold."""
    return secrets.token_hex(12)


def entry_link(path: str, *, study_id: str) -> str:
    """The entry `path` (/a/<slug>/) as Prolific would open it, for a new participant: a fresh random PID."""
    pid = random_pid()
    return f"{path}?{urlencode({'PROLIFIC_PID': pid, 'STUDY_ID': study_id, 'SESSION_ID': f'demo-{pid[:8]}'})}"
