"""The failure browser's counts per topic.

Counts per topic follow the same filters. Without q the judge side sums Judgment.n_failures (one
index-only scan; n_failures is the number of CriticalFailure rows the judgment has). With q on PostgreSQL
they are read among the search's matches: exact up to SEARCH_COUNT_CAP, lower bounds beyond (search.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db.models import Count, Sum

from annotation.failures.filters import FailureFilters
from annotation.failures.paging import _human_failures, _judge_failures
from annotation.failures.search import _among
from judging.models import Judgment
from mining.models import Topic

NO_TOPIC = "(no topic)"


@dataclass(frozen=True)
class TopicCount:
    topic: str
    judge: int
    human: int
    at_least: bool = False  # a broad text search: the judge count is a lower bound (SEARCH_COUNT_CAP)

    @property
    def total(self) -> int:
        return self.judge + self.human


def failure_counts_by_topic(*, filters: FailureFilters) -> list[TopicCount]:
    """Failures per topic under the filters, most first (two grouped queries plus one for topic names)."""
    judge: dict[int | None, int] = {}
    human: dict[int | None, int] = {}
    sources = filters.sources
    if "judge" in sources:
        judge = _judge_counts(filters)
    if "human" in sources:
        grouped = (
            _human_failures(filters)
            .order_by()
            .values_list("annotation__item__generation__procedure__topic_id")
            .annotate(n=Count("id"))
        )
        human = {topic: n for topic, n in grouped}
    keys = set(judge) | set(human)
    names = dict(Topic.objects.filter(pk__in=[k for k in keys if k is not None]).values_list("pk", "name"))
    at_least = filters.counts_at_least and "judge" in sources
    counts = [
        TopicCount(names.get(k, NO_TOPIC) if k else NO_TOPIC, judge.get(k, 0), human.get(k, 0), at_least)
        for k in keys
    ]
    counts = [c for c in counts if c.total]
    counts.sort(key=lambda c: (-c.total, c.topic))
    return counts


def _judge_counts(filters: FailureFilters) -> dict[int | None, int]:
    qs = Judgment.objects.filter(n_failures__gt=0)
    if filters.topic is not None:
        qs = qs.filter(topic_id=filters.topic)
    if filters.generator is not None:
        qs = qs.filter(generator_id=filters.generator)
    if filters.judge is not None:
        qs = qs.filter(judge_id=filters.judge)
    if filters.pattern_members is not None or (filters.q and filters.text_hits is None):
        # a pattern's members (text hits among them), or SQLite's substring match: count the failures
        grouped = (
            _judge_failures(filters).order_by().values_list("judgment__topic_id").annotate(n=Count("id"))
        )
        return {topic: n for topic, n in grouped}
    if filters.text_hits is not None:  # the hits' judgments under the filters, each counted once a hit
        per_judgment = Counter(judgment for _, judgment in filters.text_hits)
        counts: Counter[int | None] = Counter()
        for judgment, topic in qs.filter(_among(Judgment._meta.db_table, per_judgment)).values_list(
            "pk", "topic_id"
        ):
            counts[topic] += per_judgment[judgment]
        return dict(counts)
    return {
        topic: int(n or 0) for topic, n in qs.order_by().values_list("topic_id").annotate(n=Sum("n_failures"))
    }
