"""The study page's Prolific actions (staff): create the study on Prolific as a draft, publish, pause,
resume and stop it (each behind a page saying what will happen on Prolific), and sync its submissions."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import messages
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from h2e_site.web import staff_required

from ..models import Study
from ..prolific_api import STUDY_ACTIONS, ProlificClient, ProlificError, retries_note
from ..prolific_studies import (
    REJECTION_CATEGORIES,
    REVIEW_ACTIONS,
    estimated_minutes,
    places,
    review_plan,
    review_rows,
    review_send,
    study_publish_draft,
    submissions_sync,
)

WHAT_HAPPENS = {
    "PUBLISH": "Prolific locks the study's cost (reward x places + fees) from the workspace's wallet and "
    "opens the study to eligible participants.",
    "PAUSE": "No new participant can start; those already in the study may finish.",
    "START": "The paused study opens to new participants again.",
    "STOP": "The study ends on Prolific (COMPLETED): no one else can start, and it reopens only if places "
    "are added on Prolific.",
}


class DraftForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(max_length=5_000, widget=forms.Textarea(attrs={"rows": 3}))
    reward = forms.IntegerField(
        min_value=1,
        max_value=100_000,
        help_text="per participant, in pence or cents (Prolific's minor units)",
    )


def _client(request: HttpRequest) -> ProlificClient | None:
    try:
        return ProlificClient()
    except ImproperlyConfigured as missing:
        messages.error(request, str(missing))
        return None


@staff_required
@require_http_methods(["GET", "POST"])
def prolific_draft(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    form = DraftForm(request.POST or None, initial={"name": study.title})
    if request.method == "POST" and form.is_valid() and (client := _client(request)) is not None:
        entry = request.build_absolute_uri(reverse("annotator:entry", kwargs={"slug": study.slug}))
        try:
            study_id = study_publish_draft(study, client, entry_url=entry, **form.cleaned_data)
        except ProlificError as refused:
            messages.error(request, str(refused))
        else:
            note = retries_note(client.retries)
            messages.success(
                request, f"Draft study {study_id} created on Prolific (not published). {note}".strip()
            )
            return redirect("annotation:study_detail", slug=study.slug)
    context = {"study": study, "form": form, "places": places(study), "minutes": estimated_minutes(study)}
    return render(request, "annotation/prolific_draft.html", context, status=400 if form.errors else 200)


@staff_required
@require_http_methods(["GET", "POST"])
def prolific_transition(request: HttpRequest, slug: str, action: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug, prolific_study_id__gt="")
    if action not in STUDY_ACTIONS:
        return HttpResponse(f"action: expected one of {', '.join(STUDY_ACTIONS)}, got {action!r}", status=404)
    if request.method == "POST" and (client := _client(request)) is not None:
        try:
            status = client.study_transition(study.prolific_study_id, action)["status"]
        except ProlificError as refused:
            messages.error(request, f"{refused} {retries_note(client.retries)}".strip())
        else:
            messages.success(
                request, f"Prolific: the study is now {status}. {retries_note(client.retries)}".strip()
            )
        return redirect("annotation:study_detail", slug=study.slug)
    context: dict[str, Any] = {"study": study, "action": action, "what": WHAT_HAPPENS[action]}
    return render(request, "annotation/prolific_confirm.html", context)


@staff_required
@require_POST
def prolific_sync(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug, prolific_study_id__gt="")
    if (client := _client(request)) is not None:
        try:
            counts = submissions_sync(study, client)
        except ProlificError as refused:
            messages.error(request, str(refused))
        else:
            messages.success(
                request,
                f"Synced {counts['submissions']} submissions: {counts['recorded']} statuses recorded, "
                f"{counts['released']} items freed. {retries_note(client.retries)}".strip(),
            )
    return redirect("annotation:study_detail", slug=study.slug)


class ReviewForm(forms.Form):
    action = forms.ChoiceField(choices=REVIEW_ACTIONS)
    submissions = forms.MultipleChoiceField(choices=[])
    rejection_category = forms.ChoiceField(
        choices=[("", "—"), *((c, c) for c in REJECTION_CATEGORIES)], required=False
    )
    message = forms.CharField(max_length=2_000, required=False, widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args: Any, submission_ids: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.MultipleChoiceField, self.fields["submissions"]).choices = [(s, s) for s in submission_ids]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("action") == "REJECT":
            if not data.get("rejection_category"):
                self.add_error("rejection_category", "Prolific needs a category to reject")
            if len(data.get("message", "")) < 100:
                self.add_error("message", "Prolific needs a message of at least 100 characters to reject")
        return data


@staff_required
@require_http_methods(["GET", "POST"])
def prolific_review(request: HttpRequest, slug: str) -> HttpResponse:
    """Submissions awaiting review, with the studio's record of each participant; approve or reject the chosen
    ones after a preview saying what will be sent and what is refused (prolific_studies.review_refusal)."""
    study = get_object_or_404(Study, slug=slug, prolific_study_id__gt="")
    client = _client(request)
    if client is None:
        return redirect("annotation:study_detail", slug=study.slug)
    try:
        rows = review_rows(study, client)
    except ProlificError as refused:
        messages.error(request, str(refused))
        return redirect("annotation:study_detail", slug=study.slug)
    form = ReviewForm(request.POST or None, submission_ids=[r["id"] for r in rows])
    plan = review_plan(rows, form.cleaned_data) if request.method == "POST" and form.is_valid() else []
    if plan and request.POST.get("confirmed") == "1":
        sent = review_send(client, plan, form.cleaned_data)
        messages.success(
            request, f"{sent} submissions reviewed on Prolific. {retries_note(client.retries)}".strip()
        )
        return redirect("annotation:prolific_review", slug=study.slug)
    chosen = set(request.POST.getlist("submissions"))
    context = {"study": study, "rows": rows, "form": form, "plan": plan, "chosen": chosen}
    return render(request, "annotation/prolific_review.html", context, status=400 if form.errors else 200)
