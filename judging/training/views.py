"""Staff pages of the training runs (issue #32 item 3).

- /training/runs/ (the "Training" entry of the navigation): the runs that asked the reward service for
  rewards, newest first: policy, reward config, judge, steps seen, calls, last call and the alarm.
- /training/runs/<name>/: a run's header (policy, reward config with its weights, tau and alpha, judge),
  the length-gaming alarm, charts over steps (How2Score, the length ratio with [1 - tau, 1 + tau] shaded,
  the format pass rate) and the figures per step or bucket of steps with their intervals (watch.py).
  While the run is live (a call in the last ten minutes) its body reloads itself every five seconds
  (htmx: the same view renders the fragment).
Anonymous users go to the login page; signed-in non-staff users get 403.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from h2e_site.web import HtmxHttpRequest, staff_required, wants_fragment

from .charts import run_charts
from .selectors import is_live, run_lines, runs_with_counts, watch_of
from .watch import Bucket, Interval, RunWatch

RUNS_PER_PAGE = 50
POLL_SECONDS = 5
COMPONENT_NAMES = (("how2score", "How2Score"), ("format", "format"), ("length", "length"))


@staff_required
@require_GET
def run_list(request: HtmxHttpRequest) -> HttpResponse:
    """The training runs, newest first, 50 a page, each with its alarm."""
    page = Paginator(runs_with_counts(), RUNS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "judging/training/runs.html", {"page": page, "lines": run_lines(page)})


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def run_detail(request: HtmxHttpRequest, name: str) -> HttpResponse:
    """A run: its header, alarm, charts and per-step table; the body alone for htmx's polling."""
    run = get_object_or_404(runs_with_counts(), name=name)
    watch = watch_of(run)
    live = is_live(run.last_call_at)  # type: ignore[attr-defined]
    context = {
        "run": run,
        "watch": watch,
        "charts": run_charts(watch) if watch.buckets else [],
        "rows": bucket_rows(watch),
        "weights": _weights(run.reward_config),
        "live": live,
        "poll_seconds": POLL_SECONDS,
        "n_without_step": run.calls.filter(step__isnull=True).count(),
    }
    template = (
        "judging/training/run.html#run-body" if wants_fragment(request) else "judging/training/run.html"
    )
    return render(request, template, context)


def _weights(config: object) -> list[tuple[str, object]]:
    weights = config.get("weights", {}) if isinstance(config, dict) else {}
    weights = weights if isinstance(weights, dict) else {}
    return [(label, weights.get(name, "—")) for name, label in COMPONENT_NAMES]


@dataclass(frozen=True)
class PercentShare:
    """A share as the table writes it: the percentage, its interval in percent, over n."""

    percent: float | None
    low: float | None
    high: float | None
    n: int

    @classmethod
    def of(cls, value: float | None, interval: Interval | None, n: int) -> PercentShare:
        if value is None or interval is None:
            return cls(None, None, None, n)
        return cls(100 * value, 100 * interval[0], 100 * interval[1], n)


@dataclass(frozen=True)
class BucketRow:
    bucket: Bucket
    how2score: PercentShare
    how2score_format_ok: PercentShare
    format_rate: PercentShare
    store_percent: float | None
    is_alarm: bool


def bucket_rows(watch: RunWatch) -> list[BucketRow]:
    """The table's rows: each bucket's shares in percent; the row the alarm was raised at marked."""
    return [
        BucketRow(
            bucket=b,
            how2score=PercentShare.of(b.how2score, b.how2score_interval, b.n_scored),
            how2score_format_ok=PercentShare.of(
                b.how2score_format_ok, b.how2score_format_ok_interval, b.n_scored_format_ok
            ),
            format_rate=PercentShare.of(b.format_rate, b.format_interval, b.n_format),
            store_percent=None if b.store_share is None else 100 * b.store_share,
            is_alarm=watch.alarm.flagged and b.first_step == watch.alarm.from_step,
        )
        for b in watch.buckets
    ]
