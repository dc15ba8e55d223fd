"""Step-type models of a study (staff): /studies/<slug>/step-types/models/ shows each classifier against the
gold labels in the SIO paper's Table 3 layout, overall and per topic
(annotation/kinds/step_types/evaluation.py
has the definitions); /studies/<slug>/step-types/models/classify/ (POST, jobs.add_job) starts a
classification job with a model of configs/step_types/. The page's classification jobs poll their row on
the Jobs endpoint; when one finishes the figures reload (htmx, the same fragment)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from annotation.base.job_kinds import CLASSIFY_STEPS
from annotation.base.models import Study
from annotation.kinds.step_types.candidates import StepType
from annotation.kinds.step_types.classify import (
    classifier_config,
    classifier_for_config,
    classify_job_create,
    step_type_configs,
)
from annotation.kinds.step_types.evaluation import (
    GOLD_STUDY,
    Column,
    ModelFigures,
    StepTypeModelsTable,
    step_type_models_table,
)
from annotation.kinds.step_types.measures import ALL
from annotation.kinds.step_types.name import KIND
from h2e_site.jobs.models import Job
from h2e_site.jobs.views import JobLine, job_lines
from h2e_site.llm.config import ConfigError
from h2e_site.web import HtmxHttpRequest, can_run_jobs, request_user, staff_required, wants_fragment

RECENT_JOBS = 5


@dataclass(frozen=True)
class ModelRow:
    """One row of a Table 3: a model over one column's gold items, its P, R, F1 per type and All in %."""

    figures: ModelFigures
    column: Column

    @property
    def cells(self) -> list[float]:
        evaluation = self.column.evaluation
        scores = [evaluation.per_type[t] for t in StepType]
        values = [v for s in scores for v in (s.precision, s.recall, s.f1)]
        values += [evaluation.all.precision, evaluation.all.recall, evaluation.all.f1]
        return [100 * v for v in values]


@dataclass(frozen=True)
class TopicTable:
    topic: str
    n_items: int
    rows: list[ModelRow]


@dataclass(frozen=True)
class ConfigChoice:
    name: str  # the file name in configs/step_types/
    model: str = ""
    is_demo_model: bool = False
    problem: str = ""
    is_embedded: bool = False  # the embedded model (backend local): runs without a key or a GPU
    is_default: bool = False  # the choice the form starts on


def _study(slug: str) -> Study:
    return get_object_or_404(Study, slug=slug, kind=KIND)


def _topic_tables(table: StepTypeModelsTable) -> list[TopicTable]:
    return [
        TopicTable(
            topic, table.gold.items_by_topic[topic], [ModelRow(m, m.columns[topic]) for m in table.models]
        )
        for topic in table.topics
    ]


def _config_choices() -> list[ConfigChoice]:
    """The configs of configs/step_types/; the form starts on the embedded model's (it needs no API key),
    else on the first valid one."""
    choices = []
    for path in step_type_configs():
        try:
            config = classifier_config(path)
        except ConfigError as problem:
            choices.append(ConfigChoice(path.name, problem=str(problem)))
            continue
        embedded = config.backend == "local"
        choices.append(ConfigChoice(path.name, config.model, config.is_demo_model, is_embedded=embedded))
    valid = [c for c in choices if not c.problem]
    default = next((c for c in valid if c.is_embedded), valid[0] if valid else None)
    return [replace(c, is_default=True) if c is default else c for c in choices]


def _recent_jobs(study: Study) -> list[JobLine]:
    jobs = Job.objects.select_related("created_by").filter(kind=CLASSIFY_STEPS, parameters__study=study.pk)[
        :RECENT_JOBS
    ]
    return job_lines(list(jobs))


@staff_required
@require_GET
@vary_on_headers("HX-Request", "HX-Target")
def step_type_models_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The page, or its figures (#step-type-results) when htmx reloads them after a job finished."""
    study = _study(slug)
    try:
        table = step_type_models_table(study=study, source=request.GET.get("gold", GOLD_STUDY))
    except LookupError as unknown:
        return HttpResponseBadRequest(f"gold: {unknown}")
    tables = _topic_tables(table)
    context = {
        "study": study,
        "table": table,
        "overall": tables[0],
        "by_topic": [t for t in tables if t.topic != ALL],
        "any_demo": any(m.classifier.is_demo_model for m in table.models),
    }
    if wants_fragment(request):
        return render(request, "annotation/step_types_models.html#results", context)
    context |= {
        "configs": _config_choices(),
        "job_lines": _recent_jobs(study),
        "can_run": can_run_jobs(request),
    }
    return render(request, "annotation/step_types_models.html", context)


@staff_required
@require_POST
def step_type_models_classify(request: HttpRequest, slug: str) -> HttpResponse:
    """Start a job classifying the study's candidates that the chosen config's model has not answered."""
    if not can_run_jobs(request):
        raise PermissionDenied("Starting jobs needs the 'add job' permission.")
    study = _study(slug)
    configs = {path.name: path for path in step_type_configs()}
    name = request.POST.get("config", "")
    if name not in configs:
        return HttpResponseBadRequest(f"config: {name[:80]!r} is not a file of configs/step_types/")
    try:
        job = _classify(study, configs[name], request)
    except ValueError as refused:  # ConfigError, PromptChanged, NothingToClassify
        messages.error(request, str(refused))
    else:
        messages.success(request, f"Started job #{job.pk}: {job.total} candidate(s) with {name}.")
    return redirect("annotation:step_type_models", slug=study.slug)


def _classify(study: Study, config_path: Path, request: HttpRequest) -> Job:
    with transaction.atomic():
        classifier = classifier_for_config(config_path)
        return classify_job_create(classifier=classifier, study=study, created_by=request_user(request))
