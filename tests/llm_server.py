"""A loopback OpenAI-compatible server for tests and benchmarks: real HTTP on 127.0.0.1, scripted answers.

    with LoopbackLLM(latency=0.5) as server:          # server.base_url -> "http://127.0.0.1:<port>/v1"
        server.script(Fail(429, retry_after="1"), Reply(fenced(judge_json())))
        config = BackendConfig(backend="openai", model="m", base_url=server.base_url)
        OpenAICompatibleBackend(config).run(requests, on_result)
        ...
        server.requests[0].body["response_format"]   # what the client sent

Each request takes the next scripted action from the queue; when the queue is empty the default responder
(a callable taking the parsed request body, returning the completion text) answers after `latency` seconds.
Serves `POST /v1/chat/completions`, `POST /v1/completions`, `GET /v1/models` and `GET /stats` (count, peak
in-flight, arrival times), concurrently (one thread per connection). Also a CLI for the benchmark and manual
use: `python -m tests.llm_server --port 8099 --latency 0.5`.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], str]


# --- completion texts judges and generators produce, good and bad --------------------------------------


def judge_json(
    failures: list[dict[str, Any]] | None = None, reasoning: str = "The steps cover the goal."
) -> str:
    """A well-formed judge answer (no critical failures by default)."""
    return json.dumps({"reasoning": reasoning, "critical_failures": failures or []})


def failure(
    text: str = "Skips preheating.", l1: list[int] | None = None, l2: list[int] | None = None
) -> dict:
    return {
        "failure": text,
        "L1_steps": l1 if l1 is not None else [1],
        "L2_steps": l2 if l2 is not None else [2],
    }


def fenced(text: str) -> str:
    """The answer wrapped in a ```json code fence, as chat models like to do."""
    return f"```json\n{text}\n```"


def in_prose(text: str) -> str:
    """The JSON object surrounded by prose."""
    return f"Here is my assessment of the steps.\n{text}\nLet me know if you need more detail."


MALFORMED_JSON = '{"reasoning": "cut off here, "critical_failures": [{"failure": '
MISSING_CRITICAL_FAILURES = json.dumps({"reasoning": "Looks fine."})
OUT_OF_RANGE_STEPS = judge_json([failure("Refers to a step that does not exist.", l1=[99], l2=[0])])


def default_responder(body: dict[str, Any]) -> str:
    """A valid judge answer for any request (what the throughput benchmark wants)."""
    return judge_json()


def realistic_judge_responder(body: dict[str, Any]) -> str:
    """A judge answer of realistic size: ~120 words of reasoning, one critical failure for a third of the
    prompts (chosen by the prompt's length, so the same prompt gets the same verdict)."""
    prompt = body.get("prompt") or " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    reasoning = " ".join(["The predicted steps follow the reference closely and cover the goal."] * 12)
    failures = [failure("The predicted steps skip a step the goal cannot be reached without.")]
    return judge_json(failures if len(prompt) % 3 == 0 else [], reasoning=reasoning)


# --- scripted actions ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """Answer 200 with this completion text (after `latency`, or the server's latency when None)."""

    text: str
    latency: float | None = None
    usage: dict[str, int] | None = None


@dataclass(frozen=True)
class Fail:
    """Answer with an HTTP error, e.g. Fail(429, retry_after="2"), Fail(503), Fail(400)."""

    status: int
    retry_after: str | None = None  # Retry-After header: seconds or an HTTP date
    retry_after_ms: str | None = None  # retry-after-ms header (OpenAI)
    message: str = "scripted failure"


@dataclass(frozen=True)
class Hang:
    """Hold the request this long before answering (past the client's timeout)."""

    seconds: float
    then: Reply | None = None


@dataclass(frozen=True)
class Drop:
    """Close the connection without any response."""


Action = Reply | Fail | Hang | Drop


@dataclass
class RecordedRequest:
    method: str
    path: str
    body: dict[str, Any]
    headers: dict[str, str]  # names in lower case
    received_at: float  # time.monotonic()
    finished_at: float | None = None
    action: str = "default"


@dataclass
class LoopbackLLM:
    """The server. Use as a context manager (or start()/stop()); `base_url` ends in /v1."""

    responder: Responder = default_responder
    latency: float = 0.0
    port: int = 0
    models: tuple[str, ...] = ("loopback-model",)
    requests: list[RecordedRequest] = field(default_factory=list)
    max_in_flight: int = 0
    _queue: deque[Action] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _in_flight: int = 0
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # -- lifecycle --
    def start(self) -> LoopbackLLM:
        self._server = _Server(("127.0.0.1", self.port), _Handler)
        self._server.llm = self
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="loopback-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> LoopbackLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting --
    def script(self, *actions: Action) -> None:
        """Queue actions: each request takes the next one; the default responder answers once it is empty."""
        with self._lock:
            self._queue.extend(actions)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.max_in_flight = 0

    @property
    def completion_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST"]

    def _begin(self, record: RecordedRequest) -> Action | None:
        with self._lock:
            self.requests.append(record)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            return self._queue.popleft() if self._queue else None

    def _end(self, record: RecordedRequest) -> None:
        with self._lock:
            self._in_flight -= 1
            record.finished_at = time.monotonic()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    llm: LoopbackLLM


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        llm = self.server.llm
        if self.path.rstrip("/") == "/v1/models":
            data = [{"id": m, "object": "model", "owned_by": "loopback"} for m in llm.models]
            self._send_json(200, {"object": "list", "data": data})
        elif self.path.rstrip("/") == "/stats":  # for a client in another process (the benchmark)
            with llm._lock:
                received = [r.received_at for r in llm.completion_requests]
                stats = {"count": len(received), "max_in_flight": llm.max_in_flight, "received_at": received}
            self._send_json(200, stats)
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.rstrip("/")
        if path not in ("/v1/chat/completions", "/v1/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        llm = self.server.llm
        headers = {name.lower(): value for name, value in self.headers.items()}
        record = RecordedRequest("POST", path, body, headers, time.monotonic())
        action = llm._begin(record)
        record.action = type(action).__name__ if action else "default"
        try:
            self._perform(action, path, body)
        finally:
            llm._end(record)

    def _perform(self, action: Action | None, path: str, body: dict[str, Any]) -> None:
        llm = self.server.llm
        if isinstance(action, Drop):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if isinstance(action, Fail):
            headers = {}
            if action.retry_after is not None:
                headers["Retry-After"] = action.retry_after
            if action.retry_after_ms is not None:
                headers["retry-after-ms"] = action.retry_after_ms
            error = {"message": action.message, "type": "scripted", "code": action.status}
            self._send_json(action.status, {"error": error}, headers)
            return
        if isinstance(action, Hang):
            time.sleep(action.seconds)
            action = action.then
            if action is None:
                self.close_connection = True
                return
        if isinstance(action, Reply):
            text, latency, usage = action.text, action.latency, action.usage
        else:
            text, latency, usage = llm.responder(body), None, None
        time.sleep(llm.latency if latency is None else latency)
        self._send_completion(path, body, text, usage)

    def _send_completion(
        self, path: str, body: dict[str, Any], text: str, usage: dict[str, int] | None
    ) -> None:
        prompt = body.get("prompt") or " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        usage = usage or {
            "prompt_tokens": max(1, len(str(prompt)) // 4),
            "completion_tokens": max(1, len(text) // 4),
        }
        usage = {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}
        common = {
            "id": "cmpl-loopback",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "usage": usage,
        }
        if path.endswith("/chat/completions"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            payload = {**common, "object": "chat.completion", "choices": [choice]}
        else:
            choice = {"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}
            payload = {**common, "object": "text_completion", "choices": [choice]}
        self._send_json(200, payload)

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout): nothing to do
            self.close_connection = True


def main() -> None:
    parser = argparse.ArgumentParser(description="Loopback OpenAI-compatible server (valid judge JSON).")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = a free one)")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds before each answer")
    parser.add_argument(
        "--realistic", action="store_true", help="longer answers, a critical failure for a third of them"
    )
    args = parser.parse_args()
    responder = realistic_judge_responder if args.realistic else default_responder
    server = LoopbackLLM(responder=responder, latency=args.latency, port=args.port).start()
    print(f"loopback LLM at {server.base_url} (latency {args.latency}s); Ctrl-C to stop", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
