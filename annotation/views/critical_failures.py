"""A critical-failures study's agreement page (human alpha, each judge against the human majority) and the
kind's part of the agreement overview (alpha per study and pooled). Reached through the kind registry:
annotation/kinds/critical_failures.py hands these to views/agreement.py."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from judging.models import Judgment
from judging.stats import wilson_interval

from ..agreement_data import StudyAgreement, studies_agreement, study_agreement
from ..charts import Bar, BarChart, bar_chart
from ..models import Study, StudyKind
from ..selectors import study_unlabelled_reason

MAX_STUDIES_ON_OVERVIEW = 50


def overview_section(request: HttpRequest) -> str:
    """Alpha with its CI for each critical-failures study with a label, and for all of them pooled; "" when
    none has a label."""
    studies = Study.objects.filter(kind=StudyKind.CRITICAL_FAILURES).order_by("-created_at", "-id")
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
