"""Generations (L2), judgments ("Re-judge parse failures", "Re-judge (replace)") and critical failures.

Big tables (judgments: hundreds of thousands of rows) use raw-id/autocomplete widgets, no full counts and
exact-match searches on ids. Raw texts are read-only <pre> blocks."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from h2e_site.bounds import BoundedJSONAdmin
from h2e_site.web import RunActionsMixin, admin_link, confirmed, numbered_block, pre_block, request_user

from ..judge_jobs import judge_job_create
from ..models import CriticalFailure, Generation, Judge, Judgment
from .actions import rejudge_summary, run_jobs


class JudgmentInline(BoundedJSONAdmin, admin.TabularInline):
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
class GenerationAdmin(BoundedJSONAdmin, admin.ModelAdmin):
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

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # L2 comes from generate jobs and imports: see docs/guides/researcher/benchmark.md

    @admin.display(description="page")
    def page_link(self, obj: Generation) -> SafeString | str:
        if obj.pk is None:
            return "—"
        url = reverse("failures:generation_detail", args=[obj.pk])
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


class CriticalFailureInline(BoundedJSONAdmin, admin.TabularInline):
    model = CriticalFailure
    fields = ["order", "description", "l1_steps", "l2_steps"]
    extra = 0
    formfield_overrides = {
        models.TextField: {"widget": forms.Textarea(attrs={"rows": 2, "cols": 70})},
        models.JSONField: {"widget": forms.TextInput(attrs={"size": 12})},
        models.PositiveIntegerField: {"widget": forms.NumberInput(attrs={"style": "width: 4em"})},
    }


@admin.register(Judgment)
class JudgmentAdmin(BoundedJSONAdmin, RunActionsMixin, admin.ModelAdmin):
    actions = ["rejudge_parse_failures", "rejudge_replace"]
    # The verdict first and the names short (ids on hover): with the filter sidebar open, every column
    # fits at 1,400 px, the one just filtered on included.
    list_display = [
        "id",
        "parse_failed",
        "has_failure",
        "n_failures",
        "judge_label",
        "generator_label",
        "generation_link",
        "topic",
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
        "extra",
        "created_at",
    ]
    readonly_fields = ["page_link", "reasoning_block", "raw_output_block", "created_at"]

    @admin.display(description="judge", ordering="judge")
    def judge_label(self, obj: Judgment) -> SafeString:
        label = format_html('<span title="judge_id {}">{}</span>', obj.judge.judge_id, obj.judge.model)
        if obj.judge.is_demo_model:
            return format_html(
                '{} <strong title="{}">(demo model)</strong>',
                label,
                "A plumbing/demo model: its judgments are not meaningful",
            )
        return label

    @admin.display(description="generator", ordering="generator__model")
    def generator_label(self, obj: Judgment) -> SafeString:
        generator = obj.generator
        return format_html('<span title="generator_id {}">{}</span>', generator.generator_id, generator.model)

    @admin.action(description="Re-judge parse failures…", permissions=["run"])
    def rejudge_parse_failures(
        self, request: HttpRequest, queryset: QuerySet[Judgment]
    ) -> HttpResponse | None:
        """Per judge, a job over the selected judgments' generations whose judgment is a parse failure."""
        failed = queryset.filter(parse_failed=True)
        if not failed.exists():
            messages.info(request, "None of the selected judgments is a parse failure: nothing to re-judge.")
            return None
        if confirmed(request):
            return self._rejudge(request, failed, mode="parse_failed")
        return self.action_page(
            request,
            queryset.select_related("judge", "generation"),
            action="rejudge_parse_failures",
            title="Re-judge parse failures",
            submit_label="Yes, re-judge them",
            summary=rejudge_summary(failed),
            intro="Each judge judges again the selected generations whose judgment is a parse failure; "
            "a new verdict replaces the old one when it is written.",
        )

    @admin.action(description="Re-judge (replace)…", permissions=["run"])
    def rejudge_replace(self, request: HttpRequest, queryset: QuerySet[Judgment]) -> HttpResponse | None:
        if "apply" in request.POST:
            return self._rejudge(request, queryset, mode="replace")
        return self.action_page(
            request,
            queryset.select_related("judge", "generation"),
            action="rejudge_replace",
            title="Re-judge (replace)",
            submit_label="Yes, re-judge and replace them",
            warning="Each selected judgment is replaced by a new verdict of the same judge when the new one "
            "is written; its critical failures go with it.",
        )

    def _rejudge(
        self, request: HttpRequest, queryset: QuerySet[Judgment], *, mode: str
    ) -> HttpResponse | None:
        by_judge: dict[int, list[int]] = defaultdict(list)
        for judge_pk, generation_pk in queryset.order_by().values_list("judge_id", "generation_id"):
            by_judge[judge_pk].append(generation_pk)
        judges = Judge.objects.in_bulk(list(by_judge))
        return run_jobs(
            request,
            [judges[pk] for pk in sorted(by_judge)],
            lambda judge: judge_job_create(
                judge=judge,
                generation_ids=by_judge[judge.pk],
                mode=mode,  # type: ignore[arg-type]
                created_by=request_user(request),
            ),
            what="re-judge",
        )

    @admin.display(description="generation")
    def generation_link(self, obj: Judgment) -> SafeString:
        url = reverse("failures:generation_detail", args=[obj.generation_id])
        return format_html(
            '{} · <a href="{}">page</a>', admin_link(obj.generation, f"#{obj.generation_id}"), url
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # judgments come from judge jobs and imports: see docs/guides/researcher/benchmark.md

    @admin.display(description="page")
    def page_link(self, obj: Judgment) -> SafeString | str:
        if obj.generation_id is None:
            return "—"
        url = reverse("failures:generation_detail", args=[obj.generation_id])
        return format_html('<a href="{}">Open the generation page</a>', url)

    @admin.display(description="reasoning")
    def reasoning_block(self, obj: Judgment) -> SafeString:
        return pre_block(obj.reasoning)

    @admin.display(description="raw judge output")
    def raw_output_block(self, obj: Judgment) -> SafeString:
        return pre_block(obj.raw_output)


@admin.register(CriticalFailure)
class CriticalFailureAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    list_display = ["id", "judgment_link", "order", "description_short", "l1_steps", "l2_steps"]
    list_select_related = ["judgment"]
    list_filter = ["judgment__judge"]
    search_fields = ["description"]
    raw_id_fields = ["judgment"]
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a critical failure belongs to a judgment: edited inline on the judgment's page

    @admin.display(description="judgment")
    def judgment_link(self, obj: CriticalFailure) -> SafeString:
        return admin_link(obj.judgment, f"#{obj.judgment_id}")

    @admin.display(description="description")
    def description_short(self, obj: CriticalFailure) -> str:
        return obj.description[:120]
