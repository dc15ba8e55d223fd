"""The client of the studio's reward service, `POST /api/reward/` (issue #32): standard library only.

    client = RewardClient()     # from H2E_REWARD_URL, H2E_REWARD_TOKEN, H2E_REWARD_CONFIG, H2E_RUN
    client.score([{"procedure_id": 12, "completion": "1. ...", "step": 3, "group": "g-1"}])
    -> [{"how2score": 1, "format": 1, "length": 0.93, "total": 2.93, "length_ratio": 1.25, ...}]

A list longer than the service's bound (1,024 items) goes in several requests, in order. A refusal (4xx)
raises RewardRequestError with what the service said, its item numbers counted in the caller's whole list;
a 502/503/504 or a refused connection is tried again `retries` times after `backoff` seconds (doubling); a
timeout, a 5xx left over or an answer that is not the contract's raises RewardServiceError.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ENDPOINT = "/api/reward/"
MAX_ITEMS = 1024  # the service's bound on one request's items
COMPONENTS = ("how2score", "format", "length")
RETRY_STATUSES = frozenset({502, 503, 504})

Answer = dict[str, Any]


class RewardError(Exception):
    """Anything that kept the reward service from answering a batch."""


class RewardRequestError(RewardError):
    """The service refused the request (4xx): `status`, and `detail`, what it said (parsed JSON or text)."""

    def __init__(self, status: int, detail: Any, url: str) -> None:
        self.status, self.detail, self.url = status, detail, url
        super().__init__(f"the reward service at {url} refused the request ({status}): {describe(detail)}")


class RewardServiceError(RewardError):
    """The service failed, timed out, could not be reached, or answered outside the contract."""


def describe(detail: Any, prefix: str = "") -> str:
    """A DRF error body as one line: {"items": {"3": {"completion": ["Too long."]}}} -> "items.3.completion:
    Too long."; {"detail": "..."} -> its text."""
    if isinstance(detail, Mapping):
        if set(detail) == {"detail"} and not prefix:
            return str(detail["detail"])
        parts = [describe(value, f"{prefix}{key}.") for key, value in detail.items()]
        return "; ".join(part for part in parts if part)
    if isinstance(detail, list) and all(isinstance(entry, str) for entry in detail):
        return f"{prefix.rstrip('.')}: {' '.join(detail)}" if prefix else " ".join(detail)
    if isinstance(detail, list):
        return describe({str(i): entry for i, entry in enumerate(detail) if entry}, prefix)
    return f"{prefix.rstrip('.')}: {detail}" if prefix else str(detail)


def shift_items(detail: Any, offset: int) -> Any:
    """The service numbers a refused chunk's items from 0: number them in the caller's whole list."""
    if offset == 0 or not isinstance(detail, Mapping) or "items" not in detail:
        return detail
    items = detail["items"]
    if isinstance(items, list):
        items = {str(i): entry for i, entry in enumerate(items) if entry}
    if isinstance(items, Mapping) and all(str(key).isdigit() for key in items):
        items = {str(int(key) + offset): entry for key, entry in items.items()}
    return {**detail, "items": items}


def service_url(url: str) -> str:
    """The endpoint's URL from the studio's base URL (or the endpoint's own)."""
    url = url.rstrip("/")
    return url + "/" if url.endswith(ENDPOINT.rstrip("/")) else url + ENDPOINT


