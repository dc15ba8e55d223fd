"""Reviewing submissions in bulk from the study page against the fake Prolific: a preview says what will be
sent and what is refused, then approve or reject; never a rejection of a participant the comprehension check
screened out, never one without Prolific's category and message."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from annotation import services
from annotation.models import ParticipantStatus, Stage
from annotation.prolific_api import ProlificClient
from tests.annotation.conftest import annotate_all, make_study, no_failure, qualified
from tests.factories import logged_in, make_user
from tests.prolific_server import FakeProlific

TOKEN = "review-token"
REASON = "Every item was answered in under two seconds, without opening the procedures it asked about. " * 2


@pytest.fixture
def prolific(settings: Any) -> Iterator[FakeProlific]:
    with FakeProlific(token=TOKEN) as server:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = server.base_url, TOKEN
        yield server


@pytest.mark.django_db
def test_a_preview_then_the_transitions_and_the_refusals(prolific: FakeProlific) -> None:
    study = make_study(n_items=2, k=2)
    study.prolific_study_id = ProlificClient().study_create(
        {"name": "n", "description": "d", "external_study_url": "https://x/", "completion_codes": [],
         "total_available_places": 3, "estimated_completion_time": 5, "reward": 100}
    )["id"]  # fmt: skip
    study.save(update_fields=["prolific_study_id"])
    done = qualified(study, 1)
    annotate_all(done, lambda assignment: no_failure())
    services.participant_finish(participant=done)
    screened = services.participant_enter(
        study=study, prolific_pid=f"{2:024x}", prolific_study_id="S", prolific_session_id="Y", user_agent="t"
    )
    screened.stage = Stage.SCREENED_OUT  # what two failed comprehension attempts leave
    screened.save(update_fields=["stage"])
    ok = prolific.submit(study.prolific_study_id, participant_id=done.prolific_pid)
    out = prolific.submit(study.prolific_study_id, participant_id=screened.prolific_pid)
    staff = logged_in(make_user(is_staff=True))
    url = f"/studies/{study.slug}/prolific/review/"
    page = staff.get(url)
    assert page.status_code == 200 and ok.encode() in page.content and b"Screened out" in page.content

    short = staff.post(
        url, {"action": "REJECT", "submissions": [ok], "rejection_category": "LOW_EFFORT", "message": "no"}
    )
    assert short.status_code == 400 and b"at least 100 characters" in short.content
    data = {
        "action": "REJECT",
        "submissions": [ok, out],
        "rejection_category": "LOW_EFFORT",
        "message": REASON,
    }
    preview = staff.post(url, data)
    assert preview.status_code == 200 and b"not a rejection ground" in preview.content
    assert prolific.state.submissions[ok]["status"] == "AWAITING REVIEW"  # a preview sends nothing
    staff.post(url, {**data, "confirmed": "1"})
    assert prolific.state.submissions[ok]["status"] == "REJECTED"
    assert prolific.state.submissions[out]["status"] == "AWAITING REVIEW"  # refused: never sent
    assert ParticipantStatus.objects.get(participant=done).status == "REJECTED"

    approve = {"action": "APPROVE", "submissions": [out], "confirmed": "1"}
    staff.post(url, approve)
    staff.post(url, approve)  # twice: the second finds it approved and sends nothing
    assert prolific.state.submissions[out]["status"] == "APPROVED"
    sent = [r for r in prolific.requests if r.path == f"/submissions/{out}/transition/"]
    assert len(sent) == 1
