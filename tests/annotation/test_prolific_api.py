"""The Prolific client against the fake Prolific (tests/prolific_server.py): studies and their transitions,
submissions page by page, review, the two-step bonus, retries with back-off, and a pay never sent twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from django.core.exceptions import ImproperlyConfigured
from hypothesis import given
from hypothesis import strategies as st

from annotation.prolific import client as prolific_api
from annotation.prolific.client import (
    PAGE_SIZE,
    RETRIES,
    PaymentUnknown,
    ProlificAnswerError,
    ProlificClient,
    ProlificError,
)
from tests.fuzzing import fuzz_settings
from tests.prolific_server import FakeProlific, Trouble

TOKEN = "secret-token-123"
DRAFT: dict[str, Any] = {
    "name": "Judge how-to procedures",
    "description": "<p>Read a goal and two procedures.</p>",
    "external_study_url": "https://studio.example/a/s/?PROLIFIC_PID={{%PROLIFIC_PID%}}"
    "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
    "prolific_id_option": "url_parameters",
    "completion_codes": [
        {
            "code": "C1",
            "code_type": "COMPLETED",
            "actor": "participant",
            "actions": [{"action": "MANUALLY_REVIEW"}],
        }
    ],
    "total_available_places": 6,
    "estimated_completion_time": 12,
    "reward": 200,
}


@pytest.fixture
def prolific() -> Iterator[FakeProlific]:
    with FakeProlific(token=TOKEN) as server:
        yield server


def _client(prolific: FakeProlific, waits: list[float] | None = None) -> ProlificClient:
    sleep = waits.append if waits is not None else (lambda seconds: None)
    return ProlificClient(base_url=prolific.base_url, token=TOKEN, sleep=sleep)


def test_it_creates_publishes_pauses_resumes_and_stops_a_study(prolific: FakeProlific) -> None:
    client = _client(prolific)
    study = client.study_create(DRAFT)
    assert study["status"] == "UNPUBLISHED" and prolific.requests[0].authorization == f"Token {TOKEN}"
    for action, status in (
        ("PUBLISH", "ACTIVE"),
        ("PAUSE", "PAUSED"),
        ("START", "ACTIVE"),
        ("STOP", "COMPLETED"),
    ):
        assert client.study_transition(study["id"], action)["status"] == status
    with pytest.raises(
        ProlificError, match=r"POST /studies/\w+/transition/: 400: .*cannot PAUSE a study that is COMPLETED"
    ):
        client.study_transition(study["id"], "PAUSE")
    with pytest.raises(ValueError, match="action: expected one of PUBLISH, PAUSE, START, STOP"):
        client.study_transition(study["id"], "DELETE")


def test_it_names_the_fields_prolific_refuses(prolific: FakeProlific) -> None:
    with pytest.raises(ProlificError, match="reward") as refused:
        _client(prolific).study_create({key: value for key, value in DRAFT.items() if key != "reward"})
    assert refused.value.status == 400


def test_it_reads_every_submission_page_by_page(prolific: FakeProlific) -> None:
    client = _client(prolific)
    study = client.study_create(DRAFT)
    made = {prolific.submit(study["id"], participant_id=f"{i:024x}") for i in range(PAGE_SIZE + 5)}
    assert {s["id"] for s in client.submissions(study["id"])} == made
    assert [r.query["page"] for r in prolific.requests if r.path == "/submissions/"] == [["1"], ["2"]]


def test_it_approves_and_rejects_only_with_a_category_and_a_long_enough_message(
    prolific: FakeProlific,
) -> None:
    client = _client(prolific)
    study = client.study_create(DRAFT)
    first, second = (prolific.submit(study["id"], participant_id=f"{i:024x}") for i in range(2))
    assert client.submission_transition(first, "APPROVE")["status"] == "APPROVED"
    assert client.submission_transition(first, "APPROVE")["status"] == "APPROVED"  # repeating changes nothing
    with pytest.raises(ProlificError, match="message"):
        client.submission_transition(second, "REJECT", message="no", rejection_category="LOW_EFFORT")
    long = "The answers were given without reading the procedures: every item took under two seconds. " * 2
    rejected = client.submission_transition(second, "REJECT", message=long, rejection_category="LOW_EFFORT")
    assert rejected["status"] == "REJECTED"
    assert prolific.requests[-1].body == {
        "action": "REJECT",
        "message": long,
        "rejection_category": "LOW_EFFORT",
    }


def test_it_retries_429_500_and_timeouts_with_back_off_and_records_each(prolific: FakeProlific) -> None:
    waits: list[float] = []
    client = _client(prolific, waits)
    prolific.script(Trouble(429, retry_after="1.5"), Trouble(500), Trouble(503))
    study = client.study_create(DRAFT)
    assert study["status"] == "UNPUBLISHED" and len(prolific.state.studies) == 1
    assert waits == [1.5, 1.0, 2.0]  # Retry-After when given, else 0.5 s x 2^attempt
    assert [(r.status, r.waited) for r in client.retries] == [(429, 1.5), (500, 1.0), (503, 2.0)]
    prolific.script(*[Trouble(500)] * (RETRIES + 1))
    with pytest.raises(ProlificError, match="500"):
        client.study(study["id"])


def test_a_timeout_is_retried(prolific: FakeProlific, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("annotation.prolific.client.TIMEOUT_SECONDS", 0.2)
    client = _client(prolific)
    prolific.script(Trouble(hang=0.5))
    assert client.study_create(DRAFT)["status"] == "UNPUBLISHED"
    assert [r.status for r in client.retries] == [None]


def test_bonuses_are_set_up_then_paid_and_a_failed_pay_is_never_sent_again(prolific: FakeProlific) -> None:
    client = _client(prolific)
    study = client.study_create(DRAFT)
    pids = [f"{i:024x}" for i in range(3)]
    for pid in pids:
        prolific.submit(study["id"], participant_id=pid)
    batch = client.bonus_setup(study["id"], {pid: "0.50" for pid in pids})
    assert batch["amount"] == 150 and not prolific.paid  # set up, not paid
    with pytest.raises(ProlificError, match="not participants"):
        client.bonus_setup(study["id"], {"f" * 24: "1.00"})
    prolific.script(Trouble(500))
    with pytest.raises(PaymentUnknown):
        client.bonus_pay(batch["id"])
    pays = [r for r in prolific.requests if r.path.endswith("/pay/")]
    assert len(pays) == 1 and not client.retries  # sent once, never retried
    client.bonus_pay(batch["id"])
    assert prolific.paid == {pid: 1 for pid in pids} and prolific.state.paid_amounts[pids[0]] == 50


def test_a_wrong_token_is_refused_and_the_token_never_shows(prolific: FakeProlific, settings: Any) -> None:
    client = ProlificClient(base_url=prolific.base_url, token="wrong-token", sleep=lambda s: None)
    with pytest.raises(ProlificError, match="401") as refused:
        client.study_create(DRAFT)
    assert "wrong-token" not in str(refused.value) and "wrong-token" not in repr(client)
    settings.PROLIFIC_API_TOKEN = ""
    with pytest.raises(ImproperlyConfigured, match="PROLIFIC_API_TOKEN is not set"):
        ProlificClient(base_url=prolific.base_url)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
ANSWERS = [
    prolific_api.STUDY,
    prolific_api.SUBMISSIONS,
    prolific_api.TRANSITIONED,
    prolific_api.RETURN_REQUESTED,
    prolific_api.BONUS_BATCH,
]


def _response(status: int, body: bytes) -> requests.Response:
    answer = requests.Response()
    answer.status_code, answer._content = status, body
    answer.headers["Content-Type"] = "application/json"
    return answer


@fuzz_settings(300)
@given(
    body=JSON
    | st.fixed_dictionaries({"id": st.text(max_size=600), "status": JSON})
    | st.fixed_dictionaries(
        {"results": st.lists(st.dictionaries(st.sampled_from(["id", "participant_id", "status"]), JSON))}
    ),
    shape=st.sampled_from(ANSWERS),
)
def test_any_answer_is_either_the_documented_shape_or_an_answer_error(body: Any, shape: Any) -> None:
    """Whatever JSON Prolific answers, a caller gets a dict it may read as documented, or ProlificAnswerError
    (never a KeyError, TypeError or an id longer than a column); an error body of any JSON gives a message."""
    try:
        answer = prolific_api._answer("POST", "/x/", _response(200, json.dumps(body).encode()), shape)
    except ProlificAnswerError as odd:
        assert "Prolific answered" in str(odd) and len(str(odd)) < 600
    else:
        rows = answer["results"] if shape.listed else [answer]
        for row in rows:
            assert all(len(row[name]) == 24 for name in (shape.listed or shape).ids)
    message = prolific_api._error_text(_response(400, json.dumps(body).encode()))
    assert isinstance(message, str) and message