@dataclass
class RewardClient:
    """One studio's reward service. Arguments left None come from the environment: `url` from H2E_REWARD_URL,
    `token` from H2E_REWARD_TOKEN, `reward` (a reward config's name) from H2E_REWARD_CONFIG, `run` from
    H2E_RUN. `timeout` is the socket timeout of one request in seconds; `batch_size` at most 1,024."""

    url: str | None = None
    token: str | None = None
    reward: str | None = None
    run: str | None = None
    policy: str | None = None
    timeout: float = 300.0
    batch_size: int = MAX_ITEMS
    retries: int = 2
    backoff: float = 1.0

    def __post_init__(self) -> None:
        self.url = self.url or os.environ.get("H2E_REWARD_URL") or None
        self.token = self.token or os.environ.get("H2E_REWARD_TOKEN") or None
        self.reward = self.reward or os.environ.get("H2E_REWARD_CONFIG") or None
        self.run = self.run or os.environ.get("H2E_RUN") or None
        if not self.url:
            raise ValueError("no reward service URL: pass url= or set H2E_REWARD_URL (the studio's address)")
        if not 1 <= self.batch_size <= MAX_ITEMS:
            raise ValueError(
                f"batch_size must be 1..{MAX_ITEMS} (the service's bound), not {self.batch_size}"
            )

    @property
    def endpoint(self) -> str:
        return service_url(str(self.url))

    def score(
        self, items: Iterable[Mapping[str, Any]], components: Sequence[str] | None = None
    ) -> list[Answer]:
        """One answer per item, in order (the contract's item answers; docs/guides/researcher/training.md)."""
        batch = [dict(item) for item in items]
        wanted = check_components(components)
        answers: list[Answer] = []
        for start in range(0, len(batch), self.batch_size):
            answers.extend(self._score_chunk(batch[start : start + self.batch_size], wanted, start))
        return answers

    async def ascore(
        self, items: Iterable[Mapping[str, Any]], components: Sequence[str] | None = None
    ) -> list[Answer]:
        """score() in a worker thread: the event loop (a trainer's generation) goes on meanwhile."""
        return await asyncio.to_thread(self.score, list(items), components)

    def _score_chunk(
        self, chunk: list[dict[str, Any]], components: list[str] | None, offset: int
    ) -> list[Answer]:
        body: dict[str, Any] = {"items": chunk}
        for key in ("reward", "run", "policy"):
            if getattr(self, key):
                body[key] = getattr(self, key)
        if components is not None:
            body["components"] = components
        answer = self._post(json.dumps(body).encode("utf-8"), offset)
        got = answer.get("items") if isinstance(answer, dict) else None
        if not isinstance(got, list) or len(got) != len(chunk) or not all(isinstance(a, dict) for a in got):
            raise RewardServiceError(
                f"the reward service at {self.endpoint} answered {len(chunk)} items with "
                f"{str(answer)[:200]!r}"
            )
        return got

    def _post(self, body: bytes, offset: int) -> Any:
        for attempt in range(self.retries + 1):
            try:
                return self._send(body)
            except urllib.error.HTTPError as error:
                if error.code not in RETRY_STATUSES or attempt == self.retries:
                    raise self._refusal(error, offset) from None
            except TimeoutError as error:
                raise RewardServiceError(
                    f"the reward service at {self.endpoint} did not answer within {self.timeout:g} s"
                ) from error
            except (urllib.error.URLError, ConnectionError) as error:
                if attempt == self.retries:
                    reason = getattr(error, "reason", error)
                    raise RewardServiceError(
                        f"the reward service at {self.endpoint} is unreachable: {reason}"
                    ) from error
            time.sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, body: bytes) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        request = urllib.request.Request(self.endpoint, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            text = response.read().decode("utf-8")
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise RewardServiceError(
                f"the reward service at {self.endpoint} answered {text[:200]!r}"
            ) from None

    def _refusal(self, error: urllib.error.HTTPError, offset: int) -> RewardError:
        text = error.read().decode("utf-8", "replace")
        try:
            detail: Any = json.loads(text)
        except json.JSONDecodeError:
            detail = text.strip()[:500] or error.reason
        if error.code >= 500:
            return RewardServiceError(
                f"the reward service at {self.endpoint} failed ({error.code}): {describe(detail)}"
            )
        if error.code == 401:
            detail = f"{describe(detail)} (check the token: H2E_REWARD_TOKEN)"
        if error.code == 403:
            detail = f"{describe(detail)} (the token's user needs is_staff and judging.request_reward)"
        return RewardRequestError(error.code, shift_items(detail, offset), self.endpoint)


def check_components(components: Sequence[str] | None) -> list[str] | None:
    if components is None:
        return None
    if isinstance(components, str):
        components = [components]
    unknown = [c for c in components if c not in COMPONENTS]
    if unknown or not components:
        raise ValueError(
            f"components must be a non-empty subset of {list(COMPONENTS)}, not {list(components)}"
        )
    return list(components)
