"""RewardClient (clients/h2e-reward) against the studio's reward service over loopback HTTP: answers in
order, batches split at the client's size, the service's refusals named, failures and timeouts raised."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from h2e_reward import RewardClient, RewardRequestError, RewardServiceError
from h2e_reward.client import describe, service_url

from judging.training.models import RewardCall
from tests.factories import make_procedure
from tests.reward_client.conftest import FAILS, GARBLED, GOAL, STEPS, Studio, numbered
from tests.reward_client.trainers import run_coroutine
from tests.reward_world import trainer

INLINE = {"goal": GOAL, "resources": ["new pot"], "steps": STEPS}


def client(studio: Studio, **options: Any) -> RewardClient:
    return RewardClient(studio.url, studio.token, reward=studio.reward, **options)


def test_it_answers_each_item_in_order_with_its_components(studio: Studio) -> None:
    procedure = make_procedure(goal=GOAL, steps=STEPS)
    answers = client(studio, run="client-run").score(
        [
            {"procedure_id": procedure.pk, "completion": numbered(STEPS), "step": 3, "group": "g-1"},
            {"procedure": INLINE, "completion": numbered(STEPS, marker=FAILS), "step": 3, "group": "g-1"},
            {"procedure": INLINE, "completion": "- Water it\n- Repot it", "step": 3, "group": "g-1"},
            {"procedure": INLINE, "completion": numbered(STEPS, marker=GARBLED), "step": 3, "group": "g-1"},
        ]
    )
    assert [a["how2score"] for a in answers] == [1, 0, 1, None]
    assert [a["format"] for a in answers] == [1, 1, 0, 1]
    assert answers[0]["length"] == 1.0 and answers[0]["total"] == 3.0
    assert answers[3]["total"] is None and answers[3]["how2score_reason"]
    calls = RewardCall.objects.filter(run__name="client-run")
    assert sorted(calls.values_list("step", flat=True)) == [3, 3, 3, 3]


def test_it_asks_only_for_the_components_named(studio: Studio) -> None:
    answers = client(studio).score(
        [{"procedure": INLINE, "completion": numbered(STEPS)}], components=["format"]
    )
    assert answers[0]["format"] == 1
    assert answers[0]["how2score"] is None and answers[0]["length"] is None
    assert studio.judge.requests == []  # no judge call for the format alone


def test_it_splits_a_long_list_into_requests_of_its_batch_size(studio: Studio) -> None:
    items = [{"procedure": INLINE, "completion": numbered(STEPS), "group": f"g-{i}"} for i in range(7)]
    answers = client(studio, batch_size=3, run="chunked").score(items, components=["format", "length"])
    assert len(answers) == 7 and all(a["format"] == 1 for a in answers)
    assert studio.batches == [3, 3, 1]
    assert RewardCall.objects.filter(run__name="chunked").count() == 7


def test_a_refusal_names_the_item_in_the_callers_whole_list(studio: Studio) -> None:
    items = [{"procedure": INLINE, "completion": "1. ok"} for _ in range(7)]
    items[5]["completion"] = "x" * 40_000
    with pytest.raises(RewardRequestError) as refused:
        client(studio, batch_size=2).score(items, components=["format"])
    assert refused.value.status == 400
    assert "items.5.completion" in str(refused.value)
    assert "32000" in str(refused.value)


def test_a_bad_token_or_a_missing_permission_is_refused_with_what_to_check(studio: Studio) -> None:
    item = [{"procedure": INLINE, "completion": "1. ok"}]
    with pytest.raises(RewardRequestError, match=r"\(401\).*H2E_REWARD_TOKEN"):
        RewardClient(studio.url, "not-a-token").score(item)
    _, token = trainer(permitted=False)
    with pytest.raises(RewardRequestError, match=r"\(403\).*judging\.request_reward"):
        RewardClient(studio.url, token).score(item)


def test_an_unknown_reward_config_is_named(studio: Studio) -> None:
    with pytest.raises(RewardRequestError, match="reward") as refused:
        RewardClient(studio.url, studio.token, reward="no-such-reward").score(
            [{"procedure": INLINE, "completion": "1. ok"}]
        )
    assert refused.value.status == 400 and "no-such-reward" in str(refused.value)


def test_the_async_form_answers_the_same(studio: Studio) -> None:
    items = [{"procedure": INLINE, "completion": numbered(STEPS)}]
    assert run_coroutine(client(studio).ascore(items, ["format"]))[0]["format"] == 1


def test_it_reads_its_configuration_from_the_environment(reward_env: Studio) -> None:
    made = RewardClient()
    assert (made.url, made.token, made.reward) == (reward_env.url, reward_env.token, "loopback")
    assert made.endpoint == reward_env.url + "/api/reward/"
    assert made.score([{"procedure": INLINE, "completion": numbered(STEPS)}], ["format"])[0]["format"] == 1


def test_it_refuses_a_missing_url_a_bad_batch_size_and_unknown_components(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("H2E_REWARD_URL", raising=False)
    with pytest.raises(ValueError, match="H2E_REWARD_URL"):
        RewardClient()
    with pytest.raises(ValueError, match=r"1\.\.1024"):
        RewardClient("http://127.0.0.1:1", batch_size=1025)
    with pytest.raises(ValueError, match="subset"):
        RewardClient("http://127.0.0.1:1").score([{"completion": ""}], components=["style"])


def test_it_builds_the_endpoint_from_a_base_url_or_the_endpoint() -> None:
    assert service_url("https://studio.example.org") == "https://studio.example.org/api/reward/"
    assert service_url("https://studio.example.org/") == "https://studio.example.org/api/reward/"
    assert service_url("https://h/api/reward") == "https://h/api/reward/"
    assert describe({"items": {"3": {"completion": ["Too long."]}}}) == "items.3.completion: Too long."
    assert describe({"detail": "Invalid token."}) == "Invalid token."


# --- what the studio cannot show: a service that is down, slow or behind a failing proxy ---------------


@pytest.fixture
def scripted() -> Iterator[tuple[str, list[int]]]:
    """A loopback HTTP server answering 503 to its first two POSTs, then a contract-shaped 200."""
    seen: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(len(body["items"]))
            status = 503 if len(seen) <= 2 else 200
            data = json.dumps(
                {"items": [{"total": 1.0}] * len(body["items"])} if status == 200 else {}
            ).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_it_tries_a_503_again_and_gives_up_after_its_retries(scripted: tuple[str, list[int]]) -> None:
    url, seen = scripted
    assert RewardClient(url, backoff=0.01, retries=2).score([{"completion": "x"}]) == [{"total": 1.0}]
    assert seen == [1, 1, 1]
    seen.clear()
    with pytest.raises(RewardServiceError, match=r"failed \(503\)"):
        RewardClient(url, backoff=0.01, retries=1).score([{"completion": "x"}])


def test_a_service_that_does_not_answer_in_time_or_at_all_is_named() -> None:
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(RewardServiceError, match=r"did not answer within 0\.3 s"):
            RewardClient(url, timeout=0.3).score([{"completion": "x"}])
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(RewardServiceError, match="unreachable"):
        RewardClient(f"http://127.0.0.1:{port}", retries=1, backoff=0.01).score([{"completion": "x"}])


def test_a_request_without_a_token_is_refused(studio: Studio, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("H2E_REWARD_TOKEN", raising=False)
    with pytest.raises(RewardRequestError) as refused:
        RewardClient(studio.url).score([{"procedure": INLINE, "completion": "1. ok"}])
    assert refused.value.status == 401
