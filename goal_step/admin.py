"""Admin of goal-step task sets (autodiscovered by the admin): the sets with their page (funnel,
artifact check, downloads) and examples, read-only; one action builds a new set with a selected set's
selection under a new name and seed (needs jobs.add_job, as every job-starting action does). New sets from
scratch are built on the Tasks page (/tasks/), with manage.py build_tasks or POST /api/jobs/."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from h2e_site.bounds import BoundedJSONAdmin, model_range
from h2e_site.web import RunActionsMixin, confirmed, request_user
from mining.models import Split

from .jobs import TaskSetRefused, task_set_create
from .models import TaskExample, TaskSet
from .selection import SplitBy


class RebuildForm(forms.Form):
    name = forms.SlugField(max_length=64, help_text="the new task set's name")
    seed = model_range(TaskSet, "seed").form_field(initial=1)

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if TaskSet.objects.filter(name=name).exists():
            raise forms.ValidationError(f"a task set {name!r} exists already")
        return name


@admin.register(TaskSet)
class TaskSetAdmin(BoundedJSONAdmin, RunActionsMixin, admin.ModelAdmin):
    list_display = ["name", "source", "seed", "n_examples", "job", "page_link", "examples_link", "created_at"]
    list_filter = ["source"]
    search_fields = ["name"]
    raw_id_fields = ["job"]
    readonly_fields = (
        "name",
        "source",
        "seed",
        "selection",
        "settings",
        "funnel",
        "artifacts",
        "job",
        "page_link",
        "examples_link",
        "created_at",
    )
    fields = readonly_fields
    actions = ["build_again"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[TaskSet]:
        return super().get_queryset(request).select_related("job").annotate(examples_count=Count("examples"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # built by a job: the Tasks page, manage.py build_tasks, POST /api/jobs/

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(description="examples")
    def n_examples(self, obj: TaskSet) -> int:
        return getattr(obj, "examples_count", 0)

    @admin.display(description="funnel")
    def page_link(self, obj: TaskSet) -> SafeString:
        return format_html(
            '<a href="{}">Funnel and downloads</a>', reverse("goal_step:task_set", args=[obj.name])
        )

    @admin.display(description="examples")
    def examples_link(self, obj: TaskSet) -> SafeString:
        url = reverse("admin:goal_step_taskexample_changelist") + f"?task_set__id__exact={obj.pk}"
        return format_html('<a href="{}">Examples</a>', url)

    @admin.action(description="Build a new set with this selection (new name and seed)", permissions=["run"])
    def build_again(self, request: HttpRequest, queryset: QuerySet[TaskSet]) -> TemplateResponse | None:
        if queryset.count() != 1:
            self.message_user(request, "Choose exactly one task set.", messages.ERROR)
            return None
        origin = queryset.get()
        form = RebuildForm(request.POST if confirmed(request) else None)
        if confirmed(request) and form.is_valid():
            selection = origin.selection
            try:
                task_set = task_set_create(
                    form.cleaned_data["name"],
                    seed=form.cleaned_data["seed"],
                    splits=selection.get("splits") or [Split.BENCH],
                    topic_ids=selection.get("topics") or [],
                    test_share=float(selection.get("test_share", 0.2)),
                    split_by=selection.get("split_by", SplitBy.TEXT),
                    created_by=request_user(request),
                )
            except TaskSetRefused as refused:  # shown on the form, which stays filled in
                form.add_error(None, str(refused))
            else:
                self.message_user(request, f"Task set {task_set.name}: job #{task_set.job_id} started.")
                return None
        return self.action_page(
            request,
            queryset,
            action="build_again",
            title="Build a new task set",
            submit_label="Build",
            form=form,
            intro="A build_tasks job over the same splits and topics, with the name and seed given here.",
        )


@admin.register(TaskExample)
class TaskExampleAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    list_display = ["task_set", "task", "split", "position", "prompt_short", "answer", "topic"]
    list_filter = ["task", "split", "task_set"]
    list_select_related = ["task_set", "topic"]
    search_fields = ["prompt"]
    show_full_result_count = False
    readonly_fields = (
        "task_set",
        "task",
        "split",
        "position",
        "prompt",
        "candidates",
        "answer",
        "procedure",
        "topic",
        "meta",
    )
    fields = readonly_fields

    @admin.display(description="prompt")
    def prompt_short(self, obj: TaskExample) -> str:
        return obj.prompt[:100]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
