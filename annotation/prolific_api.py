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
- Errors: any other 4xx, or a 5xx after the retries, raises ProlificError naming the call and Prolific's
  `error.title` / `error.detail` (its error body: {"error": {"status", "title", "detail", ...}}).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

RETRIES = 4
BACKOFF_SECONDS = 0.5
MAX_WAIT_SECONDS = 30.0
TIMEOUT_SECONDS = 20.0
PAGE_SIZE = 100
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})

# Study transitions (docs/prolific-api.md §3): which may start from which status is Prolific's to check.
STUDY_ACTIONS = ("PUBLISH", "PAUSE", "START", "STOP")


class ProlificError(Exception):
    """A call Prolific refused or that failed after its retries."""

    def __init__(self, method: str, path: str, status: int | None, message: str) -> None:
        self.method, self.path, self.status = method, path, status
        where = f"{method} {path}"
        super().__init__(f"Prolific {where}: {status or 'no answer'}: {message}")


class PaymentUnknown(ProlificError):
    """A bonus pay call that did not answer: it may have paid. Never sent again; read the submissions."""


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

    def __post_init__(self) -> None:
        self.base_url = (self.base_url or settings.PROLIFIC_API_URL).rstrip("/")
        self.token = self.token or settings.PROLIFIC_API_TOKEN
        if not self.token:
            raise ImproperlyConfigured(
                "PROLIFIC_API_TOKEN is not set: put the workspace's API token in the environment "
                "(Prolific > Settings > API tokens); the studio never stores it"
            )
        self._session = requests.Session()

    # --- studies ------------------------------------------------------------------------------------

    def study_create(self, draft: dict[str, Any]) -> dict[str, Any]:
        """A draft study (UNPUBLISHED) from its payload (docs/prolific-api.md §2)."""
        return self._call("POST", "/studies/", json=draft)

    def study(self, study_id: str) -> dict[str, Any]:
        return self._call("GET", f"/studies/{study_id}/")

    def study_transition(self, study_id: str, action: str) -> dict[str, Any]:
        """PUBLISH, PAUSE, START (resume) or STOP."""
        if action not in STUDY_ACTIONS:
            raise ValueError(f"action: expected one of {', '.join(STUDY_ACTIONS)}, got {action!r}")
        return self._call("POST", f"/studies/{study_id}/transition/", json={"action": action})

    # --- submissions --------------------------------------------------------------------------------

    def submissions(self, study_id: str) -> Iterator[dict[str, Any]]:
        """Every submission of the study, page after page (until a page holds fewer than PAGE_SIZE)."""
        page = 1
        while True:
            params = {"study": study_id, "page": page, "page_size": PAGE_SIZE}
            results = self._call("GET", "/submissions/", params=params).get("results", [])
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
        return self._call("POST", f"/submissions/{submission_id}/transition/", json=body)

    def request_return(self, submission_id: str, reason: str) -> dict[str, Any]:
        """Ask the participant to return the submission (how Prolific screens out a participant who failed a
        comprehension check: never a rejection); the submission's status does not change until they do."""
        body = {"request_return_reasons": [reason]}
        return self._call("POST", f"/submissions/{submission_id}/request-return/", json=body)

    # --- bonuses ------------------------------------------------------------------------------------

    def bonus_setup(self, study_id: str, bonuses: dict[str, str]) -> dict[str, Any]:
        """Step 1: a batch of bonuses (participant id -> amount in the currency's major unit, "0.50"),
        not paid yet; its `id` is what bonus_pay pays."""
        csv = "".join(f"{participant},{amount}\n" for participant, amount in bonuses.items())
        return self._call(
            "POST", "/submissions/bonus-payments/", json={"study_id": study_id, "csv_bonuses": csv}
        )

    def bonus_pay(self, batch_id: str) -> None:
        """Step 2: pay a batch set up before. Sent once: no retry (Prolific pays again on each call);
        PaymentUnknown when it did not answer."""
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

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
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
            return response.json() if response.content else {}
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        headers = {"Authorization": f"Token {self.token}"}
        return self._session.request(
            method, f"{self.base_url}{path}", headers=headers, timeout=TIMEOUT_SECONDS, **kwargs
        )

    def _wait(
        self, method: str, path: str, status: int | None, attempt: int, retry_after: str | None
    ) -> None:
        seconds = BACKOFF_SECONDS * 2**attempt
        if retry_after and retry_after.replace(".", "", 1).isdigit():
            seconds = float(retry_after)
        seconds = min(seconds, MAX_WAIT_SECONDS)
        self.retries.append(Retry(method, path, status, seconds))
        self.sleep(seconds)


def _error_text(response: requests.Response) -> str:
    """Prolific's error title and detail (its error body), else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200] or response.reason
    error = body.get("error", body) if isinstance(body, dict) else {}
    title, detail = error.get("title", ""), error.get("detail", "")
    return f"{title}: {detail}".strip(": ") or response.text[:200]
