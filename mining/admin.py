from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from h2e_site.bounds import BoundedJSONAdmin, ConstrainedModelForm
from h2e_site.jobs.services import job_cancel
from h2e_site.web import RUN_PERMISSION, numbered_block, pre_block

from . import views
from .config import run_config_from_mapping
from .models import STAGE_ORDER, MiningRun, Procedure, SourceDocument, Stage, StageOutcome, Topic
from .runs import RunRefused, mining_run_rerun_stage, mining_run_retry_errors, mining_run_start


@admin.register(Topic)
class TopicAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    list_display = ["name", "is_weborganizer"]
    list_filter = ["is_weborganizer"]
    search_fields = ["name"]


@admin.register(Procedure)
class ProcedureAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    list_display = ["source_example_id", "goal_short", "topic", "split", "created_at"]
    list_filter = ["split", "topic"]
    list_select_related = ["topic"]
    search_fields = ["=source_example_id", "goal"]
    autocomplete_fields = ["topic"]
    show_full_result_count = False
    readonly_fields = ["steps_numbered", "source_text_block", "created_at"]
    fields = [
        "source_example_id",
        "topic",
        "split",
        "goal",
        "resources",
        "steps",
        "steps_numbered",
        "url",
        "source_text_block",
        "created_at",
    ]

    @admin.display(description="goal")
    def goal_short(self, obj: Procedure) -> str:
        return obj.goal[:100]

    @admin.display(description="L1 steps (numbered)")
    def steps_numbered(self, obj: Procedure) -> SafeString:
        return numbered_block(obj.steps)

    @admin.display(description="source text")
    def source_text_block(self, obj: Procedure) -> SafeString:
        return pre_block(obj.source_text)


# --- How2Mine -------------------------------------------------------------------------------------------
# Run actions (need the jobs.add_job permission, as every job-starting action does) call the services of
# mining/runs.py: start or resume a run, re-run it from a stage (the outcomes of that stage and the later ones
# are deleted first), retry its failed outcomes, cancel its job. The funnel and rejection pages are served
# under the run's admin URLs (mining/views.py).


@admin.register(SourceDocument)
class SourceDocumentAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    list_display = ["doc_id", "topic", "url", "created_at"]
    list_filter = ["topic"]
    list_select_related = ["topic"]
    search_fields = ["=doc_id"]
    show_full_result_count = False
    readonly_fields = ["text_block", "created_at"]
    fields = ["doc_id", "topic", "url", "text_block", "extra", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # imported (manage.py import_documents); its text is read-only here

    @admin.display(description="text")
    def text_block(self, obj: SourceDocument) -> SafeString:
        return pre_block(obj.text)


@admin.register(StageOutcome)
class StageOutcomeAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    list_display = [
        "document",
        "run",
        "stage",
        "passed",
        "reason_short",
        "prompt_tokens",
        "completion_tokens",
        "reused",
    ]
    list_filter = ["stage", "passed", "reused"]
    list_select_related = ["document", "run"]
    search_fields = ["=document__doc_id"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # written by a mining run's stages

    raw_id_fields = ["run", "document"]
    show_full_result_count = False
    readonly_fields = ["raw_output_block"]

    @admin.display(description="reason")
    def reason_short(self, obj: StageOutcome) -> str:
        return obj.reason[:100]

    @admin.display(description="raw model output")
    def raw_output_block(self, obj: StageOutcome) -> SafeString:
        return pre_block(obj.raw_output)

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


def _rerun_action(stage: str) -> Callable[..., None]:
    def action(modeladmin: MiningRunAdmin, request: HttpRequest, queryset: QuerySet[MiningRun]) -> None:
        modeladmin.start_runs(request, queryset, stage=stage)

    label = Stage(stage).label.lower()
    action.__name__ = f"rerun_from_{stage}"
    return admin.action(
        description=f"Re-run from {label} (deletes its outcomes and the later ones)", permissions=["run"]
    )(action)


class MiningRunForm(ConstrainedModelForm):
    """The config is validated as a run config (every stage's model config and prompt file) when saved."""

    class Meta:
        model = MiningRun
        fields = ["name", "config"]

    def clean_config(self) -> dict[str, Any]:
        try:
            return run_config_from_mapping(self.cleaned_data["config"], source="config").data
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc


@admin.register(MiningRun)
class MiningRunAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    form = MiningRunForm
    list_display = ["name", "pk", "status", "n_documents", "job", "funnel_link", "created_at"]
    list_filter = ["status"]
    search_fields = ["name"]
    raw_id_fields = ["job"]
    readonly_fields = ["status", "job", "funnel_link", "created_at", "updated_at"]
    fields = ["name", "config", "status", "job", "funnel_link", "created_at", "updated_at"]
    actions = [
        "start_or_resume",
        *[_rerun_action(stage) for stage in STAGE_ORDER],
        "retry_failed",
        "cancel_job",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[MiningRun]:
        return (
            super().get_queryset(request).select_related("job").annotate(documents_count=Count("documents"))
        )

    def get_urls(self) -> list[URLPattern]:
        return [
            path("<int:pk>/funnel/", views.run_funnel_page, name="mining_miningrun_funnel"),
            path(
                "<int:pk>/funnel/<str:stage>/rejected/",
                views.stage_rejections_page,
                name="mining_miningrun_rejections",
            ),
            *super().get_urls(),
        ]

    @admin.display(description="documents")
    def n_documents(self, obj: MiningRun) -> int:
        return getattr(obj, "documents_count", 0)

    @admin.display(description="funnel")
    def funnel_link(self, obj: MiningRun) -> SafeString:
        if obj.pk is None:
            return format_html("{}", "-")
        return format_html('<a href="{}">Funnel</a>', reverse("admin:mining_miningrun_funnel", args=[obj.pk]))

    def has_run_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(RUN_PERMISSION)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # runs are created from a config: `manage.py mine CONFIG` or mining_run_create

    @admin.action(description="Start or resume (sends only what has no outcome yet)", permissions=["run"])
    def start_or_resume(self, request: HttpRequest, queryset: QuerySet[MiningRun]) -> None:
        self.start_runs(request, queryset, stage=None)

    @admin.action(description="Retry failed outcomes (API errors, unparsable answers)", permissions=["run"])
    def retry_failed(self, request: HttpRequest, queryset: QuerySet[MiningRun]) -> None:
        for run in queryset:
            try:
                job = mining_run_retry_errors(run=run, created_by=_user(request))
            except RunRefused as exc:
                self.message_user(request, str(exc), messages.ERROR)
                continue
            self.message_user(request, f"Run {run.pk}: retrying failed outcomes in job #{job.pk}.")

    @admin.action(description="Cancel the run's job", permissions=["run"])
    def cancel_job(self, request: HttpRequest, queryset: QuerySet[MiningRun]) -> None:
        for run in queryset.exclude(job=None):
            if run.job is not None:
                job_cancel(job=run.job)
                self.message_user(request, f"Run {run.pk}: job #{run.job.pk} cancelled.")

    def start_runs(self, request: HttpRequest, queryset: QuerySet[MiningRun], *, stage: str | None) -> None:
        for run in queryset:
            try:
                if stage is None:
                    job = mining_run_start(run=run, created_by=_user(request))
                else:
                    job = mining_run_rerun_stage(run=run, stage=stage, created_by=_user(request))
            except (RunRefused, ValueError) as exc:
                self.message_user(request, f"Run {run.pk}: {exc}", messages.ERROR)
                continue
            self.message_user(request, f"Run {run.pk}: job #{job.pk} started.")


def _user(request: HttpRequest) -> Any:
    return request.user if request.user.is_authenticated else None
