"""Cutting the mined pool into How2Bench and How2Train, deduplicating train against bench (paper §3, §E.1).

split_make draws `per_topic` procedures per topic from the pool (split "pool") with a fixed seed: they become
bench; the rest of the pool becomes train, except the train procedures too close to a bench procedure: each
procedure is embedded as goal + "\\n" + numbered steps (L2-normalised), and a train procedure whose maximum
cosine similarity to any bench procedure (those drawn now and those already in bench) is >= the threshold
(0.65) stays in the pool, so nothing is deleted and the report says how many. The vectors are read from the
embedding store (h2e_site.embeddings): only a procedure whose text was never embedded under the model is
embedded now (and stored). Procedures without a topic are
never drawn for bench.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db import transaction

from h2e_site.bounds import SEED
from h2e_site.embeddings.store import StoredEmbed

from .embedding import procedure_text
from .models import Procedure, Split

DEDUP_THRESHOLD = 0.65
TRAIN_CHUNK = 1024

Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> unit rows (StoredEmbed)


@dataclass
class SplitReport:
    bench_by_topic: dict[str, int] = field(default_factory=dict)
    train: int = 0
    near_duplicates: int = 0  # train candidates left in the pool (max cosine to bench >= threshold)
    short_topics: dict[str, int] = field(default_factory=dict)  # topics with fewer than per_topic procedures

    @property
    def bench(self) -> int:
        return sum(self.bench_by_topic.values())

    def lines(self) -> list[str]:
        lines = [f"bench: {self.bench} ({len(self.bench_by_topic)} topics)", f"train: {self.train}"]
        lines.append(f"left in the pool as near-duplicates of bench: {self.near_duplicates}")
        lines += [
            f"only {n} procedures in the pool for {topic}: all went to bench"
            for topic, n in self.short_topics.items()
        ]
        return lines


def split_make(
    *,
    per_topic: int,
    seed: int,
    dedup: bool = True,
    threshold: float = DEDUP_THRESHOLD,
    embed: Embed | None = None,
) -> SplitReport:
    """Draw the topic-balanced bench split from the pool; the rest becomes (deduplicated) train."""
    if per_topic < 1:
        raise ValueError(f"per_topic must be a positive number, got {per_topic}")
    SEED.check("seed", seed)  # OutOfRange, a ValueError naming the field
    report = SplitReport()
    bench_ids, train_ids = _draw(per_topic, seed, report)
    if dedup and train_ids:
        train_ids = _without_near_duplicates(train_ids, bench_ids, threshold, embed or StoredEmbed(), report)
    with transaction.atomic():
        Procedure.objects.filter(pk__in=bench_ids, split=Split.POOL).update(split=Split.BENCH)
        Procedure.objects.filter(pk__in=train_ids, split=Split.POOL).update(split=Split.TRAIN)
    report.train = len(train_ids)
    return report


def _draw(per_topic: int, seed: int, report: SplitReport) -> tuple[list[int], list[int]]:
    by_topic: dict[str, list[int]] = defaultdict(list)
    untopical: list[int] = []
    pool = Procedure.objects.filter(split=Split.POOL).order_by("source_example_id")
    for pk, topic in pool.values_list("pk", "topic__name"):
        (by_topic[topic] if topic else untopical).append(pk)
    rng = random.Random(seed)
    bench: list[int] = []
    train: list[int] = list(untopical)
    for topic in sorted(by_topic):
        pks = by_topic[topic]
        chosen = set(rng.sample(pks, per_topic)) if len(pks) > per_topic else set(pks)
        if len(pks) < per_topic:
            report.short_topics[topic] = len(pks)
        report.bench_by_topic[topic] = len(chosen)
        bench.extend(pk for pk in pks if pk in chosen)
        train.extend(pk for pk in pks if pk not in chosen)
    return bench, train


def _without_near_duplicates(
    train_ids: Sequence[int],
    bench_ids: Sequence[int],
    threshold: float,
    embed: Embed,
    report: SplitReport,
) -> list[int]:
    bench_pks = list(bench_ids) + list(
        Procedure.objects.filter(split=Split.BENCH).values_list("pk", flat=True)
    )
    bench = _embed(bench_pks, embed)
    kept: list[int] = []
    for start in range(0, len(train_ids), TRAIN_CHUNK):
        chunk = list(train_ids[start : start + TRAIN_CHUNK])
        closest = max_cosine(_embed(chunk, embed), bench)
        kept.extend(pk for pk, cosine in zip(chunk, closest, strict=True) if cosine < threshold)
        report.near_duplicates += sum(1 for cosine in closest if cosine >= threshold)
    return kept


def _embed(pks: Sequence[int], embed: Embed) -> np.ndarray:
    rows = Procedure.objects.filter(pk__in=pks).values_list("pk", "goal", "steps")
    texts = {pk: procedure_text(goal, steps) for pk, goal, steps in rows}
    return embed([texts[pk] for pk in pks])


def max_cosine(queries: np.ndarray, references: np.ndarray) -> np.ndarray:
    """Each (L2-normalised) query's highest cosine similarity to the references (-1 when there are none)."""
    if len(references) == 0:
        return np.full(len(queries), -1.0, dtype=np.float32)
    return (queries @ references.T).max(axis=1)
