"""Django admin for generators, generations (L2), judges, judgments, critical failures and jobs.

Big tables (judgments: hundreds of thousands of rows) use raw-id/autocomplete widgets, no full counts and
exact-match searches on ids. Raw texts are read-only <pre> blocks. Jobs are read-only; "Import h2e files"
uploads files and starts an import job.

Run actions (the "run" permission = judging.add_job) start generation and judging jobs through the services
of judging/runs.py: on generators "Generate L2..." and "Judge with...", on judges "Judge all generators'
missing generations", on judgments "Re-judge parse failures" and "Re-judge (replace)", on jobs "Cancel job"
and "Retry failed items". Each one ends on the jobs page (the job's own page when it started one job).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
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


# --- run actions: shared pieces ----------------------------------------------------------------------------

JUDGE_CONFIG_DIR = Path(settings.BASE_DIR) / "configs" / "judges"
RUN_PERMISSION = "judging.add_job"


def judge_config_files() -> list[Path]:
    """The judge configs shipped in configs/judges/ (YAML)."""
    if not JUDGE_CONFIG_DIR.is_dir():
        return []
    return sorted(p for p in JUDGE_CONFIG_DIR.iterdir() if p.suffix in {".yaml", ".yml"} and p.is_file())


def judge_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    """Judges that can run (rows with a config), then config files (a row is made for one on first use)."""
    rows = [
        (
            f"judge:{judge.pk}",
            f"{judge.model} ({judge.judge_id}){_demo_suffix(judge)}",
        )
        for judge in Judge.objects.exclude(config={}).order_by("model", "judge_id")
    ]
    files = [(f"file:{p.name}", f"configs/judges/{p.name}") for p in judge_config_files()]
    return [(label, options) for label, options in [("Judges", rows), ("Config files", files)] if options]


def _demo_suffix(judge: Judge) -> str:
    return " - demo model, judgments not meaningful" if judge.is_demo_model else ""


def judge_from_choice(value: str) -> Judge:
    """The Judge row for a judge_choices() value; raises ValueError (ConfigError) for a bad config file."""
    from .configs import judge_for_config, load_config

    kind, _, ref = value.partition(":")
    if kind == "judge":
        return Judge.objects.get(pk=int(ref))
    path = JUDGE_CONFIG_DIR / ref
    if path not in judge_config_files():
        raise ValueError(f"no judge config file {ref!r} in configs/judges/")
    return judge_for_config(load_config(path, role="judge"))


class GenerateForm(forms.Form):
    split = forms.ChoiceField(
        choices=[*Split.choices, ("", "all splits")],
        initial=Split.BENCH,
        required=False,
        help_text="the procedures (L1) to write L2 for; those with a good L2 from the generator are skipped",
    )
    limit = forms.IntegerField(
        min_value=1, required=False, help_text="at most this many procedures (first by id); empty: all"
    )


class JudgeWithForm(forms.Form):
    judge = forms.ChoiceField(
        label="Judge",
        help_text="a judge with a config, or a config file from configs/judges/. "
        "Only generations without a judgment by this judge are judged.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        judge_field = self.fields["judge"]
        assert isinstance(judge_field, forms.ChoiceField)
        judge_field.choices = [("", "— choose a judge —"), *judge_choices()]

    def clean_judge(self) -> Judge:
        try:
            return judge_from_choice(self.cleaned_data["judge"])
        except (ValueError, Judge.DoesNotExist) as exc:
            raise forms.ValidationError(str(exc)) from exc


class RunActionsMixin:
    """Permission and redirect helpers of the run actions (the "run" action permission)."""

    admin_site: admin.AdminSite
    model: type[models.Model]

    def has_run_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(RUN_PERMISSION)

    def action_page(
        self,
        request: HttpRequest,
        queryset: QuerySet[Any],
        *,
        action: str,
        title: str,
        submit_label: str,
        form: forms.Form | None = None,
        intro: str = "",
        warning: str = "",
    ) -> TemplateResponse:
        """The intermediate page of an action: the selection, a form or a confirmation, posted back."""
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "opts": self.model._meta,
            "queryset": queryset,
            "objects_label": f"Selected {self.model._meta.verbose_name_plural}",
            "form": form,
            "action": action,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "submit_label": submit_label,
            "intro": intro,
            "warning": warning,
        }
        return TemplateResponse(request, "admin/judging/run_action.html", context)


def run_jobs(
    request: HttpRequest, targets: Iterable[Any], start: Callable[[Any], Job], *, what: str
) -> HttpResponseRedirect | None:
    """Start one job per target through a service; message each failure; go to the job(s) started."""
    jobs: list[Job] = []
    for target in targets:
        try:
            jobs.append(start(target))
        except ValueError as exc:  # ConfigError too: an imported row, a bad config, a bad argument
            messages.error(request, f"{target}: {exc}")
    return jobs_redirect(request, jobs, what=what)


def jobs_redirect(request: HttpRequest, jobs: list[Job], *, what: str) -> HttpResponseRedirect | None:
    if not jobs:
        return None
    items = sum(job.total for job in jobs)
    names = ", ".join(f"#{job.pk}" for job in jobs)
    messages.success(request, f"Started {what} job{'s' if len(jobs) > 1 else ''} {names} ({items} item(s)).")
    if len(jobs) == 1:
        return redirect("judging:job_detail", pk=jobs[0].pk)
    return redirect("judging:job_list")


def request_user(request: HttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


@admin.register(Generator)
class GeneratorAdmin(RunActionsMixin, admin.ModelAdmin):
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

    actions = ["generate_l2", "judge_with"]

    @admin.display(description="page")
    def page_link(self, obj: Generator) -> SafeString:
        return format_html(
            '<a href="{}">Open the generator page</a>', reverse("judging:generator_detail", args=[obj.pk])
        )

    @admin.action(description="Generate L2 for the bench split…", permissions=["run"])
    def generate_l2(self, request: HttpRequest, queryset: QuerySet[Generator]) -> HttpResponse | None:
        from .runs import generate_job_create

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
        from .runs import judge_job_create

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
class JudgeAdmin(RunActionsMixin, admin.ModelAdmin):
    list_display = ["model", "judge_id", "backend", "provider", "is_demo_model", "created_at"]
    list_filter = ["backend", "is_demo_model"]
    search_fields = ["=judge_id", "model"]
    readonly_fields = ["created_at"]
    actions = ["judge_all_missing"]

    @admin.action(description="Judge all generators' missing generations", permissions=["run"])
    def judge_all_missing(self, request: HttpRequest, queryset: QuerySet[Judge]) -> HttpResponse | None:
        """One job per judge x generator that has generations (with L2) this judge has not judged."""
        from .runs import judge_job_create

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
        return run_jobs(
            request,
            pairs,
            lambda pair: judge_job_create(
                judge=pair[0], generator=pair[1], mode="missing", created_by=request_user(request)
            ),
            what="judge",
        )


def _generators_missing(judge: Judge) -> QuerySet[Generation, int]:
    return (
        Generation.objects.filter(error="")
        .exclude(judgments__judge=judge)
        .order_by()
        .values_list("generator_id", flat=True)
        .distinct()
    )


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
class JudgmentAdmin(RunActionsMixin, admin.ModelAdmin):
    actions = ["rejudge_parse_failures", "rejudge_replace"]
    list_display = [
        "id",
        "judge_label",
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

    @admin.display(description="judge", ordering="judge")
    def judge_label(self, obj: Judgment) -> SafeString:
        if obj.judge.is_demo_model:
            return format_html(
                '{} <strong title="{}">(demo model)</strong>',
                obj.judge,
                "A plumbing/demo model: its judgments are not meaningful",
            )
        return format_html("{}", obj.judge)

    @admin.action(description="Re-judge parse failures", permissions=["run"])
    def rejudge_parse_failures(
        self, request: HttpRequest, queryset: QuerySet[Judgment]
    ) -> HttpResponse | None:
        """Per judge, a job over the selected judgments' generations whose judgment is a parse failure."""
        return self._rejudge(request, queryset, mode="parse_failed")

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
        from .runs import judge_job_create

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
class JobAdmin(RunActionsMixin, admin.ModelAdmin):
    actions = ["cancel_jobs", "retry_failed_items"]
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

    @admin.action(description="Cancel job", permissions=["run"])
    def cancel_jobs(self, request: HttpRequest, queryset: QuerySet[Job]) -> HttpResponse | None:
        from .runs import job_cancel

        running = [job for job in queryset if not job.is_finished]
        cancelled = [job_cancel(job=job) for job in running]
        if not cancelled:
            messages.warning(request, "None of the selected jobs was queued or running.")
            return None
        names = ", ".join(f"#{job.pk}" for job in cancelled)
        messages.success(request, f"Cancelled job{'s' if len(cancelled) > 1 else ''} {names}.")
        if len(cancelled) == 1:
            return redirect("judging:job_detail", pk=cancelled[0].pk)
        return redirect("judging:job_list")

    @admin.action(description="Retry failed items", permissions=["run"])
    def retry_failed_items(self, request: HttpRequest, queryset: QuerySet[Job]) -> HttpResponse | None:
        """A new job per selected generate/judge job over its failed items."""
        from .runs import job_retry_failed

        with_failures = [job for job in queryset if job.failed and job.kind in {"generate", "judge"}]
        if not with_failures:
            messages.warning(request, "None of the selected generate or judge jobs has failed items.")
            return None
        return run_jobs(request, with_failures, lambda job: job_retry_failed(job=job), what="retry")

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
        created_by=request_user(request),
    )
