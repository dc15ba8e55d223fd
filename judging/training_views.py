"""Training data as downloads (staff): How2Train and a judge's SFT rows, streamed as JSONL.

The same rows the commands write (judging/how2train.py, judging/judge_sft.py), checked before the first byte
is sent so that a bad option is a 400 naming it and a missing bench/train split a 409, never a broken stream.
Parquet is written by the commands only (a Parquet file is not a stream).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from django import forms
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from h2e_site.bounds import SEED
from h2e_site.web import staff_required
from mining.models import Split

from .configs import prompt_for_judge
from .dataset_files import Row
from .how2train import ROW_FORMS, SAMPLE_SIZE, RowForm, SplitNotMade, how2train_check, how2train_rows
from .judge_sft import judge_sft_judgments, judge_sft_rows
from .models import Judge


class How2TrainForm(forms.Form):
    form = forms.ChoiceField(choices=[(form, form) for form in ROW_FORMS], required=False)
    n = SAMPLE_SIZE.form_field(required=False)
    seed = SEED.form_field(required=False)
    unbalanced = forms.BooleanField(required=False)


class JudgeSftForm(forms.Form):
    split = forms.ChoiceField(choices=Split.choices, required=False)


def _jsonl(rows: Iterator[Row]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def _download(rows: Iterator[Row], filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_jsonl(rows), content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _refusal(form: forms.Form) -> HttpResponseBadRequest:
    return HttpResponseBadRequest(
        "; ".join(f"{field}: {' '.join(map(str, errors))}" for field, errors in form.errors.items()),
        content_type="text/plain; charset=utf-8",
    )


@staff_required
@require_GET
def how2train_jsonl(request: HttpRequest) -> HttpResponseBase:
    """How2Train as JSONL: ?form=open-instruct|plain, and a sample with ?n=&seed= (&unbalanced=1)."""
    form = How2TrainForm(request.GET)
    if not form.is_valid():
        return _refusal(form)
    row_form: RowForm = form.cleaned_data["form"] or "open-instruct"
    n, seed = form.cleaned_data["n"], form.cleaned_data["seed"]
    balanced = not form.cleaned_data["unbalanced"]
    try:
        how2train_check(form=row_form, n=n, seed=seed, balanced=balanced)
    except SplitNotMade as exc:
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    rows = how2train_rows(form=row_form, n=n, seed=seed, balanced=balanced)
    return _download(rows, f"how2train-{row_form}.jsonl")


@staff_required
@require_GET
def judge_sft_jsonl(request: HttpRequest, judge_id: str) -> HttpResponseBase:
    """A judge's parsed verdicts as chat SFT rows: ?split=train keeps How2Train's procedures only."""
    judge = get_object_or_404(Judge, judge_id=judge_id)
    form = JudgeSftForm(request.GET)
    if not form.is_valid():
        return _refusal(form)
    split = form.cleaned_data["split"] or None
    try:
        judgments = judge_sft_judgments(judge=judge, split=split)
        template = prompt_for_judge(judge)
    except ValueError as exc:  # no train split; an imported judge without its prompt; a prompt file changed
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    return _download(judge_sft_rows(judgments, template=template), f"{judge.short_name}-sft.jsonl")
