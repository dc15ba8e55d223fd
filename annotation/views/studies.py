"""Researcher pages (staff only): studies, their progress per item and per annotator, exports."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
from django.contrib import messages
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from h2e_site.inputs import BadInput
from h2e_site.web import SafeDictWriter, staff_required

from .. import codebook, selectors, services
from ..forms import StudyForm
from ..kinds import kind_for
from ..models import Study, StudyKind


@staff_required
@require_GET
def study_list(request: HttpRequest) -> HttpResponse:
    studies = selectors.studies_with_progress()[:200]
    return render(request, "annotation/study_list.html", {"studies": studies})


def _selection(form: StudyForm) -> services.Selection:
    data = form.cleaned_data
    return services.Selection(
        topic_ids=[t.pk for t in data["topics"]],
        generator_ids=[g.pk for g in data.get("generators", [])],
        disagreeing_judge_ids=[j.pk for j in data.get("disagreeing_judges", [])],
        splits=list(data.get("splits", [])),
        task_set=data.get("task_set", ""),
        tasks=list(data.get("tasks", [])),
        sample_size=data["sample_size"],
        seed=data["seed"],
    )


def _kind(request: HttpRequest) -> str:
    """The kind the builder makes (?kind= or the posted field); an unknown one is a 400 naming it."""
    kind = (request.POST.get("kind") or request.GET.get("kind") or StudyKind.CRITICAL_FAILURES).strip()
    if kind not in StudyKind.values:
        raise BadInput("kind", kind, f"one of {', '.join(StudyKind.values)}")
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
        settings.update({k: data[k] for k in ("completion_code", "screenout_code") if data[k]})
        try:
            study = services.study_create(
                title=data["title"],
                slug=data["slug"],
                kind=kind,
                selection=_selection(form),
                attention_checks=data["attention_checks"],
                created_by=request.user,
                **settings,
            )
        except ValidationError as refused:
            _refusal_on_form(form, refused)
        else:
            count = study.items.not_attention_checks().count()
            messages.success(request, f"Study created with {count} items.")
            return redirect("annotation:study_detail", slug=study.slug)
    context = {"form": form, "kind": kind, "kinds": StudyKind.choices}
    status = 400 if form.is_bound and form.errors else 200
    return render(request, "annotation/study_form.html", context, status=status)


def _refusal_on_form(form: StudyForm, refused: ValidationError) -> None:
    """The service's refusal shown next to the fields it names (the others above the form)."""
    for name, errors in refused.message_dict.items():
        if name in form.fields:
            form.add_error(name, errors)
        else:
            form.add_error(None, [e if name == NON_FIELD_ERRORS else f"{name}: {e}" for e in errors])


@staff_required
@require_GET
def study_detail(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    context = {
        "study": study,
        "progress": selectors.study_progress(study=study),
        "items": selectors.study_items_progress(study=study),
        "participants": selectors.study_participants_progress(study=study),
        "entry_path": request.build_absolute_uri(reverse("annotator:entry", kwargs={"slug": study.slug})),
    }
    return render(request, "annotation/study_detail.html", context)


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


class _Echo:
    def write(self, value: str) -> str:
        return value


def _csv(study: Study) -> Iterator[str]:
    spec = kind_for(study)
    writer = SafeDictWriter(_Echo(), fieldnames=spec.export_fields())
    yield writer.writeheader()
    for row in spec.export_rows(study):
        yield writer.writerow({k: selectors.csv_cell(v) for k, v in row.items()})


@staff_required
@require_GET
def study_export_csv(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    response = HttpResponse("".join(_csv(study)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-annotations.csv"'
    return response
