"""How benchmarks/researcher_pages.py times a page: warm-up requests, then timed ones (median and p95), the
settings its command line sets (SETTINGS), and forgetting what pages remember between requests."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class Settings:
    runs: int = 20  # timed requests per page
    warmup: int = 3  # untimed requests per page first


SETTINGS = Settings()


@dataclass(frozen=True)
class Timing:
    name: str
    url: str
    times: list[float]
    bytes: int
    note: str = ""

    @property
    def median_ms(self) -> float:
        return 1000 * statistics.median(self.times)

    @property
    def p95_ms(self) -> float:
        ordered = sorted(self.times)
        return 1000 * ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def timed(
    client: Any,
    name: str,
    url: str,
    params: dict[str, str] | None = None,
    *,
    runs: int | None = None,
    cold: bool = False,
    **headers: str,
) -> Timing:
    """Median and p95 over `runs` requests after the warm-up; `cold`: Django's cache (the figures cached for
    the judgments' version, judging/versions.py) cleared before each timed request."""
    from django.core.cache import cache

    runs = SETTINGS.runs if runs is None else min(runs, SETTINGS.runs)
    for _ in range(SETTINGS.warmup):
        response = client.get(url, params or {}, **headers)
        assert response.status_code == 200, (url, response.status_code)
    times = []
    for _ in range(runs):
        if cold:
            cache.clear()
            forget_remembered()
        start = time.perf_counter()
        response = client.get(url, params or {}, **headers)
        times.append(time.perf_counter() - start)
    query = "&".join(f"{k}={v}" for k, v in (params or {}).items())
    return Timing(name, url + (f"?{query}" if query else ""), times, len(response.content))


def forget_remembered() -> None:
    """What pages remember in this process besides Django's cache (the adjudication queue's subjects and
    Dawid-Skene fits): forgotten for the timings "computed afresh"."""
    from annotation.kinds.critical_failures import adjudication

    for name in ("_SUBJECTS", "_FITS"):
        if hasattr(adjudication, name):
            getattr(adjudication, name).clear()
