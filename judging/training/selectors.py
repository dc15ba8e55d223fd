"""Reads of the training runs for their pages and API: a run's reward calls added up per step in the database
(one query for any number of runs), then watched by judging/training/watch.py."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, F, Max, Q, QuerySet, Sum
from django.utils import timezone

from ..rewards import TAU
from .models import RewardCall, TrainingRun
from .watch import RunWatch, StepSums, run_watch

LIVE_FOR = timedelta(minutes=10)  # a run whose last call is this recent is live: its page refreshes itself

_SUMS = {
    "n_calls": Count("pk"),
    "n_scored": Count("pk", filter=Q(how2score__isnull=False)),
    "n_passed": Count("pk", filter=Q(how2score=1)),
    "n_format": Count("pk", filter=Q(format__isnull=False)),
    "n_format_ok": Count("pk", filter=Q(format=1)),
    "n_scored_format_ok": Count("pk", filter=Q(format=1, how2score__isnull=False)),
    "n_passed_format_ok": Count("pk", filter=Q(format=1, how2score=1)),
    "n_length": Count("length"),
    "length_sum": Sum("length"),
    "n_total": Count("total"),
    "total_sum": Sum("total"),
    "n_ratio": Count("length_ratio"),
    "ratio_sum": Sum("length_ratio"),
    "ratio_squares": Sum(F("length_ratio") * F("length_ratio")),
    "n_from_store": Count("pk", filter=Q(from_store=True)),
    "n_errors": Count("pk", filter=~Q(error="")),
}


def step_sums_by_run(run_ids: Iterable[int]) -> dict[int, dict[int, StepSums]]:
    """Per run, per step: the counts and sums of its reward calls (calls without a step are left out)."""
    rows = (
        RewardCall.objects.filter(run_id__in=list(run_ids), step__isnull=False)
        .order_by()
        .values("run_id", "step")
        .annotate(**_SUMS)
    )
    found: dict[int, dict[int, StepSums]] = {}
    for row in rows:
        values: dict[str, Any] = dict(row)
        sums = StepSums(**{name: values[name] or 0 for name in _SUMS})
        found.setdefault(values["run_id"], {})[values["step"]] = sums
    return found


def run_tau(run: TrainingRun) -> float:
    """τ of the run's reward config (as the run first used it); the paper's 0.2 when it does not say."""
    tau = (run.reward_config or {}).get("tau", TAU)
    return float(tau) if isinstance(tau, int | float) and 0 <= tau < 1 else TAU


def watch_of(run: TrainingRun, per_step: dict[int, StepSums] | None = None) -> RunWatch:
    if per_step is None:
        per_step = step_sums_by_run([run.pk]).get(run.pk, {})
    return run_watch(per_step, run_tau(run))


@dataclass(frozen=True)
class RunLine:
    """A run on the list: its row, its counts, and its watch (the alarm)."""

    run: TrainingRun
    n_calls: int
    n_steps: int
    last_call_at: datetime | None
    watch: RunWatch

    @property
    def is_live(self) -> bool:
        return is_live(self.last_call_at)


def is_live(last_call_at: datetime | None) -> bool:
    return last_call_at is not None and timezone.now() - last_call_at < LIVE_FOR


def runs_with_counts() -> QuerySet[TrainingRun]:
    """The runs, newest first, each with its number of calls, of distinct steps, and its last call's time."""
    return (
        TrainingRun.objects.select_related("judge")
        .annotate(
            n_calls=Count("calls"),
            n_steps=Count("calls__step", distinct=True),
            last_call_at=Max("calls__created_at"),
        )
        .order_by("-created_at", "-pk")
    )


def run_lines(runs: Iterable[TrainingRun]) -> list[RunLine]:
    """Runs from runs_with_counts(), each with its watch (one query for the sums of all of them)."""
    runs = list(runs)
    sums = step_sums_by_run(run.pk for run in runs)
    return [
        RunLine(
            run=run,
            n_calls=run.n_calls,  # type: ignore[attr-defined]
            n_steps=run.n_steps,  # type: ignore[attr-defined]
            last_call_at=run.last_call_at,  # type: ignore[attr-defined]
            watch=watch_of(run, sums.get(run.pk, {})),
        )
        for run in runs
    ]
