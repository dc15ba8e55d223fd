"""Agreement pages (staff only): the overview, a study's page and a judge's disagreements with a study's
humans, each drawn by the study's kind through the registry (annotation/kinds/)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotation.base.models import Study
from annotation.base.registry import KINDS, kind_for
from h2e_site.web import staff_required


@staff_required
@require_GET
def agreement_overview(request: HttpRequest) -> HttpResponse:
    """Each kind's part of the overview (`StudyKindSpec.agreement_overview`), in the registry's order."""
    sections = [spec.agreement_overview(request) for spec in KINDS.values() if spec.on_overview]
    sections = [section for section in sections if section]
    context = {"sections": sections, "empty_reason": "" if sections else _overview_empty_reason()}
    return render(request, "annotation/agreement_overview.html", context)


def _overview_empty_reason() -> str:
    """Why the overview has no study to show: no study of a kind it covers, or none with a label yet."""
    kinds = [spec for spec in KINDS.values() if spec.on_overview]
    n_studies = Study.objects.filter(kind__in=[spec.kind for spec in kinds]).count()
    if not n_studies:
        return f"No {' or '.join(spec.noun for spec in kinds)} study exists yet."
    studies = "The study has no" if n_studies == 1 else f"None of the {n_studies} studies has a"
    return f"{studies} human label yet (attention checks never count)."


@staff_required
@require_GET
def study_agreement_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The study's agreement page, as its kind draws it."""
    study = get_object_or_404(Study, slug=slug)
    return kind_for(study).agreement_page(request, study)


@staff_required
@require_GET
def judge_disagreements(request: HttpRequest, slug: str, judge_id: str) -> HttpResponse:
    """Where a judge and the study's humans disagree, as the study's kind shows it."""
    study = get_object_or_404(Study, slug=slug)
    return kind_for(study).judge_disagreements_page(request, study, judge_id)
