"""The whole Prolific loop from the study page against the fake Prolific: create the draft, publish it
(behind its confirmation page), participants take items and finish, sync, approve, pay a bonus once, and a
return on Prolific (a signed webhook) frees the returning participant's item within that request."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from annotation.base.models import Assignment, AssignmentStatus
from annotation.flow import services
from annotation.prolific.client import ProlificClient
from annotation.prolific.models import BonusState, ParticipantStatus, ProlificBonus
from annotation.prolific.studies import estimated_minutes, maximum_allowed_minutes, places
from tests.annotation.conftest import annotate_all, make_study, no_failure, qualified, run_prolific_jobs
from tests.factories import logged_in, make_prolific_staff
from tests.prolific_server import FakeProlific, Trouble, signed_event

TOKEN, SECRET = "loop-token", "loop-secret"


@pytest.fixture
def prolific(settings: Any) -> Iterator[FakeProlific]:
    with FakeProlific(token=TOKEN) as server:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = server.base_url, TOKEN
        settings.PROLIFIC_WEBHOOK_SECRET = SECRET
        yield server


@pytest.mark.django_db
def test_the_whole_loop(prolific: FakeProlific) -> None:
    study = make_study(n_items=4, k=2, items_per_participant=2)
    staff = logged_in(make_prolific_staff())
    page = f"/studies/{study.slug}/"
    assert b"Create the study on Prolific" in staff.get(page).content
    bad = staff.post(
        f"{page}prolific/draft/", {"name": "Judge procedures", "description": "d", "reward": "0"}
    )
    assert bad.status_code == 400 and b"reward" in bad.content and not prolific.state.studies
    created = staff.post(
        f"{page}prolific/draft/",
        {"name": "Judge procedures", "description": "Read and judge.", "reward": "250"},
    )
    assert created.status_code == 302
    study.refresh_from_db()
    draft = prolific.state.studies[study.prolific_study_id]
    assert draft["total_available_places"] == places(study) == 4  # 4 items x 2 / 2 per participant
    assert draft["estimated_completion_time"] == estimated_minutes(study)
    assert draft["maximum_allowed_time"] == maximum_allowed_minutes(study)
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in draft["external_study_url"]
    assert [(c["code"], c["code_type"]) for c in draft["completion_codes"]] == [
        (study.completion_code, "COMPLETED"),
        (study.screenout_code, "SCREENED_OUT"),
        (study.attention_failed_code, "FAILED_ATTENTION_CHECK"),
    ]
    confirm = staff.get(f"{page}prolific/PUBLISH/")
    assert b"locks the study" in confirm.content and draft["status"] == "UNPUBLISHED"  # a GET changes nothing
    prolific.script(Trouble(429, retry_after="0"), Trouble(500))  # Prolific busy: retried, then shown
    published = staff.post(f"{page}prolific/PUBLISH/", follow=True)
    assert draft["status"] == "ACTIVE"
    assert "the study is now ACTIVE" in published.content.decode()
    assert (
        "retry 2 time(s)" in published.content.decode()
        and ": 429, retried after 0 s" in published.content.decode()
    )

    finishers = [qualified(study, i) for i in range(2)]
    for participant in finishers:
        annotate_all(participant, lambda assignment: no_failure())
        services.participant_finish(participant=participant)
        submission = prolific.submit(study.prolific_study_id, participant_id=participant.prolific_pid)
        participant.prolific_session_id = submission  # SESSION_ID is Prolific's submission id
        participant.save(update_fields=["prolific_session_id"])
    leaver = qualified(study, 9)
    leased = services.assignment_next(participant=leaver)
    assert leased is not None

    assert staff.post(f"{page}prolific/sync/").status_code == 302
    (synced,) = run_prolific_jobs()
    assert synced.status == "succeeded" and "2 statuses recorded" in synced.parameters["result"]
    assert ParticipantStatus.objects.filter(status="AWAITING REVIEW").count() == 2
    client = ProlificClient()
    for participant in finishers:
        assert (
            client.submission_transition(participant.prolific_session_id, "APPROVE")["status"] == "APPROVED"
        )
    for _ in range(2):  # a double click: one job
        staff.post(f"{page}prolific/bonuses/", {"amount": "0.40", "reason": "thanks"})
    assert [job.status for job in run_prolific_jobs()] == ["succeeded"]
    staff.post(f"{page}prolific/bonuses/", {"amount": "0.40", "reason": "thanks"})  # later: pays nobody again
    run_prolific_jobs()
    assert prolific.paid == {p.prolific_pid: 1 for p in finishers}
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {BonusState.PAID}

    returned = {
        "resource_id": leaver.prolific_session_id,  # SESSION_ID is the submission
        "event_type": "submission.status.change",
        "participant_id": leaver.prolific_pid,
        "status": "RETURNED",
    }
    body, headers = signed_event(returned, secret=SECRET, event_id="loop-1")
    answer = staff.post("/prolific/hooks/", body, content_type="application/json", headers=headers)
    assert answer.json()["released"] == 1
    assert Assignment.objects.get(pk=leased.pk).status == AssignmentStatus.EXPIRED
