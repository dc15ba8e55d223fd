"""The figures that read every judgment (paired tests, the rank-correlation bootstrap, a judge's report card)
are cached, keyed on the version of what they are computed from: how many judgments the figure reads (of the
judges it is about: a count the caller often has already, else one index-only count), the time of the last
judgment and of the last generation written, and the judges there are (all three indexed look-ups). A write
there (a judge job, an import, a re-judge, compute_metrics, a deletion, a new or deleted judge) changes the
version, so a cached figure is never older than the data. The cache is Django's (per process by default).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

from django.core.cache import cache
from django.db import connection

from .models import Generation, Judge, Judgment

T = TypeVar("T")
TIMEOUT_SECONDS = 24 * 3600


def judgments_version(*, judge_ids: Iterable[str] | None = None, n_judgments: int | None = None) -> str:
    """A string that changes whenever a judgment (of these judges, or of any) or a generation is written or
    a judgment or judge deleted. `n_judgments`: the count of those judgments, when the caller has it."""
    if n_judgments is None:
        judgments = Judgment.objects.order_by()
        if judge_ids is not None:
            judgments = judgments.filter(judge__judge_id__in=list(judge_ids))
        n_judgments = judgments.count()
    return f"{n_judgments}:{_last_writes()}"


def _last_writes() -> str:
    """The last judgment and generation written and the judges there are, in one round trip."""
    judgment, generation, judge = (m._meta.db_table for m in (Judgment, Generation, Judge))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT max(updated_at) FROM {judgment}), (SELECT max(updated_at) FROM {generation}),"
            f" (SELECT count(*) FROM {judge}), (SELECT max(id) FROM {judge})"
        )
        return ":".join(str(value) for value in cursor.fetchone() or ())


def cached(name: str, compute: Callable[[], T], *, version: str) -> T:
    """compute(), or its result cached under `name` for this version (from judgments_version())."""
    key = "h2e:figures:" + hashlib.sha1(f"{name}|{version}".encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        found = compute()
        cache.set(key, found, TIMEOUT_SECONDS)
    return found  # type: ignore[no-any-return]


__all__ = ["cached", "judgments_version"]
