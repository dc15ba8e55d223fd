"""Staff pages of goal-step task sets (issue #14): /tasks/ lists the sets with a "Build" form (POST
/tasks/build/ needs jobs.add_job and starts a build_tasks job), /tasks/<name>/ shows a set: "Answer with a
model" (POST /tasks/<name>/answer/, jobs.add_job: an answer_tasks job, its row shown live), the builder's
funnel per task, the candidates-only artifact check beside chance, counts by split and topic, a sample, and
the downloads (test.jsonl, train.jsonl, <task>.bigbench.json). While its job runs the page shows the job's
row, which polls the Jobs endpoint; when the job finishes the row fires "jobs-changed" and the page's body
reloads (htmx, the same fragment). Anonymous users go to the login page; signed-in non-staff users get 403.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from h2e_site.jobs.models import Job
from h2e_site.jobs.views import job_lines
from h2e_site.web import HtmxHttpRequest, can_run_jobs, request_user, staff_required, wants_fragment

from . import exports
from .answer import answer_job_create
from .answer_forms import AnswerTasksForm
from .answer_views import task_models_context
from .forms import TaskSetBuildForm
from .human_labels import validated_pks
from .job_kinds import ANSWER_TASKS, BUILD_TASKS
from .jobs import TaskSetRefused, task_set_create
from .models import GoalStepTask, TaskSet
from .selectors import artifact_lines, example_counts, example_sample, task_funnels

RECENT_JOBS = 5


def _task_set(name: str) -> TaskSet:
    return get_object_or_404(TaskSet.objects.select_related("job"), name=name)


def _list_context(request: HttpRequest, form: TaskSetBuildForm) -> dict[str, object]:
    jobs = Job.objects.select_related("created_by").filter(kind=BUILD_TASKS)[:RECENT_JOBS]
    return {
        "task_sets": TaskSet.objects.select_related("job"),
        "form": form,
        "can_run": can_run_jobs(request),
        "job_lines": job_lines(list(jobs)),
    }


@staff_required
@require_GET
def task_sets_page(request: HttpRequest) -> HttpResponse:
    """The task sets, newest first, the recent build jobs and the Build form."""
    return render(request, "goal_step/task_sets.html", _list_context(request, TaskSetBuildForm()))


@staff_required
@require_POST
def task_set_build(request: HttpRequest) -> HttpResponse:
    """Start a build_tasks job for a new set; its page follows the job."""
    if not can_run_jobs(request):
        raise PermissionDenied("Starting jobs needs the 'add job' permission.")
    form = TaskSetBuildForm(request.POST)
    if form.is_valid():
        try:
            task_set = task_set_create(
                form.cleaned_data["name"], created_by=request_user(request), **form.create_kwargs()
            )
        except TaskSetRefused as refused:
            form.add_error(None, str(refused))
        else:
            messages.success(request, f"Started job #{task_set.job_id}: building task set {task_set.name}.")
            return redirect("goal_step:task_set", name=task_set.name)
    return render(request, "goal_step/task_sets.html", _list_context(request, form), status=400)


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def task_set_page(request: HtmxHttpRequest, name: str) -> HttpResponse:
    """The set; its body alone when htmx reloads it after the build job (or a model's job) finished."""
    task_set = _task_set(name)
    context = _page_context(request, task_set, AnswerTasksForm())
    template = (
        "goal_step/task_set.html#task-set-body" if wants_fragment(request) else "goal_step/task_set.html"
    )
    return render(request, template, context)


@staff_required
@require_POST
def task_set_answer(request: HttpRequest, name: str) -> HttpResponse:
    """Start an answer_tasks job: the chosen model answers the examples of the split it has not answered
    yet; the page then shows the job's row, live, and the models' table once it has finished."""
    if not can_run_jobs(request):
        raise PermissionDenied("Starting jobs needs the 'add job' permission.")
    task_set = _task_set(name)
    form = AnswerTasksForm(request.POST)
    if form.is_valid():
        task_model = form.cleaned_data["config"]
        try:
            job = answer_job_create(
                task_model=task_model,
                task_set=task_set,
                split=form.cleaned_data["split"],
                candidates_only=form.cleaned_data["candidates_only"],
                created_by=request_user(request),
            )
        except ValueError as refused:  # NothingToAnswer, a model that cannot run
            form.add_error(None, str(refused))
        else:
            messages.success(
                request,
                f"Started job #{job.pk}: {task_model.model} answers {job.total} {job.parameters['split']} "
                f"example{'s' if job.total != 1 else ''} of {task_set.name}.",
            )
            return redirect("goal_step:task_set", name=task_set.name)
    return render(request, "goal_step/task_set.html", _page_context(request, task_set, form), status=400)


def _page_context(request: HttpRequest, task_set: TaskSet, answer_form: AnswerTasksForm) -> dict[str, object]:
    validated = validated_pks(task_set)
    answer_jobs = Job.objects.select_related("created_by").filter(
        kind=ANSWER_TASKS, parameters__task_set=task_set.pk
    )
    return {
        "task_set": task_set,
        **task_models_context(task_set, only=validated),
        "models_on_validated": validated is not None,
        "build_job_lines": job_lines([task_set.job]) if task_set.job else [],
        "funnels": task_funnels(task_set),
        "artifacts": artifact_lines(task_set),
        "counts": example_counts(task_set),
        "sample": example_sample(task_set),
        "tasks": GoalStepTask.choices,
        "can_run": can_run_jobs(request),
        "answer_form": answer_form,
        "answer_job_lines": job_lines(list(answer_jobs.order_by("-pk")[:RECENT_JOBS])),
    }


def _jsonl(examples: object, filename: str, **kwargs: object) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        exports.examples_jsonl(examples, **kwargs),  # type: ignore[arg-type]
        content_type="application/jsonl; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@staff_required
@require_GET
def task_set_test_jsonl(request: HttpRequest, name: str) -> HttpResponseBase:
    """The test examples as JSON lines, each with `validated` (null until validation results exist);
    ?validated=1: only the validated ones (400 when there are no results yet)."""
    task_set = _task_set(name)
    validated = validated_pks(task_set)
    only = request.GET.get("validated") in {"1", "true", "yes"}
    try:
        examples = exports.test_examples(task_set, only, validated=validated)
    except exports.NoValidation as missing:
        return HttpResponseBadRequest(str(missing))
    suffix = "-validated" if only else ""
    return _jsonl(examples, f"{task_set.name}-test{suffix}.jsonl", validated=validated)


@staff_required
@require_GET
def task_set_train_jsonl(request: HttpRequest, name: str) -> HttpResponseBase:
    """The training examples as JSON lines (no prompt or candidate shared with the test set)."""
    task_set = _task_set(name)
    return _jsonl(exports.train_examples(task_set), f"{task_set.name}-train.jsonl")


@staff_required
@require_GET
def task_set_bigbench(request: HttpRequest, name: str, task: str) -> HttpResponse:
    """The test examples of one task as a BIG-bench JSON task."""
    if task not in GoalStepTask.values:
        raise Http404("no such task")
    task_set = _task_set(name)
    response = HttpResponse(
        exports.task_set_bigbench(task_set, task), content_type="application/json; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{task_set.name}-{task}.bigbench.json"'
    return response
