"""Agreement pages (staff only): the overview and a study's page, each drawn by the study's kind through the
registry (annotation/kinds/), and the items where a judge and the humans of a critical-failures study
disagree, side by side on the L1/L2 pair."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from h2e_site.web import staff_required
from judging.models import CriticalFailure, Generation, Judge, Judgment

from ..agreement import majority
from ..kinds import KINDS, kind_for
from ..models import AnnotatedFailure, Annotation, Study
from ..selectors import study_unlabelled_reason
from .failures import FailureView, step_links


@staff_required
@require_GET
def agreement_overview(request: HttpRequest) -> HttpResponse:
    """Each kind's part of the overview, in the registry's order (critical failures: alpha with its CI per
    study and pooled; step types: links to their Table 6 pages)."""
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


@dataclass
class Disagreement:
    generation: Generation
    judgment: Judgment
    human_labels: list[bool]
    human_majority: bool | None
    annotations: list[Annotation]

    @property
    def l1_steps(self) -> list[Any]:
        return list(self.generation.procedure.steps or [])

    @property
    def l2_steps(self) -> list[Any]:
        return list(self.generation.predicted_steps or [])

    @property
    def judge_failures(self) -> list[FailureView]:
        return [self._linked(f, "judge") for f in self.judgment.failures.all()]

    @property
    def humans(self) -> list[tuple[Annotation, list[FailureView]]]:
        return [(a, [self._linked(f, "human") for f in a.failures.all()]) for a in self.annotations]

    @property
    def n_say_failure(self) -> int:
        return sum(self.human_labels)

    def _linked(self, failure: CriticalFailure | AnnotatedFailure, source: str) -> FailureView:
        l1, l2 = (
            step_links(failure.l1_steps, len(self.l1_steps)),
            step_links(failure.l2_steps, len(self.l2_steps)),
        )
        return FailureView(failure, l1, l2, source)


@staff_required
@require_GET
def judge_disagreements(request: HttpRequest, slug: str, judge_id: str) -> HttpResponse:
    """Items where the judge's verdict differs from the human majority, or the humans tie."""
    study = get_object_or_404(Study, slug=slug)
    judge = get_object_or_404(Judge, judge_id=judge_id)
    by_generation = _annotations_by_generation(study)
    judgments = _judgments(judge, list(by_generation))
    items = []
    for generation_id, given in by_generation.items():
        judgment = judgments.get(generation_id)
        labels = [bool(annotation.has_failure) for annotation in given]  # a critical-failures study
        reference = majority(labels)
        if judgment is None or (reference is not None and judgment.has_failure == reference):
            continue
        items.append(Disagreement(judgment.generation, judgment, labels, reference, given))
    items.sort(key=lambda d: (d.human_majority is not None, d.generation.pk))
    context = {
        "study": study,
        "judge": judge,
        "items": items,
        "n_compared": len(judgments),
        "empty_reason": ""
        if items
        else _no_disagreement_reason(study, judge, len(by_generation), len(judgments)),
    }
    return render(request, "annotation/judge_disagreements.html", context)


def _no_disagreement_reason(study: Study, judge: Judge, n_labelled: int, n_compared: int) -> str:
    """Why a judge's disagreements with the humans of a study are an empty list."""
    if not n_labelled:
        return study_unlabelled_reason(study=study)
    if not n_compared:
        items = "item" if n_labelled == 1 else "items"
        return (
            f"{judge.model} has no verdict on any of the {n_labelled} {items} the annotators labelled "
            "(parse failures are no verdict)."
        )
    where = "On the one item" if n_compared == 1 else f"On each of the {n_compared} items"
    return f"{where} both labelled, {judge.model} gives the human majority's verdict."


def _annotations_by_generation(study: Study) -> dict[int, list[Annotation]]:
    """The study's annotations of regular items, with their failures, grouped by generation."""
    annotations = (
        Annotation.objects.filter(study=study)
        .not_attention_checks()
        .select_related("participant", "item")
        .with_failures()
        .order_by("item__generation_id", "submitted_at", "pk")
    )
    grouped: dict[int, list[Annotation]] = defaultdict(list)
    for annotation in annotations:
        if annotation.item.generation_id is not None:  # a critical-failures study: always
            grouped[annotation.item.generation_id].append(annotation)
    return grouped


def _judgments(judge: Judge, generation_ids: list[Any]) -> dict[int, Judgment]:
    """The judge's usable verdicts (parse failures are not verdicts) with their L1/L2 and failures."""
    rows = (
        Judgment.objects.filter(judge=judge, generation_id__in=generation_ids, parse_failed=False)
        .select_related("generation__procedure", "generation__generator")
        .with_failures()
    )
    return {judgment.generation_id: judgment for judgment in rows}
