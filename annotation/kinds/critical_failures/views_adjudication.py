"""Adjudicating a critical-failures study (issue #23, staff): the review queue
(annotation/kinds/critical_failures/
adjudication.py says which items), one item's page with every label side by side under its L1/L2 and the gold
form, undoing a decision, and the gold exported (as of now or any past time) with its audit log of events.

Setting gold uses the annotators' own form and rules (critical_failures/posted.py and answer.py), with a
reason; every decision is a GoldEvent (annotation/kinds/critical_failures/gold_events.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.utils.timezone import is_naive, make_aware
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.base.failure_view import FailureView, step_links
from annotation.base.models import Annotation, Study, StudyItem
from annotation.base.types import Refused
from annotation.kinds.critical_failures.adjudication import (
    OPEN,
    SHOWN,
    QueueEntry,
    next_open,
    queue_entry,
    review_queue,
)
from annotation.kinds.critical_failures.answer import check_answer
from annotation.kinds.critical_failures.gold import (
    CriticalGold,
    gold_from_json,
    gold_from_submission,
    gold_items,
)
from annotation.kinds.critical_failures.gold_events import MAX_REASON, gold_decide, gold_revert
from annotation.kinds.critical_failures.gold_export import (
    events_jsonl_lines,
    gold_csv_lines,
    gold_jsonl_lines,
)
from annotation.kinds.critical_failures.models import GoldEvent
from annotation.kinds.critical_failures.posted import FailureEntry, posted_item, submission
from h2e_site.inputs import BadInput, clean_text, one_answer
from h2e_site.web import request_user, staff_required
from judging.models import Judgment

KIND = "critical_failures"
PER_PAGE = 50
BLANK_ENTRIES = 2  # empty failure entries the gold form offers beyond those filled in


def _study(slug: str) -> Study:
    return get_object_or_404(Study, slug=slug, kind=KIND)


@staff_required
@require_GET
def adjudication_queue(request: HttpRequest, slug: str) -> HttpResponse:
    study = _study(slug)
    shown = request.GET.get("show", OPEN)
    if shown not in SHOWN:
        return HttpResponseBadRequest(f"show: {shown!r} is not one of {', '.join(SHOWN)}")
    queue = review_queue(study, shown)
    page = Paginator(queue.entries, PER_PAGE).get_page(request.GET.get("page"))
    page.object_list = queue.with_subjects(page.object_list)  # goal and generator of the page's items only
    context = {"study": study, "queue": queue, "page": page, "shown": shown, "choices": SHOWN}
    return render(request, "annotation/adjudication_queue.html", context)


# --- one item ---------------------------------------------------------------------------------------------


@dataclass
class GoldForm:
    """The gold form's values: the verdict choice ("", "yes", "no"), failure entries, reason, a refusal."""

    choice: str
    entries: list[FailureEntry]
    reason: str = ""
    error: str = ""
    error_field: str = ""


def _form_of(gold: CriticalGold | None) -> GoldForm:
    if gold is None:
        return GoldForm("", _with_blanks([]))
    entries = [
        FailureEntry(i, f.description, set(f.l1_steps), set(f.l2_steps)) for i, f in enumerate(gold.failures)
    ]
    return GoldForm("yes" if gold.has_failure else "no", _with_blanks(entries))


def _with_blanks(entries: list[FailureEntry]) -> list[FailureEntry]:
    start = max((e.index for e in entries), default=-1) + 1
    return entries + [FailureEntry(start + i, "", set(), set()) for i in range(BLANK_ENTRIES)]


def _started_from(item: StudyItem, start: str) -> CriticalGold | None:
    """The gold form filled from one annotator's or judge's answer (?start=annotation-<pk>|judgment-<pk>)."""
    source, _, pk = start.partition("-")
    if not (pk.isascii() and pk.isdigit()):
        return None
    if source == "annotation":
        annotation = Annotation.objects.filter(pk=pk, item=item).with_failures().first()
        return _gold_of(annotation.has_failure, annotation.failures.all()) if annotation else None
    if source == "judgment":
        judgment = Judgment.objects.filter(pk=pk, generation=item.generation, parse_failed=False)
        found = judgment.with_failures().first()
        return _gold_of(found.has_failure, found.failures.all()) if found else None
    return None


def _gold_of(has_failure: bool | None, failures: Any) -> CriticalGold:
    return gold_from_json(
        {
            "has_failure": bool(has_failure),
            "failures": [
                {"description": f.description, "l1_steps": _ints(f.l1_steps), "l2_steps": _ints(f.l2_steps)}
                for f in failures
            ],
        }
    ) or CriticalGold(False, [])


