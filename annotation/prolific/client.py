"""A client of Prolific's researcher API (docs/prolific-api.md says which endpoints, payloads and rules, with
their sources): studies (create a draft, publish, pause, resume, stop), their submissions (listed page by
page; approve, reject, complete), and bonuses in Prolific's two steps (set up, then pay).

- The token: `PROLIFIC_API_TOKEN` in the environment (settings.PROLIFIC_API_TOKEN), sent as
  `Authorization: Token <token>`; never stored in the database, never logged, never in a message or a
  repr (a ProlificError carries the method, path, status and Prolific's error, not the headers).
- Retries: a 429, a 5xx or a connection error / timeout is retried up to RETRIES times with exponential
  back-off (BACKOFF_SECONDS x 2^attempt, or the response's Retry-After when it gives one, at most
  MAX_WAIT_SECONDS); each wait is recorded in `client.retries` (what a page shows: "Prolific answered 429,
  retried after 1.0 s"). **Paying a bonus is never retried**: Prolific pays again on each call, so a
  failed or timed-out pay is reported as unknown and reconciled by reading the submission, never re-sent.
- A total time budget: a client made for a page (`ProlificClient.for_page()`) gives all its calls together
  PAGE_BUDGET_SECONDS, retries and waits included (each request's timeout is what is left of it): a hanging
  Prolific costs a page at most that, well under gunicorn's 30 s worker timeout. A job's client has none.
- Errors: any other 4xx, or a 5xx after the retries, raises ProlificError naming the call and Prolific's
  error (its body {"error": {"status", "title", "detail", ...}}, `detail` a string, a list or a field map;
  anything else is quoted as it came).
- Answers: every answer the studio reads is checked here, once, against the shape docs/prolific-api.md states
  for the call (an `Answer`: a JSON object, Prolific ids of 24 hexadecimal characters, statuses Prolific
  has); one that is not raises ProlificAnswerError quoting what Prolific answered, before any caller stores
  anything of it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from annotation.base.prolific_ids import STUDY_STATUSES, SUBMISSION_STATUSES, normalised_status

RETRIES = 4
BACKOFF_SECONDS = 0.5
MAX_WAIT_SECONDS = 30.0
TIMEOUT_SECONDS = 20.0
PAGE_BUDGET_SECONDS = 12.0  # all of a page's calls together: well under gunicorn's 30 s worker timeout
PAGE_SIZE = 100
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
QUOTED_CHARACTERS = 120  # of an answer a message quotes

# Study transitions (docs/prolific-api.md §3): which may start from which status is Prolific's to check.
STUDY_ACTIONS = ("PUBLISH", "PAUSE", "START", "STOP")

# What docs/prolific-api.md says Prolific answers. Ids: 24 hexadecimal characters (its conventions).
PROLIFIC_ID = re.compile(r"[0-9a-fA-F]{24}", re.ASCII)


class ProlificError(Exception):
    """A call Prolific refused or that failed after its retries."""

    def __init__(self, method: str, path: str, status: int | None, message: str) -> None:
        self.method, self.path, self.status = method, path, status
        where = f"{method} {path}"
        super().__init__(f"Prolific {where}: {status or 'no answer'}: {message}")


class PaymentUnknown(ProlificError):
    """A bonus pay call that did not answer: it may have paid. Never sent again; read the submissions."""


class ProlificAnswerError(ProlificError):
    """Prolific answered, but not in the shape docs/prolific-api.md states for the call (not JSON, or JSON
    without what the studio reads): nothing of the answer is used."""


@dataclass(frozen=True)
class Answer:
    """The shape of a call's answer the studio reads (docs/prolific-api.md `section`): a JSON object whose
    `ids` are Prolific ids and whose `status` (when named) is one of `statuses`; `listed`: the object holds
    a list `results` of answers of that shape instead."""

    what: str
    section: str
    ids: tuple[str, ...] = ()
    statuses: frozenset[str] = frozenset()
    listed: Answer | None = None

    def problem(self, body: Any) -> str:
        """What in `body` is not this shape ("" when nothing)."""
        if not isinstance(body, dict):
            return f"a JSON {type(body).__name__}, not an object"
        if self.listed is not None:
            results = body.get("results")
            if not isinstance(results, list):
                return "no list 'results'"
            for n, row in enumerate(results):
                if problem := self.listed.problem(row):
                    return f"results[{n}]: {problem}"
            return ""
        for name in self.ids:
            value = body.get(name)
            if not isinstance(value, str) or not PROLIFIC_ID.fullmatch(value):
                return f"{name!r} is {_quoted(value)}, not a Prolific id (24 hexadecimal characters)"
        if self.statuses:
            status = body.get("status")
            if not isinstance(status, str) or normalised_status(status) not in self.statuses:
                return f"'status' is {_quoted(status)}, not one of Prolific's"
        return ""


STUDY = Answer("a study", "§2-3", ids=("id",), statuses=STUDY_STATUSES)
SUBMISSION = Answer("a submission", "§4-5", ids=("id", "participant_id"), statuses=SUBMISSION_STATUSES)
SUBMISSIONS = Answer("a page of submissions", "§4.1", listed=SUBMISSION)
TRANSITIONED = Answer("a reviewed submission", "§5.1", ids=("id",), statuses=SUBMISSION_STATUSES)
RETURN_REQUESTED = Answer("a return request", "§5.1", ids=("id",))
BONUS_BATCH = Answer("a bonus batch", "§6", ids=("id",))


def _quoted(value: Any, limit: int = QUOTED_CHARACTERS) -> str:
    """A value as a message quotes it: its JSON, cut to `limit` characters ("... (n characters)")."""
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    length = len(value) if isinstance(value, str) else len(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({length} characters)"


@dataclass(frozen=True)
class Retry:
    method: str
    path: str
    status: int | None  # None: no answer (a timeout or a connection error)
    waited: float


def retries_note(retries: list[Retry]) -> str:
    """What a page says of the calls Prolific made us retry: "" when none."""
    if not retries:
        return ""
    waits = "; ".join(
        f"{r.method} {r.path}: {r.status or 'no answer'}, retried after {r.waited:g} s" for r in retries
    )
    return f"Prolific asked us to retry {len(retries)} time(s) ({waits})."


@dataclass
class ProlificClient:
    base_url: str = ""
    token: str = field(default="", repr=False)
    sleep: Callable[[float], None] = time.sleep
    retries: list[Retry] = field(default_factory=list)
    budget: float | None = None  # seconds all calls of this client may take together (None: no limit)

    def __post_init__(self) -> None:
        self.base_url = (self.base_url or settings.PROLIFIC_API_URL).rstrip("/")
        self.token = self.token or settings.PROLIFIC_API_TOKEN
        if not self.token:
            raise ImproperlyConfigured(token_missing())
        self._session = requests.Session()
        self._deadline = time.monotonic() + self.budget if self.budget is not None else None

    @classmethod
    def for_page(cls, **kwargs: Any) -> ProlificClient:
        """A client whose calls together take at most PAGE_BUDGET_SECONDS (a page's)."""
        return cls(budget=PAGE_BUDGET_SECONDS, **kwargs)

    # --- studies ------------------------------------------------------------------------------------

    def study_create(self, draft: dict[str, Any]) -> dict[str, Any]:
        """A draft study (UNPUBLISHED) from its payload (docs/prolific-api.md §2)."""
        return self._call("POST", "/studies/", STUDY, json=draft)

    def study(self, study_id: str) -> dict[str, Any]:
        return self._call("GET", f"/studies/{study_id}/", STUDY)

    def study_transition(self, study_id: str, action: str) -> dict[str, Any]:
        """PUBLISH, PAUSE, START (resume) or STOP."""
        if action not in STUDY_ACTIONS:
            raise ValueError(f"action: expected one of {', '.join(STUDY_ACTIONS)}, got {action!r}")
        return self._call("POST", f"/studies/{study_id}/transition/", STUDY, json={"action": action})

    # --- submissions --------------------------------------------------------------------------------

    def submissions(self, study_id: str) -> Iterator[dict[str, Any]]:
        """Every submission of the study, page after page (until a page holds fewer than PAGE_SIZE)."""
        page = 1
        while True:
            params = {"study": study_id, "page": page, "page_size": PAGE_SIZE}
            results = self._call("GET", "/submissions/", SUBMISSIONS, params=params)["results"]
            yield from results
            if len(results) < PAGE_SIZE:
                return
            page += 1

    def submission_transition(
        self, submission_id: str, action: str, *, message: str = "", rejection_category: str = ""
    ) -> dict[str, Any]:
        """APPROVE, REJECT (with Prolific's message and rejection category) or COMPLETE."""
        body: dict[str, Any] = {"action": action}
        if action == "REJECT":
            body |= {"message": message, "rejection_category": rejection_category}
        return self._call("POST", f"/submissions/{submission_id}/transition/", TRANSITIONED, json=body)

    def request_return(self, submission_id: str, reason: str) -> dict[str, Any]:
        """Ask the participant to return the submission (how Prolific screens out a participant who failed a
        comprehension check: never a rejection); the submission's status does not change until they do."""
        body = {"request_return_reasons": [reason]}
        path = f"/submissions/{submission_id}/request-return/"
        return self._call("POST", path, RETURN_REQUESTED, json=body)

    # --- bonuses ------------------------------------------------------------------------------------

    def bonus_setup(self, study_id: str, bonuses: dict[str, str]) -> dict[str, Any]:
        """Step 1: a batch of bonuses (participant id -> amount in the currency's major unit, "0.50"),
        not paid yet; its `id` is what bonus_pay pays."""
        csv = "".join(f"{participant},{amount}\n" for participant, amount in bonuses.items())
        body = {"study_id": study_id, "csv_bonuses": csv}
        return self._call("POST", "/submissions/bonus-payments/", BONUS_BATCH, json=body)

    def bonus_pay(self, batch_id: str) -> None:
        """Step 2: pay a batch set up before. Sent once: no retry (Prolific pays again on each call);
        PaymentUnknown when it did not answer; a ProlificError of another kind means nothing was paid
        (refused, or the budget was spent before it was sent)."""
        path = f"/bulk-bonus-payments/{batch_id}/pay/"
        try:
            response = self._send("POST", path)
        except requests.RequestException as failed:
            raise PaymentUnknown("POST", path, None, f"no answer ({type(failed).__name__})") from None
        if response.status_code >= 500:
            raise PaymentUnknown("POST", path, response.status_code, _error_text(response))
        if response.status_code >= 400:
            raise ProlificError("POST", path, response.status_code, _error_text(response))

    # --- the HTTP call ------------------------------------------------------------------------------

    def _call(self, method: str, path: str, shape: Answer, **kwargs: Any) -> dict[str, Any]:
        for attempt in range(RETRIES + 1):
            try:
                response = self._send(method, path, **kwargs)
            except requests.RequestException as failed:
                if attempt == RETRIES:
                    raise ProlificError(method, path, None, f"no answer ({type(failed).__name__})") from None
                self._wait(method, path, None, attempt, None)
                continue
            if response.status_code in RETRIED_STATUSES and attempt < RETRIES:
                self._wait(method, path, response.status_code, attempt, response.headers.get("Retry-After"))
                continue
            if response.status_code >= 400:
                raise ProlificError(method, path, response.status_code, _error_text(response))
            return _answer(method, path, response, shape)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        headers = {"Authorization": f"Token {self.token}"}
        timeout = min(TIMEOUT_SECONDS, self._left(method, path))
        return self._session.request(
            method, f"{self.base_url}{path}", headers=headers, timeout=timeout, **kwargs
        )

    def _left(self, method: str, path: str) -> float:
        """Seconds left of the budget (TIMEOUT_SECONDS without one); ProlificError once it is spent."""
        if self._deadline is None:
            return TIMEOUT_SECONDS
        left = self._deadline - time.monotonic()
        if left <= 0.05:
            raise _out_of_time(method, path, self.budget or 0.0)
        return left

    def _wait(
        self, method: str, path: str, status: int | None, attempt: int, retry_after: str | None
    ) -> None:
        seconds = BACKOFF_SECONDS * 2**attempt
        if retry_after and retry_after.replace(".", "", 1).isdigit():
            seconds = float(retry_after)
        seconds = min(seconds, MAX_WAIT_SECONDS)
        if self._deadline is not None and time.monotonic() + seconds >= self._deadline:
            raise _out_of_time(method, path, self.budget or 0.0, status)
        self.retries.append(Retry(method, path, status, seconds))
        self.sleep(seconds)


def token_missing() -> str:
    """What is said when no token is set (before a form is filled, and when a call is tried)."""
    return (
        "PROLIFIC_API_TOKEN is not set: put the workspace's API token in the environment "
        "(Prolific > Settings > API tokens); the studio never stores it"
    )


def _out_of_time(method: str, path: str, budget: float, status: int | None = None) -> ProlificError:
    """The page's budget is spent (or the next retry would pass it): nothing more is sent."""
    what = "a retry would pass" if status else "no answer within"
    message = f"{what} this page's {budget:g} s for Prolific; nothing more was sent, try again later"
    return ProlificError(method, path, status, message)


def _answer(method: str, path: str, response: requests.Response, shape: Answer) -> dict[str, Any]:
    """The answer's JSON when it is `shape`, else ProlificAnswerError quoting what Prolific answered."""
    try:
        body = response.json() if response.content else {}
    except ValueError:
        kind = response.headers.get("Content-Type", "no Content-Type").split(";")[0]
        problem = f"not JSON ({kind}): {_quoted(response.text)}"
    else:
        problem = shape.problem(body)
        if not problem:
            return dict(body)
        problem = f"{problem}; Prolific answered {_quoted(body)}"
    message = f"not {shape.what} as docs/prolific-api.md {shape.section} describes it: {problem}"
    raise ProlificAnswerError(method, path, response.status_code, message)


def _error_text(response: requests.Response) -> str:
    """Prolific's error (docs/prolific-api.md §8: {"error": {"title", "detail"}}, `detail` a string, a list
    or a field map; or a flat {"message", "detail"}), else the start of whatever came."""
    try:
        body = response.json()
    except ValueError:
        return _quoted(response.text) if response.text else response.reason or "an empty answer"
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, str):
        return error[:500] or _quoted(body)
    if not isinstance(error, dict):
        return _quoted(error)
    parts = [_detail_text(error.get(key)) for key in ("title", "message", "detail")]
    return ": ".join(part for part in parts if part) or _quoted(body)


def _detail_text(detail: Any) -> str:
    if detail is None or detail == "":
        return ""
    if isinstance(detail, str):
        return detail[:500]
    if isinstance(detail, list):
        return "; ".join(_detail_text(item) for item in detail)[:500]
    if isinstance(detail, dict):
        return "; ".join(f"{key}: {_detail_text(value)}" for key, value in detail.items())[:500]
    return _quoted(detail)
