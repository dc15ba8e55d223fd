"""A fake Prolific on 127.0.0.1 for the tests: real HTTP, the documented endpoints and payloads
(docs/prolific-api.md), state in memory, and scripted trouble. Every Prolific test talks to it; nothing in
the tests reaches the real service.

    with FakeProlific(token="t0k") as prolific:       # prolific.base_url -> "http://127.0.0.1:<port>/api/v1"
        prolific.script(Trouble(429, retry_after="0.01"), Trouble(500))   # the next two calls fail
        client = ProlificClient(base_url=prolific.base_url, token="t0k", sleep=lambda s: None)
        study = client.study_create({...})
        prolific.submit(study["id"], participant_id="...")              # a participant takes a place
        prolific.paid                                                   # bonuses paid, per participant

Serves: POST /studies/, GET /studies/{id}/, POST /studies/{id}/transition/ (the documented transition table;
400 for another), GET /submissions/?study=&page=&page_size=, POST /submissions/{id}/transition/ (APPROVE,
REJECT: a message of 100+ characters and a known category, COMPLETE), POST /submissions/bonus-payments/ (a
CSV of participant,amount in the major unit; 400 naming an id outside the study), POST
/bulk-bonus-payments/{id}/pay/ (pays again on every call, as Prolific does). Errors use Prolific's body:
{"error": {"status", "title", "detail"}}; a missing or wrong token is a 401. A draft whose
maximum_allowed_time is below 2 + 2·est + 2·√est minutes is refused (400), as Prolific documents.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import re
import secrets
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

TRANSITIONS = {
    ("UNPUBLISHED", "PUBLISH"): "ACTIVE",
    ("ACTIVE", "PAUSE"): "PAUSED",
    ("ACTIVE", "STOP"): "COMPLETED",
    ("PAUSED", "START"): "ACTIVE",
    ("PAUSED", "STOP"): "COMPLETED",
}
REJECTION_CATEGORIES = frozenset(
    {
        "TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK",
        "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER",
    }
)  # fmt: skip
REQUIRED_STUDY_FIELDS = (
    "name", "description", "external_study_url", "completion_codes", "total_available_places",
    "estimated_completion_time", "reward",
)  # fmt: skip


@dataclass(frozen=True)
class Trouble:
    """What the next call (to `path`, when given) gets instead of its answer: a status (429, 500, ...) with
    Prolific's error body, or with `body` (any JSON: a list, {}, an error whose "error" is a string, a study
    whose id is 500 characters) or `raw` (bytes as they are, e.g. an HTML page with content_type text/html);
    or, with `hang`, no answer for that many seconds (the client's timeout)."""

    status: int = 500
    retry_after: str | None = None
    hang: float = 0.0
    path: str = ""  # only for a call whose path ends so ("/pay/"); "" for the next call, whatever it is
    method: str = ""  # only for a call of this method ("GET", "POST"); "" for any
    body: Any = None  # the JSON answered instead of Prolific's error body (None: the error body)
    raw: bytes | None = None  # the bytes answered as they are
    content_type: str = "application/json"

    def matches(self, method: str, path: str) -> bool:
        return path.endswith(self.path) and self.method in ("", method)


HTML_PAGE = b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


@dataclass
class Received:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    authorization: str
    at: float


@dataclass
class State:
    studies: dict[str, dict[str, Any]] = field(default_factory=dict)
    submissions: dict[str, dict[str, Any]] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    paid: Counter[str] = field(default_factory=Counter)  # participant -> bonus payments made
    paid_amounts: Counter[str] = field(default_factory=Counter)  # participant -> total paid (minor units)


def _id() -> str:
    return secrets.token_hex(12)


class FakeProlific:
    def __init__(self, *, token: str = "test-token") -> None:
        self.token = token
        self.state = State()
        self.requests: list[Received] = []
        self._trouble: deque[Trouble] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/api/v1"

    @property
    def paid(self) -> Counter[str]:
        return self.state.paid

    def __enter__(self) -> FakeProlific:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def script(self, *trouble: Trouble) -> None:
        with self._lock:
            self._trouble.extend(trouble)

    def submit(self, study_id: str, *, participant_id: str, status: str = "AWAITING REVIEW") -> str:
        """A participant's submission to the study (what Prolific records when they finish); its id."""
        submission_id = _id()
        with self._lock:
            self.state.submissions[submission_id] = {
                "id": submission_id, "study_id": study_id, "participant_id": participant_id, "status": status,
                "started_at": "2026-11-27T10:00:00Z", "completed_at": "2026-11-27T10:12:00Z",
                "study_code": "", "return_requested": None,
            }  # fmt: skip
        return submission_id

    # --- the routes ---------------------------------------------------------------------------------

    def answer(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        routes = [
            ("POST", r"/studies/", self._study_create),
            ("GET", r"/studies/(?P<study>[^/]+)/", self._study_read),
            ("POST", r"/studies/(?P<study>[^/]+)/transition/", self._study_transition),
            ("GET", r"/submissions/", self._submissions),
            ("POST", r"/submissions/bonus-payments/", self._bonus_setup),
            ("POST", r"/submissions/(?P<submission>[^/]+)/transition/", self._submission_transition),
            ("POST", r"/submissions/(?P<submission>[^/]+)/request-return/", self._request_return),
            ("POST", r"/bulk-bonus-payments/(?P<batch>[^/]+)/pay/", self._bonus_pay),
        ]
        for verb, pattern, route in routes:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                with self._lock:
                    return route(body=body, query=query, **match.groupdict())
        return _error(404, "Not Found", f"no route {method} {path}")

    def _study_create(self, *, body: Any, query: Any) -> tuple[int, Any]:
        missing = [name for name in REQUIRED_STUDY_FIELDS if name not in (body or {})]
        if missing:
            return _error(400, "Bad Request", {name: ["This field is required."] for name in missing})
        if "maximum_allowed_time" in body:  # docs/prolific-api.md §2: at least 2 + 2·est + 2·√est minutes
            estimated = float(body["estimated_completion_time"])
            least = 2 + 2 * estimated + 2 * estimated**0.5
            if float(body["maximum_allowed_time"]) < least:
                detail = {"maximum_allowed_time": [f"Must be at least {least:.2f} minutes."]}
                return _error(400, "Bad Request", detail)
        study = {**body, "id": _id(), "status": "UNPUBLISHED", "places_taken": 0}
        self.state.studies[study["id"]] = study
        return 201, study

    def _study_read(self, *, study: str, body: Any, query: Any) -> tuple[int, Any]:
        if study not in self.state.studies:
            return _error(404, "Not Found", f"no study {study}")
        return 200, self.state.studies[study]

    def _study_transition(self, *, study: str, body: Any, query: Any) -> tuple[int, Any]:
        if study not in self.state.studies:
            return _error(404, "Not Found", f"no study {study}")
        row = self.state.studies[study]
        after = TRANSITIONS.get((row["status"], (body or {}).get("action")))
        if after is None:
            return _error(400, "Bad Request", f"cannot {body.get('action')} a study that is {row['status']}")
        row["status"] = after
        return 200, row

    def _submissions(self, *, body: Any, query: dict[str, list[str]]) -> tuple[int, Any]:
        study = query.get("study", [""])[0]
        if not study:
            return _error(400, "Bad Request", {"study": ["This field is required."]})
        page, size = int(query.get("page", ["1"])[0]), int(query.get("page_size", ["20"])[0])
        rows = [s for s in self.state.submissions.values() if s["study_id"] == study]
        return 200, {"results": rows[(page - 1) * size : page * size], "meta": {"count": len(rows)}}

    def _submission_transition(self, *, submission: str, body: Any, query: Any) -> tuple[int, Any]:
        row = self.state.submissions.get(submission)
        if row is None:
            return _error(404, "Not Found", f"no submission {submission}")
        action = (body or {}).get("action")
        if action == "REJECT":
            if len(body.get("message", "")) < 100:
                return _error(400, "Bad Request", {"message": ["At least 100 characters."]})
            if body.get("rejection_category") not in REJECTION_CATEGORIES:
                return _error(400, "Bad Request", {"rejection_category": ["Not a valid choice."]})
        status = {"APPROVE": "APPROVED", "REJECT": "REJECTED", "COMPLETE": "AWAITING REVIEW"}.get(
            action or ""
        )
        if status is None:
            return _error(400, "Bad Request", {"action": [f"{action!r} is not a valid choice."]})
        if row["status"] != "AWAITING REVIEW" and row["status"] != status:
            return _error(400, "Bad Request", f"the submission is {row['status']}")
        row["status"] = status
        return 200, row

    def _request_return(self, *, submission: str, body: Any, query: Any) -> tuple[int, Any]:
        """docs/prolific-api.md §5.1: `request_return_reasons` (a list of text); the status stays."""
        row = self.state.submissions.get(submission)
        if row is None:
            return _error(404, "Not Found", f"no submission {submission}")
        reasons = (body or {}).get("request_return_reasons")
        if not isinstance(reasons, list) or not reasons or not all(isinstance(r, str) and r for r in reasons):
            return _error(400, "Bad Request", {"request_return_reasons": ["A non-empty list of reasons."]})
        if row["status"] not in {"ACTIVE", "AWAITING REVIEW"}:
            return _error(400, "Bad Request", f"the submission is {row['status']}")
        row["return_requested"] = reasons
        fields = ("id", "status", "participant_id")
        return 200, {
            **{k: row[k] for k in fields},
            "participant": row["participant_id"],
            "return_requested": True,
        }

    def _bonus_setup(self, *, body: Any, query: Any) -> tuple[int, Any]:
        study = (body or {}).get("study_id", "")
        participants = {
            s["participant_id"] for s in self.state.submissions.values() if s["study_id"] == study
        }
        lines = [line.split(",") for line in (body or {}).get("csv_bonuses", "").strip().splitlines()]
        unknown = [pid for pid, _ in lines if pid not in participants]
        if study not in self.state.studies or unknown:
            return _error(400, "Bad Request", f"not participants of study {study}: {', '.join(unknown)}")
        amounts = {pid: int(Decimal(amount) * 100) for pid, amount in lines}
        batch = {"id": _id(), "study": study, "amount": sum(amounts.values()), "fees": 0, "vat": 0}
        self.state.batches[batch["id"]] = {**batch, "amounts": amounts}
        return 201, batch

    def _bonus_pay(self, *, batch: str, body: Any, query: Any) -> tuple[int, Any]:
        row = self.state.batches.get(batch)
        if row is None:
            return _error(404, "Not Found", f"no bonus batch {batch}")
        for participant, amount in row["amounts"].items():  # every call pays again, as Prolific's does
            self.state.paid[participant] += 1
            self.state.paid_amounts[participant] += amount
        return 202, {}


def _error(status: int, title: str, detail: Any) -> tuple[int, Any]:
    return status, {"error": {"status": status, "title": title, "detail": detail}}


def _handler(fake: FakeProlific) -> type[BaseHTTPRequestHandler]:
    counter = itertools.count()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _serve(self) -> None:
            next(counter)
            url = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            path = url.path.removeprefix("/api/v1")
            authorization = self.headers.get("Authorization", "")
            fake.requests.append(
                Received(self.command, path, parse_qs(url.query), body, authorization, time.monotonic())
            )
            with fake._lock:
                trouble = next((t for t in fake._trouble if t.matches(self.command, path)), None)
                if trouble is not None:
                    fake._trouble.remove(trouble)
            if trouble is not None:
                if trouble.hang:
                    time.sleep(trouble.hang)
                    return self._send(504, {"error": {"status": 504, "title": "late", "detail": ""}})
                headers = {"Retry-After": trouble.retry_after} if trouble.retry_after else {}
                if trouble.raw is not None:
                    return self._send_bytes(trouble.status, trouble.raw, trouble.content_type, headers)
                scripted = _error(trouble.status, "trouble", "scripted")[1]
                return self._send(trouble.status, scripted if trouble.body is None else trouble.body, headers)
            if authorization != f"Token {fake.token}":
                return self._send(*_error(401, "Unauthorized", "Invalid token."))
            self._send(*fake.answer(self.command, path, parse_qs(url.query), body))

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            self._send_bytes(status, json.dumps(body).encode(), "application/json", headers)

        def _send_bytes(
            self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve

    return Handler


def signed_event(
    payload: dict[str, Any], *, secret: str, event_id: str, timestamp: int | str | None = None
) -> tuple[bytes, dict[str, str]]:
    """A webhook delivery as Prolific makes it (docs/prolific-api.md §7): the body and its headers, the
    signature base64(HMAC-SHA256(secret, timestamp + body))."""
    return signed_body(json.dumps(payload).encode(), secret=secret, event_id=event_id, timestamp=timestamp)


def signed_body(
    body: bytes, *, secret: str, event_id: str, timestamp: int | str | None = None
) -> tuple[bytes, dict[str, str]]:
    """signed_event for a body given as bytes (one json.dumps cannot write: nested 100,000 deep), signed with
    any timestamp text (5,000 digits)."""
    stamp = str(int(time.time())) if timestamp is None else str(timestamp)
    digest = hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest()
    headers = {
        "X-Prolific-Request-Signature": base64.b64encode(digest).decode(),
        "X-Prolific-Request-Timestamp": stamp,
        "X-Event-ID": event_id,
        "X-Timestamp": stamp,
    }
    return body, headers
