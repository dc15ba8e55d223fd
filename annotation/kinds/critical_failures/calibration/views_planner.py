"""The budget planner (staff): /calibration/plan/ (annotation/kinds/critical_failures/calibration/planner.py
has the rules; GET
/api/calibration/plan/ the same as JSON)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.kinds.critical_failures.calibration.planner import (
    BOUNDS,
    CURRENCIES,
    DEFAULT_HUMAN_SHARE,
    SCOPES,
    PlanError,
    PlanInput,
    bound_messages,
    paper_example,
    plan,
    plan_input,
)
from h2e_site.web import staff_required
from judging.models import Generator, Judge

HELP = {
    "half_width_pp": "the 95 % interval's half-width to reach, in percentage points",
    "hourly_rate": "what an annotator is paid per hour, in the currency below",
    "fee_percent": "the platform's service fee on top of the pay (Prolific's); 0: not included",
    "k": "annotators per item; blank: the calibration study's",
    "items_per_participant": "blank: the calibration study's",
    "human_share_pp": (
        "assumed share of examples with no critical failure, used where < 2 labels exist; 0.1 to 99.9 "
        "(at 0 or 100 every human label is the same and there is nothing to plan)"
    ),
    "agreement_pp": (
        "assumed judge agreement with the human majority, used where < 2 labels exist; blank: derived from "
        "the human share and the judge's share, within the range they allow"
    ),
    "other_generator": "for the difference between two generators",
}


def _number(
    name: str, label: str, *, integer: bool = False, required: bool = True, initial: Any = None
) -> forms.Field:
    low, high = BOUNDS[name]
    kwargs: dict[str, Any] = {
        "label": label,
        "required": required,
        "help_text": HELP.get(name, ""),
        "error_messages": bound_messages(low, high),
    }
    if initial is not None:
        kwargs["initial"] = initial
    if integer:
        return forms.IntegerField(min_value=int(low), max_value=int(high), **kwargs)
    return forms.FloatField(min_value=low, max_value=high, **kwargs)


class PlanForm(forms.Form):
    """The planner's inputs, as a GET form; every value named in its error."""

    judge = forms.ChoiceField(label="Judge")
    generator = forms.ChoiceField(label="Generator")
    scope = forms.ChoiceField(
        label="Plan for", choices=list(SCOPES.items()), initial="generator", required=False
    )
    other_generator = forms.ChoiceField(
        label="Second generator", required=False, help_text=HELP["other_generator"]
    )
    half_width_pp = _number("half_width_pp", "Target half-width (points)", initial=5)
    hourly_rate = _number("hourly_rate", "Hourly rate", initial=12)
    currency = forms.ChoiceField(
        label="Currency", choices=[(c, c) for c in CURRENCIES], initial="GBP", required=False
    )
    fee_percent = _number("fee_percent", "Platform fee (%)", required=False, initial=0)
    k = _number("k", "Annotators per item (k)", integer=True, required=False)
    items_per_participant = _number(
        "items_per_participant", "Items per participant", integer=True, required=False
    )
    human_share_pp = _number(
        "human_share_pp", "Assumed human share (%)", required=False, initial=DEFAULT_HUMAN_SHARE
    )
    agreement_pp = _number("agreement_pp", "Assumed judge agreement (%)", required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        judges = [
            (j.judge_id, f"{j.model} ({j.judge_id})") for j in Judge.objects.order_by("model", "judge_id")
        ]
        generators = [
            (g.generator_id, f"{g.model} ({g.generator_id})")
            for g in Generator.objects.order_by("model", "generator_id")
        ]
        for name, choices in (
            ("judge", judges),
            ("generator", generators),
            ("other_generator", [("", "—"), *generators]),
        ):
            choice_field = self.fields[name]
            assert isinstance(choice_field, forms.ChoiceField)
            choice_field.choices = choices

    def plan_input(self) -> PlanInput:
        return plan_input(self.cleaned_data)


@staff_required
@require_GET
def plan_page(request: HttpRequest) -> HttpResponse:
    """No query: the empty form and the paper's example. A query: its plan, or the form with each refused
    field's error (a 400)."""
    paper = paper_example()
    points = {key: 100 * paper[f"{key}_half_width"] for key in ("calibrated", "human_only", "judge_only")}
    points["agreement"] = 100 * paper["agreement"]
    context: dict[str, Any] = {"paper": paper, "paper_points": points, "scopes": SCOPES}
    if not request.GET:
        context["form"] = PlanForm()
        return render(request, "annotation/planner.html", context)
    form = PlanForm(request.GET)
    context["form"] = form
    if form.is_valid():
        try:
            context["plan"] = plan(form.plan_input())
            context["scope_label"] = SCOPES[context["plan"].inputs.scope]
        except PlanError as error:
            form.add_error(error.field if error.field in form.fields else None, error.message)
    status = 400 if form.errors else 200
    return render(request, "annotation/planner.html", context, status=status)
