"""The studio's reward service on loopback HTTP (pytest-django's live_server) with a loopback judge, and a
trainer's token: what every test of the trainers' adapters (clients/h2e-reward) calls."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.llm_server import MALFORMED_JSON, LoopbackLLM, failure, judge_json
from tests.reward_world import trainer, write_reward_config

# Markers a completion carries to make the loopback judge answer a critical failure, or unreadable JSON.
# The steps are long enough that a marker leaves the gen/ref ratio inside the length reward's band (1 +- 0.2).
FAILS = "NOPOT"
GARBLED = "JUNKJSON"
STEPS = [
    "Water the plant a day before so that the root ball slides out of the old pot easily",
    "Tip the pot on its side and ease the plant out while holding it by the base of its stems",
    "Set the plant in the new pot at the same depth as before and fill around it with fresh soil",
]
GOAL = "Repot a houseplant"


def judge_by_marker(body: dict[str, Any]) -> str:
    prompt = body.get("prompt") or " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    if GARBLED in prompt:
        return MALFORMED_JSON
    return judge_json([failure("Leaves the plant without a pot.")] if FAILS in prompt else [])


def numbered(steps: list[str], *, marker: str = "") -> str:
    """A completion that passes the format verifier, the reference's length (ratio ~1) unless padded."""
    return "\n".join(
        f"{i}. {step}{(' ' + marker) if marker and i == 1 else ''}" for i, step in enumerate(steps, 1)
    )


def ground_truth(procedure_id: int | None = None) -> str:
    """The How2Train export's ground truth (a JSON string)."""
    return json.dumps({"procedure_id": procedure_id, "goal": GOAL, "resources": ["new pot"], "steps": STEPS})


@dataclass(frozen=True)
class Studio:
    url: str  # the counting proxy in front of the live server
    token: str
    reward: str
    judge: LoopbackLLM
    batches: list[int] = field(default_factory=list)  # the items of each request the service received


@contextmanager
def counting_proxy(target: str, batches: list[int]) -> Iterator[str]:
    """A loopback HTTP proxy to the live server that records how many items each POST carried: how the
    tests see how many requests an adapter made."""

    class Proxy(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                batches.append(len(json.loads(body).get("items") or []))
            except (ValueError, AttributeError):
                batches.append(-1)
            headers = {
                k: v for k, v in self.headers.items() if k.lower() in {"authorization", "content-type"}
            }
            request = urllib.request.Request(target + self.path, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    status, answer = response.status, response.read()
            except urllib.error.HTTPError as error:
                status, answer = error.code, error.read()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def judge() -> Iterator[LoopbackLLM]:
    with LoopbackLLM(responder=judge_by_marker) as server:
        yield server


@pytest.fixture
def studio(live_server: Any, judge: LoopbackLLM, tmp_path: Path, settings: Any) -> Iterator[Studio]:
    """The live studio (behind a counting proxy), a reward config `loopback` whose judge is the loopback
    judge, a trainer's token."""
    directory = tmp_path / "rewards"
    write_reward_config(
        directory,
        "loopback",
        base_urls=[judge.base_url],
        weights={"how2score": 1.0, "format": 1.0, "length": 1.0},
        length={"tau": 0.2, "alpha": 5.0, "tokenizer": "o200k_base"},
        answer_after="</think>",
    )
    settings.H2E_REWARD_CONFIG_DIR = str(directory)
    _, token = trainer()
    batches: list[int] = []
    with counting_proxy(live_server.url, batches) as url:
        yield Studio(url=url, token=token, reward="loopback", judge=judge, batches=batches)


@pytest.fixture
def reward_env(studio: Studio, monkeypatch: pytest.MonkeyPatch) -> Studio:
    """The client's environment on a training machine, pointing at the studio."""
    monkeypatch.setenv("H2E_REWARD_URL", studio.url)
    monkeypatch.setenv("H2E_REWARD_TOKEN", studio.token)
    monkeypatch.setenv("H2E_REWARD_CONFIG", studio.reward)
    monkeypatch.delenv("H2E_RUN", raising=False)
    return studio
