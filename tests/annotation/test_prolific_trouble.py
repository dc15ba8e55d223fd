"""Prolific answering oddly, hanging, or acted on by the wrong person (#31 items 6, 9, 13, 14, 16), through
the real pages against the fake Prolific (tests/prolific_server.py), which answers here what a test
scripts: an error whose "error" is a string, a 200 with an HTML page, a JSON list or {}, ids of 500
characters, 500s after every retry, and hangs."""

from __future__ import annotations

import html
import math
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from annotation.base import codebook
from annotation.base.models import Study
from annotation.prolific import client as prolific_api
from annotation.prolific.client import RETRIES
from annotation.prolific.models import ParticipantStatus
from annotation.prolific.studies import estimated_minutes, maximum_allowed_minutes
from h2e_site.jobs.models import Job
from tests.annotation.conftest import annotate_all, make_study, no_failure, qualified, run_prolific_jobs
from tests.factories import logged_in, make_prolific_staff, make_user, study_on_prolific
from tests.prolific_server import HTML_PAGE, FakeProlific, Trouble

TOKEN = "trouble-token"
LONG_ID = "a" * 500
DRAFT_FORM = {"name": "Judge procedures", "description": "Read and judge.", "reward": "250"}


@pytest.fixture
def prolific(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProlific]:
    monkeypatch.setattr(prolific_api, "BACKOFF_SECONDS", 0.001)  # 500s retried at once
    with FakeProlific(token=TOKEN) as server:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = server.base_url, TOKEN
        yield server


def _finished(study: Study, prolific: FakeProlific) -> str:
    """A participant who finished the study and submitted on Prolific: their submission's id."""
    done = qualified(study, 1)
    annotate_all(done, lambda assignment: no_failure())
    from annotation.flow import services

    services.participant_finish(participant=done)
    return prolific.submit(study.prolific_study_id, participant_id=done.prolific_pid)


def _page_text(response: Any) -> str:
    return html.unescape(re.sub(r"\s+", " ", response.content.decode()))


ODD = {
    "string-error": (dict(status=400, body={"error": "Study is locked"}), "400: Study is locked"),
    "html": (dict(status=200, raw=HTML_PAGE, content_type="text/html"), "not JSON (text/html)"),
    "list": (dict(status=200, body=[{"id": "x"}]), "a JSON list, not an object"),
    "empty-object": (dict(status=200, body={}), "Prolific answered {}"),
}


# --- item 14: odd answers name themselves and store nothing ---------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("answer", "says"),
    [
        *ODD.values(),
        (
            dict(status=201, body={"id": LONG_ID, "status": "UNPUBLISHED"}),
            "(500 characters), not a Prolific id",
        ),
        (dict(status=201, body={"id": "b" * 24, "status": "EXPLODED"}), "'status' is 'EXPLODED'"),
    ],
    ids=[*ODD, "500-character-id", "unknown-status"],
)
def test_an_odd_answer_to_the_draft_is_named_and_nothing_is_stored(
    prolific: FakeProlific, answer: dict[str, Any], says: str
) -> None:
    study = make_study(n_items=2, k=1)
    prolific.script(Trouble(path="/studies/", method="POST", **answer))
    page = logged_in(make_prolific_staff()).post(f"/studies/{study.slug}/prolific/draft/", DRAFT_FORM)
    assert page.status_code == 200 and "Prolific POST /studies/" in _page_text(page)
    assert says in _page_text(page)
    study.refresh_from_db()
    assert study.prolific_study_id == ""


@pytest.mark.django_db
@pytest.mark.parametrize(("answer", "says"), ODD.values(), ids=list(ODD))
def test_an_odd_answer_to_publish_is_named(prolific: FakeProlific, answer: dict[str, Any], says: str) -> None:
    study = study_on_prolific(make_study(n_items=2, k=1))
    prolific.script(Trouble(path="/transition/", **answer))
    page = logged_in(make_prolific_staff()).post(f"/studies/{study.slug}/prolific/PUBLISH/", follow=True)
    assert page.status_code == 200 and f"/studies/{study.prolific_study_id}/transition/" in _page_text(page)
    assert says in _page_text(page) and "the study is now" not in _page_text(page)


