"""Reads for mining runs: the yield funnel (paper table 6 / figure 2) and the documents a stage rejected.

The funnel is computed by SQL aggregates over the stored outcomes, grouped by the document's topic and the
stage: processed (outcomes), passed, errors, tokens, cost. Yield is relative to the run's input documents of
the topic, as in the paper's table 6 ("#documents retained after the stage divided by #input documents");
the pass rate is relative to what the stage processed. As in the reference, "processed" counts the documents
a stage answered (a request, or its stored answer reused); a document the LLM filter drops without a request
(its extraction's goal is empty) is counted as not sent: it entered the stage and was dropped there.
`reused` counts the answers taken from an earlier outcome of the same request (no request sent; tokens and
cost are those of the answer); `stored` counts the procedures the run keeps, which is the final
validation's passes unless one's source_example_id was already stored with other content (run_unstored
says which and why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from .models import NOT_SENT, STAGE_ORDER, MiningRun, Procedure, Stage, StageOutcome

NO_TOPIC = "(no topic)"


@dataclass
class FunnelCell:
    """One stage of one topic (or of the whole run)."""

    stage: str
    inputs: int
    processed: int = 0
    passed: int = 0
    not_sent: int = 0  # dropped without a request (the reference leaves these out of `processed`)
    errors: int = 0
    reused: int = 0
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
        """Answered and not passed (the reference's processed minus passed)."""
        return self.processed - self.passed

    @property
    def entered(self) -> int:
        """The documents that reached the stage: answered, or dropped without a request."""
        return self.processed + self.not_sent

    @property
    def dropped(self) -> int:
        """The documents the stage let go: rejected, and dropped without a request."""
        return self.entered - self.passed

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
            "not_sent": self.not_sent,
            "errors": self.errors,
            "reused": self.reused,
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
    stored: int = 0  # procedures the run keeps (Procedure.mining_runs)

    @property
    def stored_percent(self) -> float:
        return 100.0 * self.stored / self.inputs if self.inputs else 0.0

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
            "procedures_stored": self.stored,
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
    "processed": Count("id", filter=~NOT_SENT),
    "not_sent": Count("id", filter=NOT_SENT),
    "passed": Count("id", filter=Q(passed=True)),
    "errors": Count("id", filter=~Q(error="")),
    "reused": Count("id", filter=Q(reused=True)),
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
    kept = run.kept_procedures.values_list("topic__name").annotate(n=Count("id")).order_by()
    for name, n in kept:
        rows.setdefault(name or NO_TOPIC, _row(name or NO_TOPIC, 0)).stored = n
        total.stored += n
    return Funnel(run=run, rows=list(rows.values()), total=total)


@dataclass(frozen=True)
class Unstored:
    """A final-validation pass the run does not keep, and why."""

    source_example_id: str
    reason: str


def run_unstored(run: MiningRun) -> list[Unstored]:
    """The run's final passes it keeps no procedure for: their source_example_id was already stored with
    other content (an earlier run's rewrite, an imported record), which is never overwritten."""
    passed = StageOutcome.objects.filter(run=run, stage=Stage.FINAL_FILTER, passed=True)
    kept = run.kept_procedures.values("source_example_id")
    doc_ids = list(
        passed.exclude(document__doc_id__in=kept)
        .order_by("document__doc_id")
        .values_list("document__doc_id", flat=True)
    )
    stored = {p.source_example_id: p for p in Procedure.objects.filter(source_example_id__in=doc_ids)}
    return [Unstored(doc_id, _unstored_reason(stored.get(doc_id))) for doc_id in doc_ids]


def _unstored_reason(stored: Procedure | None) -> str:
    if stored is None:
        return "its procedure was deleted since"
    origin = f"mining run #{stored.mining_run_id}" if stored.mining_run_id else "an import"
    return f"already stored with other content (split {stored.split}, from {origin}); not overwritten"


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


# --- the stage funnel of a run's page: what entered each stage, what it let go and why ---------------------

TOP_REASONS = 5


@dataclass(frozen=True)
class StageDrops:
    """One stage of the whole run: documents that entered, passed and were dropped, the commonest reasons."""

    cell: FunnelCell
    reasons: list[tuple[str, int]]  # (reason, documents), the TOP_REASONS commonest
    other_reasons: int  # documents dropped for a reason not listed

    @property
    def entered_percent(self) -> float:
        return 100.0 * self.cell.entered / self.cell.inputs if self.cell.inputs else 0.0


def run_stage_drops(run: MiningRun, funnel: Funnel) -> list[StageDrops]:
    """Per stage (in pipeline order) of the run's funnel totals: entered / passed / dropped, and the
    commonest reasons of the drops (one query per stage that dropped something)."""
    drops = []
    for cell in funnel.total.cells:
        reasons: list[tuple[str, int]] = []
        if cell.dropped:
            rows = (
                StageOutcome.objects.filter(run=run, stage=cell.stage, passed=False)
                .values_list("reason")
                .annotate(n=Count("id"))
                .order_by("-n", "reason")[:TOP_REASONS]
            )
            reasons = [(reason or "(no reason given)", n) for reason, n in rows]
        other = cell.dropped - sum(n for _, n in reasons)
        drops.append(StageDrops(cell=cell, reasons=reasons, other_reasons=other))
    return drops
