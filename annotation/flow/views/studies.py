"""Researcher pages (staff only): studies, their progress per item and per annotator, exports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.base import codebook, selectors
from annotation.base.models import Study
from annotation.base.registry import KINDS, kind_for, study_page_parts
from annotation.base.spec import refusal_on_form
from annotation.base.types import kind_choices
from annotation.flow import services
from annotation.flow.forms import StudyForm
from h2e_site.inputs import BadInput
from h2e_site.web import csv_lines, staff_required

ITEMS_PER_PAGE = 100  # the study page's item table (a calibration study has thousands: issue #31 item 22)
ANNOTATORS_PER_PAGE = 100  # and its annotators (600 for a 10,000-item study)


@staff_required
@require_GET
def study_list(request: HttpRequest) -> HttpResponse:
    studies = selectors.studies_with_progress()[:200]
    return render(request, "annotation/study_list.html", {"studies": studies, "kinds": list(KINDS.items())})


def _kind(request: HttpRequest) -> str:
    """The kind the builder makes (?kind= or the posted field); an unknown one is a 400 naming it."""
    kind = (request.POST.get("kind") or request.GET.get("kind") or services.default_kind()).strip()
    if kind not in KINDS:
        raise BadInput("kind", kind, f"one of {', '.join(KINDS)}")
    return kind


@staff_required
@require_http_methods(["GET", "POST"])
def study_create(request: HttpRequest) -> HttpResponse:
    try:
        kind = _kind(request)
    except BadInput as bad:
        return HttpResponseBadRequest(bad.message)
    form = StudyForm(request.POST or None, kind=kind)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        settings = {
            name: data[name]
            for name in (
                "prolific_study_id",
                "annotators_per_item",
                "items_per_participant",
                "min_dwell_seconds",
                "estimated_item_minutes",
                "attention_check_every",
                "instructions",
                "consent_text",
                "training_text",
                "comprehension_questions",
            )
        }
        settings["lease_minutes"] = data["lease_minutes"] or codebook.prolific_max_minutes(
            data["estimated_item_minutes"]
        )
        if data["attention_fail_limit"] is not None:
            settings["attention_fail_limit"] = data["attention_fail_limit"]
        codes = ("completion_code", "screenout_code", "attention_failed_code")
        settings.update({k: data[k] for k in codes if data[k]})
        try:
            study = services.study_create(
                title=data["title"],
                slug=data["slug"],
                kind=kind,
                selection=form.selection(),
                attention_checks=data["attention_checks"],
                created_by=request.user,
                **settings,
            )
        except ValidationError as refused:
            refusal_on_form(form, refused, form.selection_names())
        else:
            count = study.items.not_attention_checks().count()
            messages.success(request, f"Study created with {count} items.")
            return redirect("annotation:study_detail", slug=study.slug)
    context = {"form": form, "kind": kind, "kinds": kind_choices()}
    status = 400 if form.is_bound and form.errors else 200
    return render(request, "annotation/study_form.html", context, status=status)


def _detail_context(request: HttpRequest, study: Study, refused: forms.Form | None = None) -> dict[str, Any]:
    """The study page: the engine's progress, items and annotators, and the kind's own parts (its item
    table, its section, its links and annotator columns: annotation/base/spec.py)."""
    spec = kind_for(study)
    items = selectors.study_items_progress(study=study, listed=spec.item_listed)
    participants = spec.annotate_participants(selectors.study_participants_progress(study=study))
    return {
        "study": study,
        "kind": spec,
        "kind_links": spec.study_links(study),
        "progress": selectors.study_progress(study=study),
        "items": Paginator(spec.annotate_items(items), ITEMS_PER_PAGE).get_page(request.GET.get("page")),
        "participants": _annotators_page(request, participants, spec.participant_columns),
        "entry_path": request.build_absolute_uri(reverse("annotator:entry", kwargs={"slug": study.slug})),
        **study_page_parts(request, study),
        **spec.study_page_context(request, study, refused),
    }


def _annotators_page(request: HttpRequest, participants: Any, columns: tuple[tuple[str, str], ...]) -> Any:
    """A page of the study's annotators (?annotators=<n>), each with its kind's values."""
    page = Paginator(participants, ANNOTATORS_PER_PAGE).get_page(request.GET.get("annotators"))
    page.object_list = [_with_kind_values(p, columns) for p in page.object_list]
    return page


def _with_kind_values(participant: Any, columns: tuple[tuple[str, str], ...]) -> Any:
    participant.kind_values = [getattr(participant, name) for _, name in columns]
    return participant


@staff_required
@require_GET
def study_detail(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    return render(request, "annotation/study_detail.html", _detail_context(request, study))


@staff_required
@require_POST
def study_page_post(request: HttpRequest, slug: str) -> HttpResponse:
    """A POST of the form in the kind's part of the study page (its `study_page_post`); refused: the page
    again with the form's errors (400)."""
    study = get_object_or_404(Study, slug=slug)
    answer = kind_for(study).study_page_post(request, study)
    if isinstance(answer, HttpResponse):
        return answer
    context = _detail_context(request, study, answer)
    return render(request, "annotation/study_detail.html", context, status=400)


@staff_required
@require_POST
def study_toggle_open(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    services.study_set_open(study=study, is_open=not study.is_open)
    messages.success(request, f"Study {'opened' if study.is_open else 'closed'}.")
    return redirect("annotation:study_detail", slug=study.slug)


def _jsonl(study: Study) -> Iterator[bytes]:
    for row in kind_for(study).export_rows(study):
        yield orjson.dumps(row) + b"\n"


@staff_required
@require_GET
def study_export_jsonl(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    response = HttpResponse(b"".join(_jsonl(study)), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-annotations.jsonl"'
    return response


def _csv(study: Study) -> Iterator[str]:
    spec = kind_for(study)
    rows = ({k: selectors.csv_cell(v) for k, v in row.items()} for row in spec.export_rows(study))
    return csv_lines(rows, spec.export_fields())


@staff_required
@require_GET
def study_export_csv(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    response = HttpResponse("".join(_csv(study)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-annotations.csv"'
    return response
