"""Django admin for generators, generations (L2), judges, judgments, critical failures and jobs.

Big tables (judgments: hundreds of thousands of rows) use raw-id/autocomplete widgets, no full counts and
exact-match searches on ids. Raw texts are read-only <pre> blocks. Jobs are read-only; "Import h2e files"
uploads files and starts an import job.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from mining.admin import numbered_block, pre_block
from mining.models import Split

from .models import CriticalFailure, Generation, Generator, Job, Judge, Judgment
from .uploads import UploadError, uploads_save


def admin_link(obj: Any, text: object | None = None) -> SafeString:
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, obj if text is None else text)


@admin.register(Generator)
class GeneratorAdmin(admin.ModelAdmin):
    list_display = [
        "model",
        "generator_id",
        "backend",
        "provider",
        "prompt_style",
        "temperature",
        "created_at",
    ]
    list_filter = ["backend", "prompt_style"]
    search_fields = ["=generator_id", "model", "run_name"]
    readonly_fields = ["created_at", "page_link"]

    @admin.display(description="page")
    def page_link(self, obj: Generator) -> SafeString:
        return format_html(
            '<a href="{}">Open the generator page</a>', reverse("judging:generator_detail", args=[obj.pk])
        )


@admin.register(Judge)
class JudgeAdmin(admin.ModelAdmin):
    list_display = ["model", "judge_id", "backend", "provider", "is_demo_model", "created_at"]
    list_filter = ["backend", "is_demo_model"]
    search_fields = ["=judge_id", "model"]
    readonly_fields = ["created_at"]


class JudgmentInline(admin.TabularInline):
    model = Judgment
    fk_name = "generation"
    fields = ["judgment_link", "judge", "parse_failed", "has_failure", "n_failures"]
    readonly_fields = ["judgment_link", "judge", "parse_failed", "has_failure", "n_failures"]
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="judgment")
    def judgment_link(self, obj: Judgment) -> SafeString:
        return admin_link(obj, f"#{obj.pk}")


@admin.register(Generation)
class GenerationAdmin(admin.ModelAdmin):
    list_display = ["id", "source_example_id", "generator", "n_tokens", "has_error", "created_at"]
    list_filter = ["generator"]
    list_select_related = ["generator", "procedure"]
    search_fields = ["=procedure__source_example_id", "=generator__generator_id"]
    raw_id_fields = ["procedure"]
    autocomplete_fields = ["generator"]
    show_full_result_count = False
    inlines = [JudgmentInline]
    fields = [
        "page_link",
        "generator",
        "procedure",
        "procedure_link",
        "l2_numbered",
        "model_completion_block",
        "predicted_steps",
        "n_tokens",
        "error",
        "extra",
        "prompt_block",
        "created_at",
    ]
    readonly_fields = [
        "page_link",
        "procedure_link",
        "l2_numbered",
        "model_completion_block",
        "prompt_block",
        "created_at",
    ]

    @admin.display(description="example")
    def source_example_id(self, obj: Generation) -> str:
        return obj.procedure.source_example_id

    @admin.display(description="error", boolean=True)
    def has_error(self, obj: Generation) -> bool:
        return bool(obj.error)

    @admin.display(description="page")
    def page_link(self, obj: Generation) -> SafeString:
        url = reverse("judging:generation_detail", args=[obj.pk])
        return format_html('<a href="{}">Open the generation page (L1 vs L2, critical failures)</a>', url)

    @admin.display(description="procedure (L1)")
    def procedure_link(self, obj: Generation) -> SafeString:
        return admin_link(obj.procedure)

    @admin.display(description="L2 steps (numbered)")
    def l2_numbered(self, obj: Generation) -> SafeString:
        return numbered_block(obj.predicted_steps)

    @admin.display(description="model completion (raw)")
    def model_completion_block(self, obj: Generation) -> SafeString:
        return pre_block(obj.model_completion)

    @admin.display(description="prompt")
    def prompt_block(self, obj: Generation) -> SafeString:
        return pre_block(obj.prompt)


class CriticalFailureInline(admin.TabularInline):
    model = CriticalFailure
    fields = ["order", "description", "l1_steps", "l2_steps"]
    extra = 0
    formfield_overrides = {
        models.TextField: {"widget": forms.Textarea(attrs={"rows": 2, "cols": 70})},
        models.JSONField: {"widget": forms.TextInput(attrs={"size": 12})},
        models.PositiveIntegerField: {"widget": forms.NumberInput(attrs={"style": "width: 4em"})},
    }


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "judge",
        "generator",
        "generation_link",
        "topic",
        "parse_failed",
        "has_failure",
        "n_failures",
    ]
    list_filter = ["judge", "generator", "topic", "parse_failed", "has_failure"]
    list_select_related = ["judge", "generator", "topic", "generation"]
    search_fields = [
        "=generation__procedure__source_example_id",
        "=judge__judge_id",
        "=generator__generator_id",
    ]
    raw_id_fields = ["generation"]
    autocomplete_fields = ["judge", "generator", "topic"]
    show_full_result_count = False
    inlines = [CriticalFailureInline]
    fields = [
        "page_link",
        "judge",
        "generation",
        "generator",
        "topic",
        "parse_failed",
        "has_failure",
        "n_failures",
        "reasoning_block",
        "raw_output_block",
        "error",
        "extra",
        "created_at",
    ]
    readonly_fields = ["page_link", "reasoning_block", "raw_output_block", "created_at"]

    @admin.display(description="generation")
    def generation_link(self, obj: Judgment) -> SafeString:
        url = reverse("judging:generation_detail", args=[obj.generation_id])
        return format_html(
            '{} · <a href="{}">page</a>', admin_link(obj.generation, f"#{obj.generation_id}"), url
        )

    @admin.display(description="page")
    def page_link(self, obj: Judgment) -> SafeString:
        url = reverse("judging:generation_detail", args=[obj.generation_id])
        return format_html('<a href="{}">Open the generation page</a>', url)

    @admin.display(description="reasoning")
    def reasoning_block(self, obj: Judgment) -> SafeString:
        return pre_block(obj.reasoning)

    @admin.display(description="raw judge output")
    def raw_output_block(self, obj: Judgment) -> SafeString:
        return pre_block(obj.raw_output)


@admin.register(CriticalFailure)
class CriticalFailureAdmin(admin.ModelAdmin):
    list_display = ["id", "judgment_link", "order", "description_short", "l1_steps", "l2_steps"]
    list_select_related = ["judgment"]
    list_filter = ["judgment__judge"]
    search_fields = ["description"]
    raw_id_fields = ["judgment"]
    show_full_result_count = False

    @admin.display(description="judgment")
    def judgment_link(self, obj: CriticalFailure) -> SafeString:
        return admin_link(obj.judgment, f"#{obj.judgment_id}")

    @admin.display(description="description")
    def description_short(self, obj: CriticalFailure) -> str:
        return obj.description[:120]


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


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "status", "progress", "created_by", "created_at", "finished_at"]
    list_filter = ["status", "kind"]
    list_select_related = ["created_by"]
    search_fields = ["=celery_task_id"]
    readonly_fields = [
        "kind",
        "status",
        "progress",
        "parameters",
        "total",
        "done",
        "failed",
        "error_block",
        "celery_task_id",
        "created_by",
        "created_at",
        "started_at",
        "finished_at",
        "updated_at",
        "page_link",
    ]
    exclude = ["error"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="progress")
    def progress(self, obj: Job) -> SafeString:
        return format_html(
            '<progress max="100" value="{}"></progress> {} / {}{}',
            f"{obj.progress_percent:.0f}",
            obj.done,
            obj.total or "?",
            format_html(" ({} failed)", obj.failed) if obj.failed else "",
        )

    @admin.display(description="error")
    def error_block(self, obj: Job) -> SafeString:
        return pre_block(obj.error)

    @admin.display(description="page")
    def page_link(self, obj: Job) -> SafeString:
        return format_html(
            '<a href="{}">Follow this job live</a>', reverse("judging:job_detail", args=[obj.pk])
        )

    def get_urls(self) -> list[URLPattern]:
        extra = [path("import/", self.admin_site.admin_view(self.import_view), name="judging_job_import")]
        return extra + super().get_urls()

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Upload h2e files, save them under VAR_DIR/uploads and start an import job."""
        if not request.user.has_perm("judging.add_job"):
            raise PermissionDenied("You need the 'add job' permission to import files.")
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            job = _start_import(request, form)
            if job is not None:
                messages.success(request, f"Import job #{job.pk} started.")
                return redirect("judging:job_detail", pk=job.pk)
        context = {
            **self.admin_site.each_context(request),
            "title": "Import h2e files",
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/judging/job/import.html", context)


def _start_import(request: HttpRequest, form: ImportForm) -> Job | None:
    kind = form.cleaned_data["kind"]
    try:
        paths = uploads_save(files=form.cleaned_data["uploads"], kind=kind)
    except UploadError as exc:
        form.add_error("uploads", str(exc))
        return None
    from .services import import_job_create

    return import_job_create(
        paths=paths,
        kind=kind,
        split=form.cleaned_data["split"],
        skip_invalid=form.cleaned_data["skip_invalid"],
        created_by=request.user if isinstance(request.user, User) else None,
    )
