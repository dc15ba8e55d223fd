"""An independent How2Score oracle, written from h2e-compat.md and the reference aggregate.py behaviour."""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def reference_aggregate(records: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(summary.json, by_topic.csv rows) for judgment records, by the reference's formulas."""
    total = parse_failed = with_failures = sum_failures = 0
    topics: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for rec in records:
        total += 1
        topic = topics[rec.get("topic", "")]
        if rec.get("parse_failed"):
            parse_failed += 1
            topic["parse_failed"] += 1
            continue
        topic["judged"] += 1
        if rec.get("has_failure"):
            with_failures += 1
            topic["with_failures"] += 1
        sum_failures += int(rec.get("n_failures", 0))
        topic["sum_failures"] += int(rec.get("n_failures", 0))
    summary = _figures(total - parse_failed, with_failures, sum_failures)
    summary = {
        "how2score": summary["how2score"],
        "how2score_percent": summary["how2score_percent"],
        "n_examples": total - parse_failed,
        "n_with_failures": with_failures,
        "failure_rate": summary["failure_rate"],
        "avg_failures_per_example": summary["avg_failures_per_example"],
    }
    if parse_failed:
        summary["n_parse_failed"] = parse_failed
    rows = []
    for name in sorted(topics):
        t = topics[name]
        figures = _figures(t["judged"], t["with_failures"], t["sum_failures"])
        row: dict[str, Any] = {
            "topic": name,
            "n_judged": t["judged"],
            "n_with_failures": t["with_failures"],
            "how2score": figures["how2score"],
            "how2score_percent": figures["how2score_percent"],
            "failure_rate": figures["failure_rate"],
            "avg_failures_per_example": figures["avg_failures_per_example"],
        }
        if t["parse_failed"]:
            row["n_parse_failed"] = t["parse_failed"]
        rows.append(row)
    if any("n_parse_failed" in r for r in rows):
        rows = [{**r, "n_parse_failed": r.get("n_parse_failed", "")} for r in rows]
    return summary, rows


def _figures(n: int, with_failures: int, sum_failures: int) -> dict[str, float]:
    if not n:
        return {
            "how2score": 0.0,
            "how2score_percent": 0.0,
            "failure_rate": 0.0,
            "avg_failures_per_example": 0.0,
        }
    rate = with_failures / n
    return {
        "how2score": 1.0 - rate,
        "how2score_percent": 100.0 * (1.0 - rate),
        "failure_rate": rate,
        "avg_failures_per_example": sum_failures / n,
    }
