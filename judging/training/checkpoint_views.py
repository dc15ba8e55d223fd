"""The checkpoints page of a training run (staff): the Table 2 layout of checkpoint_table, a form that
registers a checkpoint from a generator config, the OOD file import, and the buttons that start the
existing generate and judge jobs for the checkpoints (those need the jobs.add_job permission).

The judge and the external judge are chosen with ?judge= and ?external= (judge_ids); an htmx swap of the
chooser gets the table's fragment only. A refused form or file re-renders the page with a 400 naming the
field (the OOD file: its line and field), and nothing is stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseBase, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from h2e_site.llm.config import ConfigError
from h2e_site.web import (
    HtmxHttpRequest,
    can_run_jobs,
    query_string,
    request_user,
    staff_required,
    wants_fragment,
)

from ..models import Judge
from .checkpoint_jobs import JobAction, checkpoint_jobs_start
from .checkpoint_models import LABEL_MAX, Checkpoint
from .checkpoints import STEP, CheckpointRefused, CheckpointTable, checkpoint_register, checkpoint_table
from .models import TrainingRun
from .ood import MAX_FILE_BYTES, OODFileRefused, ood_import

GENERATOR_CONFIGS = Path(settings.BASE_DIR) / "configs" / "generators"


# --- forms ------------------------------------------------------------------------------------------------


class TableJudgesForm(forms.Form):
    """?judge= and ?external=: judge_ids, both optional."""

    judge = forms.CharField(max_length=64, required=False)
    external = forms.CharField(max_length=64, required=False)

    def _judge(self, name: str) -> Judge | None:
        judge_id = self.cleaned_data[name].strip()
        if not judge_id:
            return None
        judge = Judge.objects.filter(judge_id=judge_id).first()
        if judge is None:
            raise forms.ValidationError(f"no judge has the judge_id {judge_id!r}")
        return judge

    def clean_judge(self) -> Judge | None:
        return self._judge("judge")

    def clean_external(self) -> Judge | None:
        return self._judge("external")


def config_files() -> list[str]:
    """The YAML files under configs/generators/ (any depth), as paths from the repository root."""
    if not GENERATOR_CONFIGS.is_dir():
        return []
    base = Path(settings.BASE_DIR)
    return sorted(str(p.relative_to(base)) for p in GENERATOR_CONFIGS.rglob("*.y*ml") if p.is_file())


class RegisterCheckpointForm(forms.Form):
    step = STEP.form_field(help_text="the training step of the checkpoint (0: the model before training)")
    label = forms.CharField(
        max_length=LABEL_MAX, required=False, help_text="optional, e.g. base or +RL (not a number)"
    )
    config = forms.CharField(
        max_length=500,
        label="Generator config",
        help_text="a YAML file under configs/generators/ (e.g. a vLLM server serving this checkpoint), as a "
        "path from the repository root",
        widget=forms.TextInput(attrs={"list": "generator-configs", "autocomplete": "off"}),
    )

    def clean_config(self) -> Path:
        """Inside configs/generators/: the page reads no other file of the server."""
        given = self.cleaned_data["config"].strip()
        path = (Path(settings.BASE_DIR) / given).resolve()
        if not path.is_relative_to(GENERATOR_CONFIGS.resolve()):
            raise forms.ValidationError(f"{given!r} is not under configs/generators/")
        if not path.is_file():
            raise forms.ValidationError(f"{given}: no such file")
        return path


class OODFileForm(forms.Form):
    file = forms.FileField(
        allow_empty_file=True,  # the import says "no rows", by line
        label="OOD results file",
        help_text="CSV (a header row) or JSONL: benchmark, checkpoint (step or label), score, optionally "
        "higher_is_better",
    )


class CheckpointJobsForm(forms.Form):
    action = forms.ChoiceField(choices=[("generate", "generate"), ("judge", "judge")])
    step = forms.CharField(max_length=20, help_text="a checkpoint's step, or all")
    judge = forms.CharField(max_length=64, required=False)

    def __init__(self, *args: Any, run: TrainingRun, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.run = run

    def clean_step(self) -> list[Checkpoint]:
        value = self.cleaned_data["step"].strip()
        checkpoints = self.run.checkpoints.select_related("generator").order_by("step")
        if value != "all":
            if not (value.isascii() and value.isdigit()):
                raise forms.ValidationError(f"{value!r} is not a step or all")
            checkpoints = checkpoints.filter(step=int(value))
        found = list(checkpoints)
        if not found:
            raise forms.ValidationError(f"run {self.run.name!r} has no checkpoint {value}")
        return found

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("action") == "judge":
            judge_id = (data.get("judge") or "").strip()
            data["judge"] = Judge.objects.filter(judge_id=judge_id).first() if judge_id else None
            if data["judge"] is None:
                self.add_error("judge", f"no judge has the judge_id {judge_id!r}" if judge_id else "required")
        return data


# --- views ------------------------------------------------------------------------------------------------


def _run(name: str) -> TrainingRun:
    return get_object_or_404(TrainingRun.objects.select_related("judge"), name=name)


def _page_url(run: TrainingRun, query: str = "") -> str:
    url = reverse("judging:training_checkpoints", args=[run.name])
    return f"{url}?{query}" if query else url


def _shown_judges(request: HttpRequest) -> dict[str, str]:
    """The judges the page showed when a form of it was sent (only those: the field is the browser's)."""
    shown = QueryDict(request.POST.get("table_query", ""))
    return {name: shown.get(name, "")[:64] for name in ("judge", "external")}


def _back(request: HttpRequest, run: TrainingRun) -> HttpResponseBase:
    """Back to the page, with the judges it showed."""
    return redirect(_page_url(run, query_string(_shown_judges(request))))


def _table_query(table: CheckpointTable) -> str:
    judge, external = table.judge, table.external
    return query_string(
        {"judge": judge.judge_id if judge else "", "external": external.judge_id if external else ""}
    )


def _page(
    request: HttpRequest,
    run: TrainingRun,
    *,
    judges_form: TableJudgesForm | None = None,
    register_form: RegisterCheckpointForm | None = None,
    ood_form: OODFileForm | None = None,
    ood_error: str = "",
    status: int = 200,
) -> HttpResponse:
    judges_form = judges_form or TableJudgesForm(request.GET)
    if not judges_form.is_valid():
        return _refused(judges_form)
    table = checkpoint_table(
        run, judge=judges_form.cleaned_data["judge"], external=judges_form.cleaned_data["external"]
    )
    context = {
        "run": run,
        "judges_form": judges_form,
        "table": table,
        "table_query": _table_query(table),
        "judges": list(Judge.objects.by_model()),
        "can_run": can_run_jobs(request),
        "register_form": register_form or RegisterCheckpointForm(),
        "ood_form": ood_form or OODFileForm(),
        "ood_error": ood_error,
        "config_files": config_files(),
        "max_file_mb": MAX_FILE_BYTES // 1_000_000,
    }
    template = "judging/training/checkpoints.html"
    if wants_fragment(request):  # type: ignore[arg-type]
        template += "#checkpoint-table"
    return render(request, template, context, status=status)


def _page_again(request: HttpRequest, run: TrainingRun, **refused: Any) -> HttpResponse:
    """The page with a refused form (400), under the judges it showed."""
    return _page(request, run, judges_form=TableJudgesForm(_shown_judges(request)), status=400, **refused)


def _refused(form: forms.Form) -> HttpResponseBadRequest:
    """A 400 naming each refused field (a query or a button's form: nothing to re-render)."""
    problems = "; ".join(f"{field}: {' '.join(map(str, errors))}" for field, errors in form.errors.items())
    return HttpResponseBadRequest(problems, content_type="text/plain; charset=utf-8")


@staff_required
@require_GET
@vary_on_headers("HX-Request")
def checkpoints_page(request: HtmxHttpRequest, name: str) -> HttpResponse:
    """The run's checkpoint table (Table 2's layout) with its forms."""
    return _page(request, _run(name))


@staff_required
@require_POST
def checkpoint_register_view(request: HttpRequest, name: str) -> HttpResponseBase:
    """Register (or relabel) a checkpoint of the run from a generator config under configs/generators/."""
    run = _run(name)
    form = RegisterCheckpointForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            checkpoint = checkpoint_register(
                run=run,
                step=data["step"],
                config_path=data["config"],
                label=data["label"],
                created_by=request_user(request),
            )
        except CheckpointRefused as refused:
            form.add_error(refused.field_name, str(refused).removeprefix(f"{refused.field_name}: "))
        except ConfigError as refused:  # names the file and its field
            form.add_error("config", str(refused))
        else:
            model = checkpoint.generator.model
            messages.success(request, f"Checkpoint {checkpoint.name} registered: {model}.")
            return _back(request, run)
    return _page_again(request, run, register_form=form)


@staff_required
@require_POST
def ood_import_view(request: HttpRequest, name: str) -> HttpResponseBase:
    """Import out-of-domain results from a CSV or JSONL file: all rows, or none and a 400 naming each
    refused row's line and field."""
    run = _run(name)
    form = OODFileForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page_again(request, run, ood_form=form)
    upload = form.cleaned_data["file"]
    try:
        report = ood_import(run=run, data=upload.read(MAX_FILE_BYTES + 1), name=upload.name or "upload")
    except OODFileRefused as refused:
        return _page_again(request, run, ood_error=str(refused))
    messages.success(
        request,
        f"OOD results imported from {upload.name}: {report.n_created} new, {report.n_updated} replaced "
        f"({', '.join(report.benchmarks)}).",
    )
    return _back(request, run)


@staff_required
@require_POST
def checkpoint_jobs_view(request: HttpRequest, name: str) -> HttpResponseBase:
    """Start the existing generate job (the bench split) or judge job for one checkpoint or all of them."""
    run = _run(name)
    if not can_run_jobs(request):
        raise PermissionDenied("Generating and judging need the 'add job' permission.")
    form = CheckpointJobsForm(request.POST, run=run)
    if not form.is_valid():
        return _refused(form)
    action: JobAction = form.cleaned_data["action"]
    started = checkpoint_jobs_start(
        checkpoints=form.cleaned_data["step"],
        action=action,
        judge=form.cleaned_data.get("judge"),
        created_by=request_user(request),
    )
    for line in started.refusals:
        messages.warning(request, line)
    if started.jobs:
        numbers = ", ".join(f"#{job.pk}" for job in started.jobs)
        messages.success(request, f"Started {len(started.jobs)} {action} job(s): {numbers}.")
    if len(started.jobs) == 1:
        return redirect("jobs:job_detail", pk=started.jobs[0].pk)
    return _back(request, run)
