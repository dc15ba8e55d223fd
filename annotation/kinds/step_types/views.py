"""Step-type pages and downloads (staff only): a step-types study's agreement in the layout of the SIO paper's
Table 6 (reached through /agreement/<slug>/, which hands a step-types study to `study_agreement_page`), the
same page for an imported label set, and a classifier's predictions as JSONL or CSV. (A study's labels are
downloaded through the studies' own export URLs, which ask the study's kind for its rows.)"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotation.base.beyond_majority import question_estimates
from annotation.base.models import Study
from annotation.base.selectors import study_unlabelled_reason
from annotation.kinds.step_types import exports
from annotation.kinds.step_types.agreement import label_set_agreement, study_step_types_agreement
from annotation.kinds.step_types.models import StepTypeClassifier, StepTypeLabelSet
from annotation.kinds.step_types.name import KIND
from annotation.kinds.step_types.questions import step_type_questions
from h2e_site.web import query_string, staff_required

TEMPLATE = "annotation/step_types_agreement.html"
MAX_STUDIES_ON_OVERVIEW = 50
JSONL = "application/x-ndjson"
CSV = "text/csv; charset=utf-8"


def overview_section(request: HttpRequest) -> str:
    """The step-types studies with a label, linked to their agreement pages; "" when none has one."""
    studies = list(
        Study.objects.filter(kind=KIND, annotations__isnull=False)
        .distinct()
        .order_by("-created_at", "-id")[:MAX_STUDIES_ON_OVERVIEW]
    )
    if not studies:
        return ""
    return render_to_string("annotation/_overview_step_types.html", {"studies": studies}, request=request)


def study_agreement_page(request: HttpRequest, study: Study) -> HttpResponse:
    """A step-types study's agreement (the caller, views.agreement.study_agreement_page, checked staff and
    GET and found the study)."""
    result = study_step_types_agreement(study=study)
    context = {
        "study": study,
        "result": result,
        "api_url": _api_url(study=study.slug),
        "unlabelled_reason": "" if result.n_labels else study_unlabelled_reason(study=study),
        "beyond_majority": question_estimates(step_type_questions(study)),
    }
    return render(request, TEMPLATE, context)


@staff_required
@require_GET
def label_set_list(request: HttpRequest) -> HttpResponse:
    label_sets = StepTypeLabelSet.objects.annotate(
        n_labels=Count("labels"),
        n_annotators=Count("labels__annotator", distinct=True),
        n_procedures=Count("labels__candidate__procedure", distinct=True),
    ).order_by("name")
    return render(request, "annotation/step_types_label_sets.html", {"label_sets": label_sets})


@staff_required
@require_GET
def label_set_page(request: HttpRequest, name: str) -> HttpResponse:
    label_set = get_object_or_404(StepTypeLabelSet, name=name)
    context = {
        "label_set": label_set,
        "result": label_set_agreement(label_set=label_set),
        "api_url": _api_url(label_set=label_set.name),
    }
    return render(request, TEMPLATE, context)


def _api_url(**params: str) -> str:
    return f"{reverse('step-types-agreement-api')}?{query_string(params)}"


# --- downloads -------------------------------------------------------------------------------------------


def _download(
    lines: Iterator[bytes] | Iterator[str], content_type: str, filename: str
) -> StreamingHttpResponse:
    response = StreamingHttpResponse(lines, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _step_types_study(slug: str) -> Study:
    return get_object_or_404(Study, slug=slug, kind=KIND)


def _predictions(request: HttpRequest, classifier_id: str) -> tuple[StepTypeClassifier, Study | None, str]:
    """The classifier, the study its rows are limited to (?study=<slug>), and the file's stem."""
    classifier = get_object_or_404(StepTypeClassifier, classifier_id=classifier_id)
    slug = request.GET.get("study", "")
    study = _step_types_study(slug) if slug else None
    stem = f"{classifier.classifier_id}-predictions" + (f"-{study.slug}" if study else "")
    return classifier, study, stem


@staff_required
@require_GET
def predictions_jsonl(request: HttpRequest, classifier_id: str) -> StreamingHttpResponse:
    classifier, study, stem = _predictions(request, classifier_id)
    lines = exports.jsonl_lines(exports.prediction_rows(classifier, study))
    return _download(lines, JSONL, f"{stem}.jsonl")


@staff_required
@require_GET
def predictions_csv(request: HttpRequest, classifier_id: str) -> StreamingHttpResponse:
    classifier, study, stem = _predictions(request, classifier_id)
    lines = exports.csv_lines(exports.prediction_rows(classifier, study), exports.PREDICTION_FIELDS)
    return _download(lines, CSV, f"{stem}.csv")