SUBMISSION_PAGES = {
    **ODD,
    "500-character-participant": (
        dict(
            status=200, body={"results": [{"id": "c" * 24, "participant_id": LONG_ID, "status": "APPROVED"}]}
        ),
        "results[0]: 'participant_id' is",
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize(("answer", "says"), SUBMISSION_PAGES.values(), ids=list(SUBMISSION_PAGES))
def test_an_odd_page_of_submissions_fails_the_sync_job_and_records_nothing(
    prolific: FakeProlific, answer: dict[str, Any], says: str
) -> None:
    study = study_on_prolific(make_study(n_items=2, k=1))
    _finished(study, prolific)
    staff = logged_in(make_prolific_staff())
    prolific.script(Trouble(path="/submissions/", method="GET", **answer))
    assert staff.post(f"/studies/{study.slug}/prolific/sync/").status_code == 302
    (job,) = run_prolific_jobs()
    assert job.status == "failed" and "GET /submissions/" in job.error and says in job.error
    assert not ParticipantStatus.objects.exists()
    assert says.split(":")[0] in _page_text(staff.get(f"/jobs/{job.pk}/"))


@pytest.mark.django_db
@pytest.mark.parametrize(("answer", "says"), ODD.values(), ids=list(ODD))
def test_an_odd_page_of_submissions_on_the_review_page_is_named(
    prolific: FakeProlific, answer: dict[str, Any], says: str
) -> None:
    study = study_on_prolific(make_study(n_items=2, k=1))
    _finished(study, prolific)
    prolific.script(Trouble(path="/submissions/", method="GET", **answer))
    page = logged_in(make_prolific_staff()).get(f"/studies/{study.slug}/prolific/review/", follow=True)
    assert page.status_code == 200 and "GET /submissions/" in _page_text(page) and says in _page_text(page)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("trouble", "says"),
    [
        ([Trouble(500, path="/transition/")] * (RETRIES + 1), ": 500: trouble: scripted"),
        ([ODD["html"][0] | {"path": "/transition/"}], "not JSON (text/html)"),
        ([ODD["empty-object"][0] | {"path": "/transition/"}], "'id' is null, not a Prolific id"),
    ],
    ids=["500-after-the-retries", "html", "empty-object"],
)
def test_an_approval_prolific_fails_is_named_and_not_recorded(
    prolific: FakeProlific, trouble: list[Any], says: str
) -> None:
    study = study_on_prolific(make_study(n_items=2, k=1))
    submission = _finished(study, prolific)
    staff = logged_in(make_prolific_staff())
    url = f"/studies/{study.slug}/prolific/review/"
    staff.post(url, {"action": "APPROVE", "submissions": [submission], "confirmed": "1"})
    prolific.script(*(t if isinstance(t, Trouble) else Trouble(**t) for t in trouble))
    (job,) = run_prolific_jobs()
    assert (
        job.status == "failed" and f"/submissions/{submission}/transition/" in job.error and says in job.error
    )
    assert not ParticipantStatus.objects.exists()  # nothing recorded of an approval Prolific did not answer


def test_an_error_body_of_any_documented_shape_is_read() -> None:
    """docs/prolific-api.md §8: "error" nested or flat, its detail a string, a list or a field map."""
    import requests

    def response(body: bytes, content_type: str = "application/json") -> requests.Response:
        answer = requests.Response()
        answer.status_code, answer._content = 400, body
        answer.headers["Content-Type"] = content_type
        return answer

    read = prolific_api._error_text
    assert read(response(b'{"error": {"title": "Bad Request", "detail": {"reward": ["Required."]}}}')) == (
        "Bad Request: reward: Required."
    )
    assert read(response(b'{"error": "Nope"}')) == "Nope"
    assert read(response(b'{"message": "Slow down", "detail": ["a", "b"]}')) == "Slow down: a; b"
    assert read(response(b"[1, 2]")) == "[1, 2]"
    assert read(response(HTML_PAGE, "text/html")).startswith("'<!DOCTYPE html>")


# --- item 16: a hanging Prolific costs a page its budget, and the long actions are jobs -------------------


def test_a_pages_budget_is_well_under_gunicorns_worker_timeout() -> None:
    """gunicorn kills a worker after --timeout seconds (30 when the Dockerfile does not set it)."""
    command = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()
    timeout = int(m.group(1)) if (m := re.search(r'"--timeout",\s*"(\d+)"', command)) else 30
    budget = prolific_api.PAGE_BUDGET_SECONDS
    assert budget <= timeout / 2, f"a page's {budget} s for Prolific is not well under gunicorn's {timeout} s"


@pytest.mark.django_db
def test_a_hanging_prolific_holds_a_page_no_longer_than_its_budget(
    prolific: FakeProlific, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prolific_api, "PAGE_BUDGET_SECONDS", 1.0)
    study = study_on_prolific(make_study(n_items=2, k=1))
    staff = logged_in(make_prolific_staff())
    prolific.script(*[Trouble(hang=4.0)] * (RETRIES + 1))
    started = time.monotonic()
    page = staff.post(f"/studies/{study.slug}/prolific/PUBLISH/", follow=True)
    assert time.monotonic() - started < 2.5
    assert "no answer within this page's 1 s for Prolific" in _page_text(page)
    started = time.monotonic()
    review = staff.get(f"/studies/{study.slug}/prolific/review/", follow=True)
    assert time.monotonic() - started < 2.5 and "GET /submissions/" in _page_text(review)


@pytest.mark.django_db
def test_sync_bonuses_and_review_are_queued_as_jobs_with_a_live_row(prolific: FakeProlific) -> None:
    """A hanging Prolific does not hold these pages at all: they send nothing, a job does, and the study page
    shows its row refreshing itself."""
    study = study_on_prolific(make_study(n_items=2, k=1))
    submission = _finished(study, prolific)
    prolific.script(*[Trouble(hang=3.0)] * 3)
    staff = logged_in(make_prolific_staff())
    sent_before = len(prolific.requests)
    started = time.monotonic()
    staff.post(f"/studies/{study.slug}/prolific/sync/")
    staff.post(f"/studies/{study.slug}/prolific/bonuses/", {"amount": "0.50", "reason": "thanks"})
    assert time.monotonic() - started < 2 and len(prolific.requests) == sent_before
    page = _page_text(staff.get(f"/studies/{study.slug}/"))
    for job in Job.objects.all():
        assert f'id="job-{job.pk}"' in page and 'hx-trigger="every 2s"' in page
    assert "Prolific: sync submissions" in page and "Prolific: pay bonuses" in page
    prolific._trouble.clear()
    review = f"/studies/{study.slug}/prolific/review/"
    staff.post(review, {"action": "APPROVE", "submissions": [submission], "confirmed": "1"})
    assert prolific.state.submissions[submission]["status"] == "AWAITING REVIEW"  # not sent by the page
    assert [job.status for job in run_prolific_jobs()] == ["succeeded"] * 3
    assert prolific.state.submissions[submission]["status"] == "APPROVED"


# --- item 13: acting on Prolific and paying need permissions of their own ------------------------------


def _action_requests(slug: str, submission: str) -> list[tuple[str, str, dict[str, Any]]]:
    base = f"/studies/{slug}/prolific/"
    return [
        ("get", f"{base}draft/", {}),
        ("post", f"{base}draft/", DRAFT_FORM),
        *(("post", f"{base}{action}/", {}) for action in ("PUBLISH", "PAUSE", "START", "STOP")),
        ("post", f"{base}sync/", {}),
        ("get", f"{base}review/", {}),
        ("post", f"{base}review/", {"action": "APPROVE", "submissions": [submission], "confirmed": "1"}),
        (
            "post",
            f"{base}review/",
            {"action": "REQUEST_RETURN", "submissions": [submission], "confirmed": "1"},
        ),
    ]


@pytest.mark.django_db
def test_staff_without_the_prolific_permissions_get_403_before_anything_is_sent(
    prolific: FakeProlific,
) -> None:
    study = study_on_prolific(make_study(n_items=2, k=1))
    submission = _finished(study, prolific)
    sent = len(prolific.requests)
    plain, payer_only = logged_in(make_user(is_staff=True)), logged_in(make_prolific_staff(bonuses=False))
    for method, url, data in _action_requests(study.slug, submission):
        answer = getattr(plain, method)(url, data)
        assert answer.status_code == 403 and b"Can act on a study on Prolific" in answer.content, url
    bonus = {"amount": "1.00", "reason": "thanks"}
    for client in (plain, payer_only):
        answer = client.post(f"/studies/{study.slug}/prolific/bonuses/", bonus)
        assert answer.status_code == 403 and b"Can pay bonuses through Prolific" in answer.content
    assert len(prolific.requests) == sent and not Job.objects.exists()
    page = _page_text(plain.get(f"/studies/{study.slug}/"))
    assert "prolific/PUBLISH/" not in page and "Pay bonuses" not in page and "Sync submissions" not in page
    assert "needs the “Can act on a study on Prolific” permission" in page


@pytest.mark.django_db
def test_the_study_page_offers_each_prolific_action_only_to_who_may_take_it(
    prolific: FakeProlific, boss: Client
) -> None:
    study = study_on_prolific(make_study(n_items=2, k=1))
    actor = _page_text(logged_in(make_prolific_staff(bonuses=False)).get(f"/studies/{study.slug}/"))
    assert "prolific/PUBLISH/" in actor and "Sync submissions" in actor and "Pay bonuses" not in actor
    assert "Paying bonuses needs the “Can pay bonuses through Prolific” permission" in actor
    everything = _page_text(boss.get(f"/studies/{study.slug}/"))  # the demo's login is a superuser
    assert (
        "prolific/PUBLISH/" in everything
        and "Pay bonuses" in everything
        and "disabled title=" not in everything
    )
    no_jobs = _page_text(logged_in(make_prolific_staff(jobs=False)).get(f"/studies/{study.slug}/"))
    assert 'disabled title="Syncing runs as a job' in no_jobs


# --- item 9: Prolific's least maximum time ---------------------------------------------------------------


def test_prolifics_least_maximum_time_is_stated_once() -> None:
    assert round(codebook.prolific_minimum_allowed_minutes(29), 2) == 70.77
    assert round(codebook.prolific_minimum_allowed_minutes(7), 1) == 21.3
    assert codebook.prolific_max_minutes(29) == 71 and codebook.prolific_max_minutes(7) == 22
    assert codebook.prolific_max_minutes(codebook.ESTIMATED_ITEM_MINUTES) == math.ceil(
        2 + 4 + 2 * math.sqrt(2)
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("n_items", "every", "estimated"), [(10, 5, 29), (1, 0, 7)], ids=["defaults", "one-item"]
)
def test_the_draft_is_never_below_prolifics_least_maximum_time(
    prolific: FakeProlific, n_items: int, every: int, estimated: int
) -> None:
    """The builder's defaults (10 items a participant, a check every 5: 29 estimated minutes) and a one-item
    study (7): Prolific refuses a maximum below 70.77 and 21.3 minutes (the fake does, as documented)."""
    study = make_study(n_items=n_items, k=1, attention_check_every=every)
    assert estimated_minutes(study) == estimated
    page = logged_in(make_prolific_staff()).post(f"/studies/{study.slug}/prolific/draft/", DRAFT_FORM)
    assert page.status_code == 302
    study.refresh_from_db()
    sent = prolific.state.studies[study.prolific_study_id]["maximum_allowed_time"]
    assert sent == maximum_allowed_minutes(study) >= codebook.prolific_minimum_allowed_minutes(estimated)


# --- item 6: the draft page says a token is missing before the form is filled ---------------------------


@pytest.mark.django_db
def test_the_draft_page_says_no_token_is_set_before_the_form_is_filled(settings: Any) -> None:
    settings.PROLIFIC_API_TOKEN = ""
    study = make_study(n_items=1, k=1)
    page = _page_text(logged_in(make_prolific_staff()).get(f"/studies/{study.slug}/prolific/draft/"))
    assert "PROLIFIC_API_TOKEN is not set" in page
    assert re.search(r'<button class="btn btn-primary" type="submit" disabled>Create the draft', page)
