"""The "Import h2e files" admin page: upload bench files or an h2e tree archive and start an import job."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse

from h2e_site.jobs.models import Job, JobStatus
from h2e_site.web import RUN_PERMISSION, request_user
from mining.models import Split

from ..import_jobs import import_job_create
from ..models import Generator
from ..uploads import UploadError, uploads_save


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data]
        return [single(data, initial)]


class ImportForm(forms.Form):
    uploads = MultipleFileField(
        label="Files",
        help_text="bench: .jsonl/.json/.csv/.parquet/.arrow files (optionally .gz/.zst). "
        "h2e tree: a .zip or .tar(.gz) of an 'h2e bench run' out_root.",
    )
    kind = forms.ChoiceField(
        choices=[("bench", "Bench / How2Mine records (procedures)"), ("h2e", "h2e out_root tree (archive)")],
        initial="bench",
    )
    split = forms.ChoiceField(choices=Split.choices, initial=Split.BENCH, help_text="for bench files")
    skip_invalid = forms.BooleanField(
        required=False, help_text="import the valid records and report the rejected ones"
    )


def import_view(request: HttpRequest, admin_site: admin.AdminSite) -> HttpResponse:
    """Upload h2e files, save them under VAR_DIR/uploads and start an import job."""
    if not request.user.has_perm(RUN_PERMISSION):
        raise PermissionDenied("You need the 'add job' permission to import files.")
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        job = _start_import(request, form)
        if job is not None:
            job.refresh_from_db()
            if job.status != JobStatus.FAILED:  # else not queued: the middleware's warning says so
                messages.success(request, f"Import job #{job.pk} started.")
            return redirect("jobs:job_detail", pk=job.pk)
    context = {
        **admin_site.each_context(request),
        "title": "Import h2e files",
        "form": form,
        "opts": Generator._meta,
    }
    return TemplateResponse(request, "admin/judging/import.html", context)


def _start_import(request: HttpRequest, form: ImportForm) -> Job | None:
    kind = form.cleaned_data["kind"]
    try:
        paths = uploads_save(files=form.cleaned_data["uploads"], kind=kind)
    except UploadError as exc:
        form.add_error("uploads", str(exc))
        return None

    return import_job_create(
        paths=paths,
        kind=kind,
        split=form.cleaned_data["split"],
        skip_invalid=form.cleaned_data["skip_invalid"],
        created_by=request_user(request),
    )
