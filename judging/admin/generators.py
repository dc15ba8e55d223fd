"""Generators ("Generate L2…", "Judge with…", the "Generate L2 from a config" and "Import h2e files" pages)
and judges ("Judge all generators' missing generations")."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from h2e_site.bounds import BoundedJSONAdmin
from h2e_site.web import RunActionsMixin, confirmed, request_user

from ..generate_jobs import generate_job_create
from ..judge_jobs import judge_job_create
from ..models import Generation, Generator, Judge
from .actions import AttachConfigForm, GenerateForm, JudgeWithForm, request_estimate, run_jobs
from .generate import generate_view
from .imports import import_view


@admin.register(Generator)
class GeneratorAdmin(BoundedJSONAdmin, RunActionsMixin, admin.ModelAdmin):
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
    # The table's own order (its shared columns come first in _meta since they moved to ConfiguredModel).
    fields = [
        "generator_id",
        "model",
        "backend",
        "provider",
        "prompt_style",
        "temperature",
        "max_new_tokens",
        "max_requests_per_minute",
        "max_tokens_per_minute",
        "reasoning_effort",
        "vllm_overrides",
        "prompt_sha256",
        "prompt_path",
        "prompt_text",
        "run_name",
        "manifest",
        "config",
        *readonly_fields,
    ]

    actions = ["generate_l2", "judge_with"]

    def get_urls(self) -> list[URLPattern]:
        imports = self.admin_site.admin_view(lambda request: import_view(request, self.admin_site))
        generate = self.admin_site.admin_view(lambda request: generate_view(request, self.admin_site))
        return [
            path("import/", imports, name="judging_import"),
            path("generate/", generate, name="judging_generate"),
            *super().get_urls(),
        ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # a generator is made from a config (its id hashes it) or imported:
        # see docs/guides/researcher/benchmark.md
        return False

    @admin.display(description="page")
    def page_link(self, obj: Generator) -> SafeString | str:
        if obj.pk is None:
            return "—"
        return format_html(
            '<a href="{}">Open the generator page</a>', reverse("judging:generator_detail", args=[obj.pk])
        )

    @admin.action(description="Generate L2 for the bench split…", permissions=["run"])
    def generate_l2(self, request: HttpRequest, queryset: QuerySet[Generator]) -> HttpResponse | None:
        form = GenerateForm(request.POST if "apply" in request.POST else None)
        if form.is_bound and form.is_valid():
            split, limit = form.cleaned_data["split"] or None, form.cleaned_data["limit"]
            return run_jobs(
                request,
                queryset,
                lambda g: generate_job_create(
                    generator=g, split=split, limit=limit, created_by=request_user(request)
                ),
                what="generate",
            )
        return self.action_page(
            request,
            queryset,
            action="generate_l2",
            title="Generate L2",
            submit_label="Start generating",
            form=form,
            intro="One generate job per generator. Generators imported from h2e files have no config and "
            "cannot run here.",
        )

    @admin.action(description="Judge with…", permissions=["run"])
    def judge_with(self, request: HttpRequest, queryset: QuerySet[Generator]) -> HttpResponse | None:
        form = JudgeWithForm(request.POST if "apply" in request.POST else None)
        if form.is_bound and form.is_valid():
            judge = form.cleaned_data["judge"]
            return run_jobs(
                request,
                queryset,
                lambda g: judge_job_create(
                    judge=judge, generator=g, mode="missing", created_by=request_user(request)
                ),
                what="judge",
            )
        return self.action_page(
            request,
            queryset,
            action="judge_with",
            title="Judge with…",
            submit_label="Start judging",
            form=form,
            intro="One judge job per generator, over its generations that this judge has not judged yet.",
        )


@admin.register(Judge)
class JudgeAdmin(BoundedJSONAdmin, RunActionsMixin, admin.ModelAdmin):
    list_display = ["model", "judge_id", "backend", "provider", "is_demo_model", "created_at"]
    list_filter = ["backend", "is_demo_model"]
    search_fields = ["=judge_id", "model"]
    readonly_fields = ["created_at"]
    fields = [  # the table's own order, as for generators
        "judge_id",
        "model",
        "backend",
        "provider",
        "temperature",
        "max_new_tokens",
        "reasoning_effort",
        "vllm_overrides",
        "prompt_sha256",
        "prompt_path",
        "prompt_text",
        "is_demo_model",
        "manifest",
        "config",
        *readonly_fields,
    ]
    actions = ["judge_all_missing", "attach_config"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a judge is made from a config (its id hashes it and its prompt) or imported

    @admin.action(description="Attach a config… (imported judges)", permissions=["run"])
    def attach_config(self, request: HttpRequest, queryset: QuerySet[Judge]) -> HttpResponse | None:
        """Let an imported judge run here: a config whose prompt hashes to the judge's recorded prompt."""
        if queryset.count() != 1:
            messages.warning(request, "Select one judge to attach a config to.")
            return None
        judge = queryset.get()
        form = AttachConfigForm(request.POST if confirmed(request) else None, judge=judge)
        if form.is_bound and form.is_valid():
            messages.success(
                request, f"Judge {judge.judge_id} runs with {form.cleaned_data['config_file']} from now on."
            )
            return None
        return self.action_page(
            request,
            queryset,
            action="attach_config",
            title="Attach a config",
            submit_label="Attach it",
            form=form,
            intro=f"Judge {judge.judge_id} ({judge.model}) was imported: a config lets it judge here. "
            f"The config's prompt file must hash to the prompt_sha256 the judge recorded "
            f"({judge.prompt_sha256[:12] or 'none'}…) and its model and decoding must be the judge's, "
            "so that the judge_id keeps describing what is sent.",
        )

    @admin.action(description="Judge all generators' missing generations…", permissions=["run"])
    def judge_all_missing(self, request: HttpRequest, queryset: QuerySet[Judge]) -> HttpResponse | None:
        """One job per judge x generator that has generations (with L2) this judge has not judged."""

        pairs = [
            (judge, generator)
            for judge in queryset
            for generator in Generator.objects.filter(pk__in=_generators_missing(judge))
        ]
        if not pairs:
            messages.info(
                request, "Nothing to judge: every generation already has a judgment by these judges."
            )
            return None
        if not confirmed(request):
            return self.action_page(
                request,
                queryset,
                action="judge_all_missing",
                title="Judge all generators' missing generations",
                submit_label=f"Yes, start {len(pairs)} judge job{'s' if len(pairs) > 1 else ''}",
                summary=_missing_summary(pairs),
            )
        return run_jobs(
            request,
            pairs,
            lambda pair: judge_job_create(
                judge=pair[0], generator=pair[1], mode="missing", created_by=request_user(request)
            ),
            what="judge",
        )


def _missing_summary(pairs: list[tuple[Judge, Generator]]) -> list[str]:
    lines = []
    for judge, generator in pairs:
        n = Generation.objects.filter(generator=generator, error="").exclude(judgments__judge=judge).count()
        lines.append(f"{judge.model} ({judge.judge_id}) x {generator.model}: {request_estimate(judge, n)}")
    return lines


def _generators_missing(judge: Judge) -> QuerySet[Generation, int]:
    return (
        Generation.objects.filter(error="")
        .exclude(judgments__judge=judge)
        .order_by()
        .values_list("generator_id", flat=True)
        .distinct()
    )
