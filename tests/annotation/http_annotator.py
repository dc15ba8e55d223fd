"""An annotator driven over real HTTP (httpx), for the concurrency test and the load benchmark."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import httpx2 as httpx

ASSIGNMENT = re.compile(r'action="/a/[^/]+/item/(\d+)/submit/"')
L2_TOTAL = re.compile(r"Reading progress: \d+/(\d+) steps")
Timer = Callable[[str, float], None]


def _no_timer(kind: str, seconds: float) -> None:
    return None


class HttpAnnotator:
    """One participant's browser: a cookie jar, the CSRF header, and the flow's requests."""

    def __init__(self, base_url: str, slug: str, pid: str, *, timer: Timer = _no_timer) -> None:
        self.client = httpx.Client(base_url=base_url, follow_redirects=False, timeout=30)
        self.slug, self.pid, self.timer = slug, pid, timer
        self.items: list[int] = []

    def _send(
        self, kind: str, method: str, path: str, *, headers: dict[str, str] | None = None, **kwargs: object
    ) -> httpx.Response:
        headers = {"X-CSRFToken": self.client.cookies.get("csrftoken", ""), **(headers or {})}
        started = time.perf_counter()
        response = self.client.request(method, path, headers=headers, **kwargs)  # type: ignore[arg-type]
        self.timer(kind, time.perf_counter() - started)
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path} -> {response.status_code}: {response.text[:300]}")
        return response

    def qualify(self, answers: dict[str, str]) -> None:
        base = f"/a/{self.slug}"
        entry = self._send("entry", "GET", f"{base}/?PROLIFIC_PID={self.pid}&STUDY_ID=load&SESSION_ID=s1")
        assert entry.headers["location"].endswith("/consent/"), entry.headers
        self._send("page", "GET", f"{base}/consent/")
        self._send("step", "POST", f"{base}/consent/")
        self._send("step", "POST", f"{base}/training/")
        checked = self._send("step", "POST", f"{base}/check/", data=answers)
        assert checked.headers["location"].endswith("/item/"), checked.headers

    def annotate_next(
        self, *, pause: Callable[[], None] = lambda: None, answer: dict[str, str] | None = None
    ) -> bool:
        """Fetch the next item, read it and submit `answer` (default: "no critical failure"); False when the
        study sent us off."""
        page = self._send("item_page", "GET", f"/a/{self.slug}/item/")
        if page.status_code == 302:
            assert "app.prolific.com/submissions/complete" in page.headers["location"]
            return False
        pk = int(ASSIGNMENT.search(page.text).group(1))  # type: ignore[union-attr]
        total = int(L2_TOTAL.search(page.text).group(1))  # type: ignore[union-attr]
        headers = {"HX-Request": "true"}
        self._send("reveal", "POST", f"/a/{self.slug}/item/{pk}/goal/", headers=headers)
        for n in range(1, total + 1):
            pause()
            self._send("reveal", "POST", f"/a/{self.slug}/item/{pk}/steps/{n}/", headers=headers)
        pause()
        submitted = self._send(
            "submit", "POST", f"/a/{self.slug}/item/{pk}/submit/", data=answer or {"has_failure": "no"}
        )
        assert submitted.status_code == 302
        self.items.append(pk)
        return True

    def close(self) -> None:
        self.client.close()
