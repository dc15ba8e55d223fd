"""A critical-failures study's agreement page (human alpha, each judge against the human majority), a judge's
disagreements with its humans, the kind's part of the agreement overview (alpha per study and pooled), and
its part of the study page (the calibration sample and the form of its next round). Reached through the kind
registry: annotation/kinds/critical_failures/spec.py hands these to the flow's views by name."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse

from annotation.base.beyond_majority import question_estimates
from annotation.base.charts import Bar, BarChart, bar_chart
from annotation.base.failure_view import FailureView, step_links
from annotation.base.job_kinds import CALIBRATION_ROUND
from annotation.base.models import AnnotatedFailure, Annotation, Study
from annotation.base.selectors import study_unlabelled_reason
from annotation.base.spec import refusal_on_form
from annotation.kinds.critical_failures.agreement_data import (
    StudyAgreement,
    studies_agreement,
    study_agreement,
)
from annotation.kinds.critical_failures.calibration import sample as calibration_sample
from annotation.kinds.critical_failures.calibration.calibrated import not_calibration_reason
from annotation.kinds.critical_failures.calibration.forms import CalibrationRoundForm
from annotation.kinds.critical_failures.calibration.jobs import calibration_round_job_create
from annotation.kinds.critical_failures.name import KIND
from annotation.kinds.critical_failures.questions import has_failure_question
from h2e_site.jobs.models import Job
from h2e_site.jobs.views import job_lines
from h2e_site.stats import wilson_interval
from h2e_site.stats.verdicts import majority
from h2e_site.web import can_run_jobs, request_user
from judging.models import CriticalFailure, Generation, Judge, Judgment

MAX_STUDIES_ON_OVERVIEW = 50
RECENT_ROUND_JOBS = 5  # calibration_round jobs listed on the study page


def overview_section(request: HttpRequest) -> str:
    """Alpha with its CI for each critical-failures study with a label, and for all of them pooled; "" when
    none has a label."""
    studies = Study.objects.filter(kind=KIND).order_by("-created_at", "-id")
    rows = [
        (study, study_agreement(study=study, with_judges=False))
        for study in studies[:MAX_STUDIES_ON_OVERVIEW]
    ]
    rows = [(study, result) for study, result in rows if result.n_labels]
    if not rows:
        return ""
    everything = studies_agreement(studies=[study for study, _ in rows]) if len(rows) > 1 else None
    chart = bar_chart(
        "Krippendorff's alpha on has_failure (95 % bootstrap CI)",
        [_alpha_bar(study.title, result) for study, result in rows]
        + ([_alpha_bar("All studies pooled", everything, kind="human")] if everything else []),
        percent=False,
    )
    context = {"rows": rows, "everything": everything, "chart": chart}
    return render_to_string("annotation/_overview_critical_failures.html", context, request=request)


def _alpha_bar(label: str, result: StudyAgreement, kind: str = "alpha") -> Bar:
    note = "undefined" if result.alpha_binary is None else f"{result.alpha_binary:.3f}"
    return Bar(label, result.alpha_binary, result.ci.low, result.ci.high, note=note, kind=kind)


def study_agreement_page(request: HttpRequest, study: Study) -> HttpResponse:
    """A critical-failures study's agreement (the caller, views.agreement.study_agreement_page, checked staff
    and GET and found the study)."""
    result = study_agreement(study=study)
    context = {
        "study": study,
        "result": result,
        "alpha_chart": _alpha_chart(result),
        "judge_chart": _judge_chart(result),
        "unlabelled_reason": "" if result.n_labels else study_unlabelled_reason(study=study),
        "no_judge_reason": "" if result.judges or not result.n_labels else _no_judge_reason(study, result),
        "beyond_majority": question_estimates([has_failure_question(study)]),
    }
    return render(request, "annotation/study_agreement.html", context)


def _no_judge_reason(study: Study, result: StudyAgreement) -> str:
    """Why no judge is compared with the humans of a study that has labels."""
    judged = (
        Judgment.objects.filter(
            generation__study_items__study=study, generation__study_items__is_attention_check=False
        )
        .values("judge_id")
        .distinct()
        .count()
    )
    if not judged:
        return "No judge has judged this study's generations yet."
    judges = f"{judged} judge{'s' if judged != 1 else ''}"
    return (
        f"{judges} judged generations of this study, but none of the {result.n_items} item"
        f"{'s' if result.n_items != 1 else ''} the annotators have labelled."
    )


def _alpha_chart(result: StudyAgreement) -> BarChart:
    def note(value: float | None) -> str:
        return "undefined" if value is None else f"{value:.3f}"

    bars = [
        Bar(
            "has_failure (binary)",
            result.alpha_binary,
            result.ci.low,
            result.ci.high,
            note(result.alpha_binary),
        ),
        Bar("first failure location", result.alpha_first_failure, note=note(result.alpha_first_failure)),
        Bar("linked step sets (MASI)", result.alpha_step_sets, note=note(result.alpha_step_sets)),
    ]
    return bar_chart("Krippendorff's alpha between annotators", bars, percent=False)


def _judge_chart(result: StudyAgreement) -> BarChart:
    bars = []
    for figures in result.judges:
        overall = figures.agreement.overall
        interval = wilson_interval(overall.agreed, overall.n)
        low, high = interval if interval else (None, None)
        kind = "demo" if figures.judge.is_demo_model else "judge"
        note = f"{overall.rate:.1%} of {overall.n}" if overall.rate is not None else "no items"
        bars.append(Bar(figures.judge.model, overall.rate, low, high, note, kind))
    pooled = result.ceiling_pooled  # on the items with a human majority, as the judges' agreement
    if pooled.n:
        interval = wilson_interval(pooled.agreed, pooled.n)
        low, high = interval if interval else (None, None)
        bars.append(Bar("humans, leave-one-out", pooled.rate, low, high, f"{pooled.rate:.1%}", "human"))
    band = result.ceiling_range
    return bar_chart(
        "Agreement with the human majority (95 % Wilson CI)",
        bars,
        band=band,
        band_label="range of single annotators, leave-one-out" if band else "",
    )


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


def judge_disagreements_page(request: HttpRequest, study: Study, judge_id: str) -> HttpResponse:
    """Items where the judge's verdict differs from the human majority, or the humans tie, side by side on
    the L1/L2 pair (the caller, views.agreement.judge_disagreements, checked staff and GET and found the
    study)."""
    judge = get_object_or_404(Judge, judge_id=judge_id)
    by_generation = _annotations_by_generation(study)
    judgments = _judgments(judge, list(by_generation))
    items = []
    for generation_id, given in by_generation.items():
        judgment = judgments.get(generation_id)
        labels = [bool(annotation.has_failure) for annotation in given]
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
        if annotation.item.generation_id is not None:  # always, in a critical-failures study
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


# The round form's names of the service's fields.
ROUND_FORM_NAMES = {"judge_ids": "judges"}


def calibration_section_context(
    request: HttpRequest, study: Study, refused: forms.Form | None
) -> dict[str, Any]:
    """The study page's calibration sample section (the kind's `study_page_context`): its rounds, the recent
    calibration_round jobs and the form of the next round (refused: with errors)."""
    summary = calibration_sample.calibration_summary(study)
    jobs = Job.objects.select_related("created_by").filter(kind=CALIBRATION_ROUND, parameters__study=study.pk)
    return {
        "calibration": summary,
        "round_form": refused or (CalibrationRoundForm() if summary else None),
        "not_calibration": not_calibration_reason(study) if summary is None else "",
        "round_in_job": summary is not None and summary.frame_size > calibration_sample.ROUND_JOB_FRAME,
        "round_job_frame": calibration_sample.ROUND_JOB_FRAME,
        "round_job_lines": job_lines(list(jobs[:RECENT_ROUND_JOBS])) if summary else [],
        "can_run": can_run_jobs(request),
    }


def calibration_round_post(request: HttpRequest, study: Study) -> HttpResponse | forms.Form:
    """Draw the next round of a calibration study (its page's form): back to the page, or the form with its
    errors (the caller, views.studies.study_page_post, checked staff and POST and found the study)."""
    form = CalibrationRoundForm(request.POST)
    if not form.is_valid():
        return form
    data = form.cleaned_data
    judges = [j.pk for j in data["judges"]] or None
    design = data["design"] or None
    round_request = calibration_sample.RoundRequest(data["size"], design, judges, data["seed"])
    try:
        if calibration_sample.round_in_job(study):
            job = calibration_round_job_create(
                study=study, request=round_request, created_by=request_user(request)
            )
            drawn_text = (
                f"Started job #{job.pk}: the frame has more than {calibration_sample.ROUND_JOB_FRAME:,} "
                "examples, so the round is drawn by a worker (its progress below)."
            )
        else:
            drawn = calibration_sample.next_round(study=study, request=round_request)
            drawn_text = f"Round {drawn.number} drew {drawn.size} examples: {drawn.new_items} new items."
    except ValidationError as refused:
        refusal_on_form(form, refused, ROUND_FORM_NAMES)
        return form
    messages.success(request, drawn_text)
    return redirect(reverse("annotation:study_detail", args=[study.slug]) + "#calibration")
