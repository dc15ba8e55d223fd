"""The study page's Prolific actions (staff, and each a permission of its own: PROLIFIC_PERMISSION to act
on the study, BONUS_PERMISSION to pay; checked before anything is read or sent): create the study on
Prolific as a draft, publish, pause, resume and stop it (each behind a page saying what will happen on
Prolific), review its submissions, and the long ones as jobs (annotation/prolific/jobs.py): sync, send a
review, pay bonuses. A call made from a page gets PAGE_BUDGET_SECONDS in all (ProlificClient.for_page)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from functools import wraps
from typing import Any, cast

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotation.base.job_kinds import PROLIFIC_BONUSES, PROLIFIC_KINDS, PROLIFIC_REVIEW, PROLIFIC_SYNC
from annotation.base.models import Study
from annotation.prolific.bonuses import bonuses_create
from annotation.prolific.client import (
    STUDY_ACTIONS,
    ProlificClient,
    ProlificError,
    retries_note,
    token_missing,
)
from annotation.prolific.jobs import prolific_job_active, prolific_job_create
from annotation.prolific.studies import (
    REJECTION_CATEGORIES,
    REVIEW_ACTIONS,
    estimated_minutes,
    maximum_allowed_minutes,
    places,
    review_plan,
    review_rows,
    study_publish_draft,
)
from h2e_site.jobs.models import Job
from h2e_site.jobs.views import job_lines
from h2e_site.web import RUN_PERMISSION, View, request_user, staff_required

PROLIFIC_PERMISSION = "annotation.run_prolific_study"
BONUS_PERMISSION = "annotation.pay_prolific_bonuses"
PERMISSION_NAMES = {f"annotation.{codename}": name for codename, name in Study._meta.permissions}
RECENT_JOBS = 5

WHAT_HAPPENS = {
    "PUBLISH": "Prolific locks the study's cost (reward x places + fees) from the workspace's wallet and "
    "opens the study to eligible participants.",
    "PAUSE": "No new participant can start; those already in the study may finish.",
    "START": "The paused study opens to new participants again.",
    "STOP": "The study ends on Prolific (COMPLETED): no one else can start, and it reopens only if places "
    "are added on Prolific.",
}


def permission_required(permission: str) -> Callable[[View], View]:
    """403 (naming the permission) for a user without `permission`, before the view reads or sends
    anything."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            if not request.user.has_perm(permission):
                raise PermissionDenied(f"This needs the '{PERMISSION_NAMES[permission]}' permission.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def prolific_page_context(request: HttpRequest, study: Study) -> dict[str, Any]:
    """What the study page's Prolific section shows: which actions the user may take, whether a token is
    set, the bonus form and the study's recent Prolific jobs (live rows)."""
    jobs = Job.objects.select_related("created_by").filter(
        kind__in=PROLIFIC_KINDS, parameters__study=study.pk
    )
    return {
        "can_act_on_prolific": request.user.has_perm(PROLIFIC_PERMISSION),
        "can_pay_bonuses": request.user.has_perm(BONUS_PERMISSION),
        "can_run": request.user.has_perm(RUN_PERMISSION),
        "prolific_token_missing": "" if settings.PROLIFIC_API_TOKEN else token_missing(),
        "bonus_form": BonusForm(),
        "prolific_jobs": job_lines(list(jobs[:RECENT_JOBS])),
    }


def _client(request: HttpRequest) -> ProlificClient | None:
    try:
        return ProlificClient.for_page()
    except ImproperlyConfigured as missing:
        messages.error(request, str(missing))
        return None


class DraftForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(max_length=5_000, widget=forms.Textarea(attrs={"rows": 3}))
    reward = forms.IntegerField(
        min_value=1,
        max_value=100_000,
        help_text="per participant, in pence or cents (Prolific's minor units)",
    )


@staff_required
@permission_required(PROLIFIC_PERMISSION)
@require_http_methods(["GET", "POST"])
def prolific_draft(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    form = DraftForm(request.POST or None, initial={"name": study.title})
    if request.method == "POST" and form.is_valid() and (client := _client(request)) is not None:
        entry = request.build_absolute_uri(reverse("annotator:entry", kwargs={"slug": study.slug}))
        try:
            study_id = study_publish_draft(study, client, entry_url=entry, **form.cleaned_data)
        except ProlificError as refused:
            messages.error(request, f"{refused} {retries_note(client.retries)}".strip())
        else:
            note = retries_note(client.retries)
            messages.success(
                request, f"Draft study {study_id} created on Prolific (not published). {note}".strip()
            )
            return redirect("annotation:study_detail", slug=study.slug)
    context = {
        "study": study,
        "form": form,
        "places": places(study),
        "minutes": estimated_minutes(study),
        "maximum_minutes": maximum_allowed_minutes(study),
        "token_missing": "" if settings.PROLIFIC_API_TOKEN else token_missing(),
    }
    return render(request, "annotation/prolific_draft.html", context, status=400 if form.errors else 200)


@staff_required
@permission_required(PROLIFIC_PERMISSION)
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


def _queue(request: HttpRequest, study: Study, kind: str, started: str, **parameters: Any) -> HttpResponse:
    """Queue a Prolific job (or say which one is already doing it) and go back to the study's page."""
    if not settings.PROLIFIC_API_TOKEN:
        messages.error(request, token_missing())
    elif (running := prolific_job_active(kind=kind, study=study, **parameters)) is not None:
        messages.info(request, f"Job #{running.pk} is already doing this; its row below shows its progress.")
    else:
        job = prolific_job_create(kind=kind, study=study, created_by=request_user(request), **parameters)
        messages.success(request, f"Job #{job.pk}: {started} Its row below shows its progress.")
    return redirect(reverse("annotation:study_detail", args=[study.slug]) + "#prolific")


@staff_required
@permission_required(PROLIFIC_PERMISSION)
@require_POST
def prolific_sync(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug, prolific_study_id__gt="")
    return _queue(request, study, PROLIFIC_SYNC, "syncing the submissions from Prolific.")


class BonusForm(forms.Form):
    amount = forms.DecimalField(min_value=Decimal("0.01"), max_value=Decimal("100.00"), decimal_places=2)
    reason = forms.SlugField(
        max_length=80, help_text="one bonus per participant per reason, e.g. 'accuracy-2026-11'"
    )


@staff_required
@permission_required(BONUS_PERMISSION)
@require_POST
def prolific_bonuses(request: HttpRequest, slug: str) -> HttpResponse:
    """Pay `amount` to every participant who finished, once per reason, through Prolific: the rows are added
    here, a job pays them (a bonus already paid, being paid, or whose pay went unanswered is never sent
    again: annotation/prolific/bonuses.py)."""
    study = get_object_or_404(Study, slug=slug)
    form = BonusForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest(form.errors.as_text())
    if not study.prolific_study_id:
        return HttpResponseBadRequest("prolific_study_id: the study has no Prolific study to pay bonuses on")
    reason = form.cleaned_data["reason"]
    added = bonuses_create(study=study, amount=form.cleaned_data["amount"], reason=reason)
    return _queue(
        request, study, PROLIFIC_BONUSES, f"paying the bonuses of '{reason}' ({added} new).", reason=reason
    )


class ReviewForm(forms.Form):
    action = forms.ChoiceField(choices=REVIEW_ACTIONS)
    submissions = forms.MultipleChoiceField(choices=[])
    rejection_category = forms.ChoiceField(
        choices=[("", "—"), *((c, c) for c in REJECTION_CATEGORIES)], required=False
    )
    message = forms.CharField(max_length=2_000, required=False, widget=forms.Textarea(attrs={"rows": 3}))
    approve_screened = forms.MultipleChoiceField(
        choices=[],
        required=False,
        help_text="screened-out participants to approve all the same, each by name",
    )

    def __init__(self, *args: Any, submission_ids: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("submissions", "approve_screened"):
            cast(forms.MultipleChoiceField, self.fields[name]).choices = [(s, s) for s in submission_ids]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("action") == "REJECT":
            if not data.get("rejection_category"):
                self.add_error("rejection_category", "Prolific needs a category to reject")
            if len(data.get("message", "")) < 100:
                self.add_error("message", "Prolific needs a message of at least 100 characters to reject")
        return data


@staff_required
@permission_required(PROLIFIC_PERMISSION)
@require_http_methods(["GET", "POST"])
def prolific_review(request: HttpRequest, slug: str) -> HttpResponse:
    """Submissions on Prolific, with the studio's record of each participant; approve, reject or screen out
    the chosen ones after a preview saying what will be sent and what is refused
    (prolific_studies.review_refusal); the confirmed review is sent by a job."""
    study = get_object_or_404(Study, slug=slug, prolific_study_id__gt="")
    client = _client(request)
    if client is None:
        return redirect("annotation:study_detail", slug=study.slug)
    try:
        rows = review_rows(study, client)
    except ProlificError as refused:
        messages.error(request, f"{refused} {retries_note(client.retries)}".strip())
        return redirect("annotation:study_detail", slug=study.slug)
    form = ReviewForm(request.POST or None, submission_ids=[r["id"] for r in rows])
    plan = review_plan(rows, form.cleaned_data) if request.method == "POST" and form.is_valid() else []
    if plan and request.POST.get("confirmed") == "1":
        data = {key: form.cleaned_data[key] for key in ReviewForm.base_fields}
        return _queue(
            request, study, PROLIFIC_REVIEW, f"sending the review ({data['action'].lower()}).", **data
        )
    chosen = set(request.POST.getlist("submissions"))
    screened = [row for row in plan if row["screened_out"] and row["status"] == "AWAITING REVIEW"]
    context = {
        "study": study,
        "rows": rows,
        "form": form,
        "plan": plan,
        "chosen": chosen,
        "screened_in_plan": screened if plan and form.cleaned_data["action"] == "APPROVE" else [],
        "approved_by_name": set(request.POST.getlist("approve_screened")),
    }
    return render(request, "annotation/prolific_review.html", context, status=400 if form.errors else 200)
