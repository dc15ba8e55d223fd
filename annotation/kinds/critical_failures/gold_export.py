"""A critical-failures study's gold, exported (issue #23): one row per item with gold as of a time (now by
default), in JSON Lines and CSV (failures as JSON text in one cell; every cell through h2e_site.web's CSV
neutralisation), and the audit log: every GoldEvent up to that time, oldest first.

A gold row: item (id, position, subject key), generation, goal, generator, `has_failure`, `failures`
(description, l1_steps, l2_steps: 1-based), and the decision that set it (reason, by whom, when) with how many
decisions the item has had."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from annotation.base.models import Study
from annotation.kinds.critical_failures.gold import gold_from_json
from annotation.kinds.critical_failures.models import GoldEvent
from h2e_site.web import csv_lines

GOLD_FIELDS = [
    "study",
    "item_id",
    "item_position",
    "subject_key",
    "generation_id",
    "goal",
    "generator",
    "has_failure",
    "failures",
    "n_failures",
    "reason",
    "decided_by",
    "decided_at",
    "n_decisions",
]
EVENT_FIELDS = ["event_id", "study", "item_id", "decided_by", "decided_at", "verdict", "before", "reason"]


def _events(study: Study, at: datetime | None) -> list[GoldEvent]:
    events = GoldEvent.objects.filter(item__study=study, item__is_attention_check=False)
    if at is not None:
        events = events.filter(decided_at__lte=at)
    related = events.select_related(
        "item__generation__procedure", "item__generation__generator", "decided_by"
    )
    return list(related.order_by("decided_at", "id"))


def _who(event: GoldEvent) -> str:
    return event.decided_by.get_username() if event.decided_by else ""


def gold_rows(study: Study, at: datetime | None = None) -> Iterator[dict[str, Any]]:
    """The gold as of `at`, one row per item, in the study's item order."""
    last: dict[int, GoldEvent] = {}
    count: dict[int, int] = {}
    for event in _events(study, at):
        last[event.item_id] = event
        count[event.item_id] = count.get(event.item_id, 0) + 1
    for item_id, event in sorted(last.items(), key=lambda pair: pair[1].item.position):
        gold = gold_from_json(event.verdict)
        if gold is None:
            continue  # cleared
        item, generation = event.item, event.item.generation
        yield {
            "study": study.slug,
            "item_id": item_id,
            "item_position": item.position,
            "subject_key": item.subject_key,
            "generation_id": item.generation_id,
            "goal": generation.procedure.goal if generation else "",
            "generator": generation.generator.generator_id if generation else "",
            **gold.as_json(),
            "n_failures": len(gold.failures),
            "reason": event.reason,
            "decided_by": _who(event),
            "decided_at": event.decided_at.isoformat(),
            "n_decisions": count[item_id],
        }


def event_rows(study: Study, at: datetime | None = None) -> Iterator[dict[str, Any]]:
    for event in _events(study, at):
        yield {
            "event_id": event.pk,
            "study": study.slug,
            "item_id": event.item_id,
            "decided_by": _who(event),
            "decided_at": event.decided_at.isoformat(),
            "verdict": event.verdict,
            "before": event.before,
            "reason": event.reason,
        }


def _jsonl(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def gold_jsonl_lines(study: Study, at: datetime | None = None) -> Iterator[str]:
    return _jsonl(gold_rows(study, at))


def events_jsonl_lines(study: Study, at: datetime | None = None) -> Iterator[str]:
    return _jsonl(event_rows(study, at))


def gold_csv_lines(study: Study, at: datetime | None = None) -> Iterator[str]:
    rows = (
        {**row, "failures": json.dumps(row["failures"], ensure_ascii=False)} for row in gold_rows(study, at)
    )
    return csv_lines(rows, GOLD_FIELDS)


__all__ = [
    "EVENT_FIELDS",
    "GOLD_FIELDS",
    "event_rows",
    "events_jsonl_lines",
    "gold_csv_lines",
    "gold_jsonl_lines",
    "gold_rows",
]
