"""Reviewing submissions in bulk from the study page against the fake Prolific: a preview says what will be
sent and what is refused, then approve or reject; never a rejection of a participant the comprehension check
screened out, never one without Prolific's category and message."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from annotation.base.models import Participant, Stage, Study
from annotation.flow import services
from annotation.kinds.critical_failures.posted import FailureInput, Submission
from annotation.prolific.models import ParticipantStatus
from tests.annotation.conftest import annotate_all, make_study, no_failure, qualified, run_prolific_jobs
from tests.factories import logged_in, make_prolific_staff, study_on_prolific
from tests.prolific_server import FakeProlific

TOKEN = "review-token"
REASON = "Every item was answered in under two seconds, without opening the procedures it asked about. " * 2


@pytest.fixture
def prolific(settings: Any) -> Iterator[FakeProlific]:
    with FakeProlific(token=TOKEN) as server:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = server.base_url, TOKEN
        yield server


def _screened_out(study: Study) -> Participant:
    """A participant as two failed comprehension attempts leave them."""
    screened = services.participant_enter(
        study=study, prolific_pid=f"{2:024x}", prolific_study_id="S", prolific_session_id="Y", user_agent="t"
    )
    screened.stage = Stage.SCREENED_OUT
    screened.save(update_fields=["stage"])
    return screened


def _finished_and_screened_out(prolific: FakeProlific) -> tuple[Participant, str, str, Client, str]:
    """A study on Prolific with one participant who finished and one screened out, both submitted there:
    (the finished participant, their submission, the screened-out one's, a staff client, the review URL)."""
    study = make_study(n_items=2, k=2)
    study_on_prolific(study)
    done = qualified(study, 1)
    annotate_all(done, lambda assignment: no_failure())
    services.participant_finish(participant=done)
    screened = _screened_out(study)
    ok = prolific.submit(study.prolific_study_id, participant_id=done.prolific_pid)
    out = prolific.submit(study.prolific_study_id, participant_id=screened.prolific_pid)
    return done, ok, out, logged_in(make_prolific_staff()), f"/studies/{study.slug}/prolific/review/"


@pytest.mark.django_db
def test_a_preview_then_the_transitions_and_the_refusals(prolific: FakeProlific) -> None:
    done, ok, out, staff, url = _finished_and_screened_out(prolific)
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
    assert prolific.state.submissions[ok]["status"] == "AWAITING REVIEW"  # queued: a job sends it
    run_prolific_jobs()
    assert prolific.state.submissions[ok]["status"] == "REJECTED"
    assert prolific.state.submissions[out]["status"] == "AWAITING REVIEW"  # refused: never sent
    assert ParticipantStatus.objects.get(participant=done).status == "REJECTED"

    approve = {"action": "APPROVE", "submissions": [out], "approve_screened": [out], "confirmed": "1"}
    staff.post(url, approve)
    run_prolific_jobs()
    staff.post(url, approve)  # twice: the second finds it approved and sends nothing
    run_prolific_jobs()
    assert prolific.state.submissions[out]["status"] == "APPROVED"
    sent = [r for r in prolific.requests if r.path == f"/submissions/{out}/transition/"]
    assert len(sent) == 1


def _against_checks(assignment: Any) -> Any:
    """Every regular item "no failure"; every attention check answered against its instruction."""
    item = assignment.item
    if item.is_attention_check and not item.attention_expects_failure:
        return Submission(
            has_failure=True, failures=[FailureInput("x", [1], [1])], comments="", user_agent="t"
        )
    return no_failure()


@pytest.mark.django_db
def test_failed_attention_checks_earn_their_code_and_are_the_only_failed_check_ground(
    prolific: FakeProlific,
) -> None:
    study = make_study(n_items=4, k=2, attention_checks=2, attention_check_every=1, attention_fail_limit=2)
    study_on_prolific(study)
    careless, careful = qualified(study, 1), qualified(study, 2)
    annotate_all(careless, _against_checks)
    annotate_all(careful, lambda a: _against_checks(a) if not a.item.is_attention_check else _obeying(a))
    for participant in (careless, careful):
        services.participant_finish(participant=participant)
        participant.refresh_from_db()
    assert services.attention_checks_failed(careless) == 2 and services.attention_checks_failed(careful) == 0
    assert services.participant_code(careless) == ("attention_failed", study.attention_failed_code)
    assert services.participant_code(careful) == ("completed", study.completion_code)
    assert len({study.completion_code, study.screenout_code, study.attention_failed_code}) == 3

    bad = prolific.submit(study.prolific_study_id, participant_id=careless.prolific_pid)
    good = prolific.submit(study.prolific_study_id, participant_id=careful.prolific_pid)
    staff = logged_in(make_prolific_staff())
    url = f"/studies/{study.slug}/prolific/review/"
    data = {"action": "REJECT", "submissions": [bad, good], "rejection_category": "FAILED_CHECK",
            "message": REASON, "confirmed": "1"}  # fmt: skip
    staff.post(url, data)
    run_prolific_jobs()
    assert prolific.state.submissions[bad]["status"] == "REJECTED"
    assert prolific.state.submissions[good]["status"] == "AWAITING REVIEW"
    preview = staff.post(url, {**data, "submissions": [good], "confirmed": ""})
    assert b"0 failed attention check(s) recorded, fewer than the study&#x27;s 2" in preview.content


def _obeying(assignment: Any) -> Any:
    item = assignment.item
    if item.attention_expects_failure:
        return Submission(
            has_failure=True, failures=[FailureInput("x", [1], [1])], comments="", user_agent="t"
        )
    return no_failure()


@pytest.mark.django_db
def test_screening_out_asks_only_the_screened_out_to_return(prolific: FakeProlific) -> None:
    _, ok, out, staff, url = _finished_and_screened_out(prolific)
    preview = staff.post(url, {"action": "REQUEST_RETURN", "submissions": [ok, out]})
    assert b"not screened out by the comprehension check" in preview.content
    staff.post(url, {"action": "REQUEST_RETURN", "submissions": [ok, out], "confirmed": "1"})
    run_prolific_jobs()
    assert prolific.state.submissions[out]["return_requested"] == ["Did not pass the comprehension check"]
    assert prolific.state.submissions[ok]["return_requested"] is None


@pytest.mark.django_db
def test_a_screened_out_participant_is_approved_in_bulk_only_when_named(prolific: FakeProlific) -> None:
    """#31 item 10: one asked to return who has not yet (AWAITING REVIEW) is left out of "approve all"; the
    preview says so and offers them by name; ticked, they are approved."""
    _, ok, out, staff, url = _finished_and_screened_out(prolific)
    everyone = {"action": "APPROVE", "submissions": [ok, out]}
    preview = staff.post(url, everyone)
    text = preview.content.decode()
    assert preview.status_code == 200 and "approving pays them the full reward" in text
    assert f'name="approve_screened" value="{out}"' in text and f'value="{ok}"' in text
    assert "left out of this approval unless you name each" in text
    staff.post(url, {**everyone, "confirmed": "1"})
    run_prolific_jobs()
    assert prolific.state.submissions[ok]["status"] == "APPROVED"
    assert prolific.state.submissions[out]["status"] == "AWAITING REVIEW"  # never sent
    assert not [r for r in prolific.requests if r.path == f"/submissions/{out}/transition/"]
    staff.post(url, {**everyone, "approve_screened": [out], "confirmed": "1"})  # named: sent
    run_prolific_jobs()
    assert prolific.state.submissions[out]["status"] == "APPROVED"
