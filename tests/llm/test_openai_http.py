"""The OpenAI-compatible backend against a real HTTP server on 127.0.0.1 (tests/llm_server.py)."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import replace
from email.utils import formatdate

import pytest
from django.core.exceptions import ImproperlyConfigured

from h2e_site.llm.backends import backend_from_config
from h2e_site.llm.base import BackendConfig, LLMRequest, LLMResult
from h2e_site.llm.openai_http import OpenAICompatibleBackend
from tests.llm_server import Drop, Fail, Hang, LoopbackLLM, Reply, fenced, judge_json

SCHEMA = {"type": "object", "properties": {"reasoning": {"type": "string"}}, "required": ["reasoning"]}


def make_backend(server: LoopbackLLM, **overrides: object) -> OpenAICompatibleBackend:
    config = BackendConfig(
        backend="openai", model="judge-model", base_url=server.base_url, request_timeout_s=5.0, max_attempts=4
    )
    backend = backend_from_config(replace(config, **overrides))  # type: ignore[arg-type]
    assert isinstance(backend, OpenAICompatibleBackend)
    backend.backoff_base_s = 0.05
    return backend


def requests(n: int, **fields: object) -> list[LLMRequest]:
    return [LLMRequest(key=f"k{i}", prompt=f"Judge example {i}", max_tokens=64, **fields) for i in range(n)]  # type: ignore[arg-type]


def run(backend: OpenAICompatibleBackend, reqs: list[LLMRequest], **kwargs: object) -> list[LLMResult]:
    results: list[LLMResult] = []
    backend.run(reqs, results.append, **kwargs)  # type: ignore[arg-type]
    return results


def test_it_returns_the_completion_text_and_usage(llm_server: LoopbackLLM) -> None:
    llm_server.script(Reply(fenced(judge_json()), usage={"prompt_tokens": 120, "completion_tokens": 30}))
    [result] = run(make_backend(llm_server), requests(1))
    assert result.ok and result.text == fenced(judge_json())
    assert (result.prompt_tokens, result.completion_tokens, result.attempts) == (120, 30, 1)
    body = llm_server.requests[0].body
    assert body["messages"] == [{"role": "user", "content": "Judge example 0"}]
    assert body["max_tokens"] == 64 and body["temperature"] == 0.0 and body["model"] == "judge-model"


def test_it_uses_the_completions_endpoint_in_generate_mode(llm_server: LoopbackLLM) -> None:
    [result] = run(make_backend(llm_server, mode="generate"), requests(1, stop=("\n\n",)))
    assert result.ok
    request = llm_server.requests[0]
    assert request.path == "/v1/completions"
    assert request.body["prompt"] == "Judge example 0" and request.body["stop"] == ["\n\n"]


def test_it_honours_retry_after_on_429(llm_server: LoopbackLLM) -> None:
    llm_server.script(Fail(429, retry_after="1"))
    [result] = run(make_backend(llm_server), requests(1))
    assert result.ok and result.attempts == 2
    first, second = llm_server.requests
    assert second.received_at - first.received_at >= 1.0


def test_it_pauses_every_request_when_the_server_says_retry_after(llm_server: LoopbackLLM) -> None:
    llm_server.latency = 0.2
    llm_server.script(Fail(429, retry_after="1", message="rate limit"))
    results = run(make_backend(llm_server, max_concurrency=4), requests(8))
    assert all(r.ok for r in results)
    times = sorted(r.received_at for r in llm_server.requests)
    assert len(times) == 9
    assert all(t - times[0] >= 0.95 for t in times[4:])  # nothing new started during the pause


def test_it_honours_retry_after_as_an_http_date_and_in_milliseconds(llm_server: LoopbackLLM) -> None:
    llm_server.script(Fail(429, retry_after=formatdate(time.time() + 2, usegmt=True)))
    llm_server.script(Fail(503, retry_after_ms="700"))
    [result] = run(make_backend(llm_server), requests(1))
    assert result.ok and result.attempts == 3
    times = [r.received_at for r in llm_server.requests]
    assert times[1] - times[0] >= 0.9  # HTTP dates have whole seconds
    assert times[2] - times[1] >= 0.7


def test_it_retries_server_errors_then_succeeds(llm_server: LoopbackLLM) -> None:
    llm_server.script(Fail(500), Fail(503), Fail(502))
    [result] = run(make_backend(llm_server), requests(1))
    assert result.ok and result.attempts == 4
    assert len(llm_server.requests) == 4


def test_it_reports_a_transient_failure_after_max_attempts(llm_server: LoopbackLLM) -> None:
    llm_server.script(*[Fail(503)] * 3)
    [result] = run(make_backend(llm_server, max_attempts=3), requests(1))
    assert not result.ok and result.text is None
    assert result.transient and result.attempts == 3
    assert "3 attempts" in result.error and "503" in result.error
    assert len(llm_server.requests) == 3


def test_it_does_not_retry_a_bad_request(llm_server: LoopbackLLM) -> None:
    llm_server.script(Fail(400, message="context length exceeded"))
    [result] = run(make_backend(llm_server), requests(1))
    assert not result.ok and not result.transient and result.attempts == 1
    assert "400" in result.error and "context length exceeded" in result.error
    assert len(llm_server.requests) == 1


def test_it_retries_a_timeout(llm_server: LoopbackLLM) -> None:
    llm_server.script(Hang(2.0))
    started = time.monotonic()
    [result] = run(make_backend(llm_server, request_timeout_s=0.5), requests(1))
    assert result.ok and result.attempts == 2
    assert time.monotonic() - started < 2.0  # the client gave up on the hung request


def test_it_retries_a_dropped_connection(llm_server: LoopbackLLM) -> None:
    llm_server.script(Drop())
    [result] = run(make_backend(llm_server), requests(1))
    assert result.ok and result.attempts == 2


def test_it_keeps_at_most_max_concurrency_requests_in_flight(llm_server: LoopbackLLM) -> None:
    llm_server.latency = 0.2
    results = run(make_backend(llm_server, max_concurrency=4), requests(16))
    assert len(results) == 16 and all(r.ok for r in results)
    assert llm_server.max_in_flight == 4


def test_it_paces_requests_to_the_per_minute_limit(llm_server: LoopbackLLM) -> None:
    results = run(make_backend(llm_server, max_concurrency=8, max_requests_per_minute=120), requests(7))
    assert all(r.ok for r in results)
    times = sorted(r.received_at for r in llm_server.requests)
    assert times[-1] - times[0] >= 6 * 0.5 - 0.05  # 120/min = one every 0.5 s
    for earlier, later in itertools.pairwise(times):
        # sent 0.5 s apart; arrivals jitter on a loaded machine (one seen 0.36 s after the one before it,
        # under two test processes), while unpaced requests would arrive within milliseconds of each other
        assert later - earlier >= 0.25


def test_it_paces_tokens_to_the_per_minute_limit(llm_server: LoopbackLLM) -> None:
    llm_server.script(*[Reply("ok", usage={"prompt_tokens": 20, "completion_tokens": 80})] * 3)
    backend = make_backend(llm_server, max_concurrency=4, max_tokens_per_minute=6000)
    run(backend, [LLMRequest(key=str(i), prompt="x" * 80, max_tokens=80) for i in range(3)])
    times = sorted(r.received_at for r in llm_server.requests)
    assert times[2] - times[0] >= 2 * 1.0 - 0.05  # 100 tokens each at 6,000/min = 1 s apart


def test_it_sends_a_json_schema_to_openai_compatible_servers(llm_server: LoopbackLLM) -> None:
    run(make_backend(llm_server), requests(1, json_schema=SCHEMA))
    assert llm_server.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "judgment", "schema": SCHEMA, "strict": True},
    }


def test_it_sends_json_object_with_the_schema_to_llama_cpp(llm_server: LoopbackLLM) -> None:
    run(make_backend(llm_server, backend="local"), requests(1, json_schema=SCHEMA))
    assert llm_server.requests[0].body["response_format"] == {"type": "json_object", "schema": SCHEMA}


def test_it_sends_a_grammar_to_llama_cpp_and_vllm(llm_server: LoopbackLLM) -> None:
    grammar = 'root ::= "1. " [a-z]+'
    run(make_backend(llm_server, backend="local"), requests(1, grammar=grammar))
    run(make_backend(llm_server), requests(1, grammar=grammar))
    local, vllm = (r.body for r in llm_server.requests)
    assert local["grammar"] == grammar
    assert vllm["structured_outputs"] == {"grammar": grammar}


def test_it_refuses_a_grammar_for_the_openai_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    backend = backend_from_config(BackendConfig(backend="openai", model="gpt-5-mini"))
    with pytest.raises(ImproperlyConfigured, match="grammar"):
        backend.run(requests(1, grammar='root ::= "x"'), lambda result: None)


def test_it_passes_reasoning_effort_through(llm_server: LoopbackLLM) -> None:
    run(make_backend(llm_server, reasoning_effort="low"), requests(1))
    assert llm_server.requests[0].body["reasoning_effort"] == "low"


def test_it_needs_a_key_for_the_openai_api_but_not_for_local_servers(
    llm_server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("H2E_TEST_MISSING_KEY", raising=False)
    with pytest.raises(ImproperlyConfigured, match="H2E_TEST_MISSING_KEY"):
        backend_from_config(
            BackendConfig(backend="openai", model="gpt-5", api_key_env="H2E_TEST_MISSING_KEY")
        )
    [result] = run(make_backend(llm_server, api_key_env="H2E_TEST_MISSING_KEY"), requests(1))
    assert result.ok
    assert llm_server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_it_stops_starting_requests_once_asked_to(llm_server: LoopbackLLM) -> None:
    llm_server.latency = 0.1
    results: list[LLMResult] = []
    backend = make_backend(llm_server, max_concurrency=2)
    backend.run(requests(20), results.append, should_stop=lambda: len(results) >= 4)
    assert 4 <= len(results) <= 6  # the ones in flight when it stopped still finish
    assert len(llm_server.requests) == len(results)


def test_it_delivers_results_on_the_calling_thread(llm_server: LoopbackLLM) -> None:
    threads: set[int] = set()
    backend = make_backend(llm_server, max_concurrency=8)
    backend.run(requests(16), lambda result: threads.add(threading.get_ident()))
    assert threads == {threading.get_ident()}
