"""Reads for mining runs: the yield funnel (paper table 6 / figure 2) and the documents a stage rejected.

The funnel is computed by SQL aggregates over the stored outcomes, grouped by the document's topic and the
stage: processed (outcomes), passed, errors, tokens, cost. Yield is relative to the run's input documents of
the topic, as in the paper's table 6 ("#documents retained after the stage divided by #input documents");
the pass rate is relative to what the stage processed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from .models import STAGE_ORDER, MiningRun, Stage, StageOutcome

NO_TOPIC = "(no topic)"


@dataclass
class FunnelCell:
    """One stage of one topic (or of the whole run)."""

    stage: str
    inputs: int
    processed: int = 0
    passed: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    @property
    def label(self) -> str:
        return str(Stage(self.stage).label)

    @property
    def after_label(self) -> str:
        """ "After procedure extraction", "After LLM filter" (acronyms kept)."""
        label = self.label
        return "After " + (label if label[:2].isupper() else label[:1].lower() + label[1:])

    @property
    def rejected(self) -> int:
        return self.processed - self.passed

    @property
    def yield_percent(self) -> float:
        return 100.0 * self.passed / self.inputs if self.inputs else 0.0

    @property
    def pass_rate_percent(self) -> float:
        return 100.0 * self.passed / self.processed if self.processed else 0.0

    def as_json(self) -> dict[str, object]:
        return {
            "stage": self.stage,
            "processed": self.processed,
            "passed": self.passed,
            "rejected": self.rejected,
            "errors": self.errors,
            "yield_percent": round(self.yield_percent, 4),
            "pass_rate_percent": round(self.pass_rate_percent, 4),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": round(self.cost, 6),
        }


@dataclass
class FunnelRow:
    topic: str
    inputs: int
    cells: list[FunnelCell] = field(default_factory=list)

    @property
    def cost(self) -> float:
        return sum(cell.cost for cell in self.cells)

    @property
    def tokens(self) -> int:
        return sum(cell.prompt_tokens + cell.completion_tokens for cell in self.cells)

    def as_json(self) -> dict[str, object]:
        return {
            "topic": self.topic,
            "documents": self.inputs,
            "cost": round(self.cost, 6),
            "stages": [cell.as_json() for cell in self.cells],
        }


@dataclass
class Funnel:
    run: MiningRun
    rows: list[FunnelRow]
    total: FunnelRow
    stages: tuple[str, ...] = STAGE_ORDER

    @property
    def stage_labels(self) -> list[tuple[str, str]]:
        return [(stage, Stage(stage).label) for stage in self.stages]

    def as_json(self) -> dict[str, object]:
        return {
            "run": self.run.pk,
            "stages": list(self.stages),
            "topics": [row.as_json() for row in self.rows],
            "total": self.total.as_json(),
        }


_AGGREGATES = {
    "processed": Count("id"),
    "passed": Count("id", filter=Q(passed=True)),
    "errors": Count("id", filter=~Q(error="")),
    "prompt_tokens": Sum("prompt_tokens", default=0),
    "completion_tokens": Sum("completion_tokens", default=0),
    "cost": Sum("cost", default=0.0),
}


def run_funnel(run: MiningRun) -> Funnel:
    """Per topic and stage: processed / passed / yield %, tokens and cost; and the same for the whole run."""
    inputs = {
        name or NO_TOPIC: n
        for name, n in run.documents.values_list("topic__name").annotate(n=Count("id")).order_by()
    }
    rows = {topic: _row(topic, n) for topic, n in sorted(inputs.items())}
    outcomes = StageOutcome.objects.filter(run=run)
    by_topic: list[Mapping[str, Any]] = list(
        outcomes.values("document__topic__name", "stage").annotate(**_AGGREGATES).order_by()
    )
    for values in by_topic:
        topic = values["document__topic__name"] or NO_TOPIC
        _fill(rows.setdefault(topic, _row(topic, 0)), values)
    total = _row("All topics", sum(inputs.values()))
    by_stage: list[Mapping[str, Any]] = list(outcomes.values("stage").annotate(**_AGGREGATES).order_by())
    for values in by_stage:
        _fill(total, values)
    return Funnel(run=run, rows=list(rows.values()), total=total)


def _row(topic: str, inputs: int) -> FunnelRow:
    return FunnelRow(topic=topic, inputs=inputs, cells=[FunnelCell(stage, inputs) for stage in STAGE_ORDER])


def _fill(row: FunnelRow, values: Mapping[str, Any]) -> None:
    cell = row.cells[STAGE_ORDER.index(str(values["stage"]))]
    for name in _AGGREGATES:
        setattr(cell, name, values[name])


def stage_rejections(run: MiningRun, stage: str, *, topic: str | None = None) -> QuerySet[StageOutcome]:
    """The outcomes of `stage` that rejected a document (with the reason), by document id."""
    rejected = StageOutcome.objects.filter(run=run, stage=stage, passed=False).select_related(
        "document__topic"
    )
    if topic == NO_TOPIC:
        rejected = rejected.filter(document__topic__isnull=True)
    elif topic:
        rejected = rejected.filter(document__topic__name=topic)
    return rejected.defer("raw_output", "document__text", "document__extra").order_by("document__doc_id")
