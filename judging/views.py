"""HTML pages for staff: leaderboard, generator, generation (L1 vs L2 with critical failures), jobs.

A page and its htmx update render the same `{% partialdef %}` fragment; htmx links also work as plain links.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails

from . import selectors
from .models import CriticalFailure, Generation, Generator, Job, Judge, Judgment

View = Callable[..., HttpResponse]


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def staff_required(view: View) -> View:
    """Anonymous users go to the login page; signed-in non-staff users get 403."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied("Staff only.")
        return view(request, *args, **kwargs)

    return wrapped


def _query_ids(request: HttpRequest, name: str) -> list[str]:
    return [v.strip() for raw in request.GET.getlist(name) for v in raw.split(",") if v.strip()]


# --- Leaderboard ---


@dataclass(frozen=True)
class LeaderboardLine:
    row: selectors.LeaderboardRow
    rank: int  # among the generators scored by the same judge: scores by different judges don't compare
    generator_pk: int | None
    judge_is_demo: bool


def _leaderboard_lines(judge_ids: list[str], judges: list[Judge]) -> list[LeaderboardLine]:
    rows = selectors.how2score_leaderboard(judge_ids=judge_ids)
    generator_pks = dict(
        Generator.objects.filter(generator_id__in={r.generator_id for r in rows}).values_list(
            "generator_id", "pk"
        )
    )
    demo = {j.judge_id for j in judges if j.is_demo_model}
    ranks: Counter[str] = Counter()
    lines = []
    for row in rows:
        ranks[row.judge_id] += 1
        lines.append(
            LeaderboardLine(
                row, ranks[row.judge_id], generator_pks.get(row.generator_id), row.judge_id in demo
            )
        )
    return lines


def wants_fragment(request: HtmxHttpRequest) -> bool:
    """An htmx swap asks for the fragment; a history restore needs the whole page."""
    return bool(request.htmx) and not request.htmx.history_restore_request


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def leaderboard(request: HtmxHttpRequest) -> HttpResponse:
    judge_ids = _query_ids(request, "judge")
    judges = list(Judge.objects.order_by("model", "judge_id"))
    context = {
        "lines": _leaderboard_lines(judge_ids, judges),
        "judges": judges,
        "selected_judge": judge_ids[0] if len(judge_ids) == 1 else "",
        "judge_query": ",".join(judge_ids),
        "has_demo_judge": any(j.is_demo_model for j in judges),
    }
    template = (
        "judging/leaderboard.html#leaderboard-table"
        if wants_fragment(request)
        else "judging/leaderboard.html"
    )
    return render(request, template, context)


@staff_required
@require_GET
def leaderboard_csv(request: HttpRequest) -> HttpResponse:
    rows = selectors.how2score_leaderboard(judge_ids=_query_ids(request, "judge"))
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="how2score_leaderboard.csv"'
    fields = list(selectors.LeaderboardRow("", "", "", "", selectors.How2Score(0, 0, 0, 0)).as_json())
    writer = csv.DictWriter(response, fieldnames=fields)
    writer.writeheader()
    writer.writerows(row.as_json() for row in rows)
    return response


# --- Generator ---


@staff_required
@require_GET
def generator_detail(request: HttpRequest, pk: int) -> HttpResponse:
    generator = get_object_or_404(Generator, pk=pk)
    judges = list(Judge.objects.filter(pk__in=_judge_pks_of(generator)).order_by("model", "judge_id"))
    generations = (
        Generation.objects.filter(generator=generator)
        .select_related("procedure__topic")
        .prefetch_related(
            Prefetch(
                "judgments",
                queryset=Judgment.objects.only(
                    "id", "generation_id", "judge_id", "parse_failed", "has_failure", "n_failures"
                ),
            )
        )
        .order_by("procedure__source_example_id")
    )
    page = Paginator(generations, 50).get_page(request.GET.get("page"))
    rows = [(g, _verdicts_by_judge(g, judges)) for g in page.object_list]
    scores = selectors.how2score_leaderboard(generator_ids=[generator.generator_id])
    context = {
        "generator": generator,
        "judges": judges,
        "demo_judge_ids": {j.judge_id for j in judges if j.is_demo_model},
        "page": page,
        "rows": rows,
        "scores": scores,
    }
    return render(request, "judging/generator.html", context)


def _judge_pks_of(generator: Generator) -> list[int]:
    return list(
        Judgment.objects.filter(generator=generator).order_by().values_list("judge_id", flat=True).distinct()
    )


def _verdicts_by_judge(generation: Generation, judges: list[Judge]) -> list[Judgment | None]:
    by_judge = {j.judge_id: j for j in generation.judgments.all()}
    return [by_judge.get(judge.pk) for judge in judges]


# --- Generation ---


@dataclass(frozen=True)
class StepLink:
    """A step number a critical failure points at; `valid` is False when the step list has no such step."""

    label: str
    number: int | None
    valid: bool


@dataclass(frozen=True)
class FailureView:
    failure: CriticalFailure
    l1: list[StepLink]
    l2: list[StepLink]

    @property
    def l1_attr(self) -> str:
        return " ".join(str(s.number) for s in self.l1 if s.valid)

    @property
    def l2_attr(self) -> str:
        return " ".join(str(s.number) for s in self.l2 if s.valid)


def step_links(values: Any, n_steps: int) -> list[StepLink]:
    """Step numbers as judged (1-based), each checked against the step list; odd values never raise."""
    links = []
    for value in values if isinstance(values, list) else [values]:
        number = None
        if not isinstance(value, bool):
            try:
                number = int(str(value).strip())
            except ValueError:
                number = None
        valid = number is not None and 1 <= number <= n_steps
        links.append(StepLink(label=str(value), number=number, valid=valid))
    return links


@staff_required
@require_GET
def generation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    generation = get_object_or_404(Generation.objects.select_related("generator", "procedure__topic"), pk=pk)
    l1_steps: list[Any] = list(generation.procedure.steps or [])
    l2_steps: list[Any] = list(generation.predicted_steps or [])
    judgments = generation.judgments.select_related("judge").prefetch_related(
        Prefetch("failures", queryset=CriticalFailure.objects.order_by("order"))
    )
    judged = [
        (
            judgment,
            [
                FailureView(f, step_links(f.l1_steps, len(l1_steps)), step_links(f.l2_steps, len(l2_steps)))
                for f in judgment.failures.all()
            ],
        )
        for judgment in judgments.order_by("judge__model", "judge__judge_id")
    ]
    context = {"generation": generation, "l1_steps": l1_steps, "l2_steps": l2_steps, "judged": judged}
    return render(request, "judging/generation.html", context)


# --- Jobs ---


@staff_required
@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(Job.objects.select_related("created_by"), 50).get_page(request.GET.get("page"))
    return render(request, "judging/jobs.html", {"page": page})


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def job_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The job page; an htmx poll gets only its row (without the poll trigger once the job is finished)."""
    job = get_object_or_404(Job.objects.select_related("created_by"), pk=pk)
    if wants_fragment(request):
        return render(request, "judging/jobs.html#job-row", {"job": job})
    return render(request, "judging/job_detail.html", {"job": job})