def _ints(values: Any) -> list[int]:
    return (
        [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
        if isinstance(values, list)
        else []
    )


@staff_required
@require_http_methods(["GET", "POST"])
def adjudicate(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    study = _study(slug)
    item = get_object_or_404(
        StudyItem.objects.select_related("generation__procedure", "generation__generator"),
        pk=item_id,
        study=study,
        is_attention_check=False,
    )
    if request.method == "POST":
        return _decide(request, study, item)
    entry = queue_entry(item)
    started = _started_from(item, request.GET.get("start", ""))
    form = _form_of(started if started is not None else entry.gold)
    return _item_page(request, entry, form)


def _decide(request: HttpRequest, study: Study, item: StudyItem) -> HttpResponse:
    n_l1, n_l2 = _n_steps(item)
    try:  # every field of the form takes one answer: sent twice, it is refused (one_answer)
        reason, action = clean_text(one_answer(request.POST, "reason")), one_answer(request.POST, "action")
    except BadInput as bad:
        return _refused(request, item, GoldForm("", _with_blanks([])), bad.message, bad.field)
    if action == "clear":
        form = GoldForm("", _with_blanks([]), reason)
        if item.pk not in gold_items(study):
            return _refused(request, item, form, "action: the item has no gold to clear", "action")
        return _record(request, study, item, None, reason, form)
    posted = posted_item(request.POST, n_l1=n_l1, n_l2=n_l2)
    posted.failures = [f for f in posted.failures if f.description or f.l1 or f.l2]  # unused blank entries
    form = GoldForm(posted.choice, posted.failures, reason)
    if posted.problem is not None:
        return _refused(request, item, form, str(posted.problem), posted.problem.field)
    answer = submission(posted, QueryDict(), user_agent="")
    try:
        check_answer(answer, n_l1=n_l1, n_l2=n_l2)
    except Refused as refused:
        return _refused(request, item, form, str(refused), refused.field)
    return _record(request, study, item, gold_from_submission(answer), reason, form)


def _record(
    request: HttpRequest,
    study: Study,
    item: StudyItem,
    gold: CriticalGold | None,
    reason: str,
    form: GoldForm,
) -> HttpResponse:
    try:
        gold_decide(
            item=item, verdict=gold.as_json() if gold else None, reason=reason, user=request_user(request)
        )
    except ValueError as refused:
        return _refused(request, item, form, str(refused), "reason")
    said = (
        "cleared" if gold is None else ("a critical failure" if gold.has_failure else "no critical failure")
    )
    messages.success(request, f"Item {item.position}: gold set to {said}.")
    following = next_open(study, after=item)
    if following is None:
        return redirect(reverse("annotation:adjudication_queue", args=[study.slug]))
    return redirect(reverse("annotation:adjudicate", args=[study.slug, following.pk]))


def _refused(request: HttpRequest, item: StudyItem, form: GoldForm, error: str, field: str) -> HttpResponse:
    """The item page again (400) with the refusal beside the entry or field it concerns: "failure:<n>" (the
    n-th entry, from check_answer) or "failure-<index>-<part>" (a value that did not parse)."""
    target = _entry_of(field, form.entries)
    if target is not None:
        form.entries = [e.with_error(error) if e.index == target else e for e in form.entries]
    form.error, form.error_field = error, "failure" if target is not None else field
    form.entries = _with_blanks(form.entries)
    return _item_page(request, queue_entry(item), form, status=400)


def _entry_of(field: str, entries: list[FailureEntry]) -> int | None:
    head, _, rest = field.partition(":")
    if head == "failure" and rest.isascii() and rest.isdigit() and 0 < int(rest) <= len(entries):
        return entries[int(rest) - 1].index
    parts = field.split("-")
    if parts[0] == "failure" and len(parts) == 3 and parts[1].isascii() and parts[1].isdigit():
        return int(parts[1])
    return None


def _n_steps(item: StudyItem) -> tuple[int, int]:
    generation = item.generation
    assert generation is not None  # a critical-failures item is a generation
    return len(generation.procedure.steps or []), len(generation.predicted_steps or [])


@dataclass
class Verdict:
    """One label shown side by side: an annotator's or a judge's, with its failures linked to steps."""

    who: str
    has_failure: bool | None
    failures: list[FailureView]
    start: str  # the ?start= value that fills the gold form from it
    comment: str = ""


def _item_page(request: HttpRequest, entry: QueueEntry, form: GoldForm, status: int = 200) -> HttpResponse:
    item = entry.item
    n_l1, n_l2 = _n_steps(item)

    def linked(failures: Any, source: str) -> list[FailureView]:
        return [
            FailureView(f, step_links(f.l1_steps, n_l1), step_links(f.l2_steps, n_l2), source)
            for f in failures
        ]

    context = {
        "study": item.study,
        "item": item,
        "generation": item.generation,
        "entry": entry,
        "humans": [
            Verdict(
                a.participant.prolific_pid,
                a.has_failure,
                linked(a.failures.all(), "human"),
                f"annotation-{a.pk}",
                a.comments,
            )
            for a in _annotations(item)
        ],
        "judges": [
            Verdict(j.judge.model, j.has_failure, linked(j.failures.all(), "judge"), f"judgment-{j.pk}")
            for j in _judgments(item)
        ],
        "gold_failures": linked(entry.gold.failures, "gold") if entry.gold else [],
        "events": _events(item),
        "form": form,
        "l1_numbers": range(1, n_l1 + 1),
        "reading_numbers": range(1, n_l2 + 1),
        "max_reason": MAX_REASON,
    }
    return render(request, "annotation/adjudicate.html", context, status=status)


def _annotations(item: StudyItem) -> list[Annotation]:
    rows = Annotation.objects.filter(item=item).select_related("participant").with_failures()
    return list(rows.order_by("submitted_at", "pk"))


def _judgments(item: StudyItem) -> list[Judgment]:
    rows = Judgment.objects.filter(generation=item.generation, parse_failed=False)
    return list(rows.select_related("judge").with_failures().order_by("judge__model", "judge__judge_id"))


@dataclass(frozen=True)
class EventLine:
    event: GoldEvent
    after: str
    before: str


def _said(verdict: Any) -> str:
    gold = gold_from_json(verdict)
    if gold is None:
        return "no gold"
    if not gold.has_failure:
        return "no critical failure"
    n = len(gold.failures)
    return f"critical failure ({n} listed)" if n != 1 else "critical failure (1 listed)"


def _events(item: StudyItem) -> list[EventLine]:
    events = GoldEvent.objects.filter(item=item).select_related("decided_by").order_by("-decided_at", "-id")
    return [EventLine(e, _said(e.verdict), _said(e.before)) for e in events]


@staff_required
@require_POST
def gold_undo(request: HttpRequest, slug: str, item_id: int, event_id: int) -> HttpResponse:
    """Undo one decision: a new event restoring the gold it replaced, with the reviewer's reason."""
    study = _study(slug)
    event = get_object_or_404(GoldEvent, pk=event_id, item_id=item_id, item__study=study)
    try:
        gold_revert(
            event=event, reason=clean_text(request.POST.get("reason", "")), user=request_user(request)
        )
    except ValueError as refused:
        messages.error(request, f"Not undone: {refused}")
        return redirect(reverse("annotation:adjudicate", args=[study.slug, item_id]) + "#history")
    again = "the item has no gold" if event.before is None else f"the gold is {_said(event.before)}"
    messages.success(request, f"Undone: {again} again.")
    return redirect(reverse("annotation:adjudicate", args=[study.slug, item_id]) + "#history")


# --- exports ---------------------------------------------------------------------------------------------


def _as_of(request: HttpRequest) -> datetime | None:
    """?at=<ISO 8601 date-time>: the gold as of then (a naive time is in the site's time zone)."""
    value = request.GET.get("at", "").strip()
    if not value:
        return None
    try:
        at = parse_datetime(value)
    except ValueError:
        at = None
    if at is None:
        raise BadInput("at", value, "an ISO 8601 date-time, e.g. 2026-11-27T18:00:00Z")
    return make_aware(at) if is_naive(at) else at


def _download(request: HttpRequest, slug: str, suffix: str, content_type: str, lines: Any) -> HttpResponse:
    study = _study(slug)
    try:
        at = _as_of(request)
    except BadInput as bad:
        return HttpResponseBadRequest(str(bad))
    response = HttpResponse("".join(lines(study, at)), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-{suffix}"'
    return response


@staff_required
@require_GET
def gold_jsonl(request: HttpRequest, slug: str) -> HttpResponse:
    return _download(request, slug, "gold.jsonl", "application/x-ndjson", gold_jsonl_lines)


@staff_required
@require_GET
def gold_csv(request: HttpRequest, slug: str) -> HttpResponse:
    return _download(request, slug, "gold.csv", "text/csv; charset=utf-8", gold_csv_lines)


@staff_required
@require_GET
def gold_events_jsonl(request: HttpRequest, slug: str) -> HttpResponse:
    return _download(request, slug, "gold-events.jsonl", "application/x-ndjson", events_jsonl_lines)


__all__ = ["adjudicate", "adjudication_queue", "gold_csv", "gold_events_jsonl", "gold_jsonl", "gold_undo"]
