"""The run actions' shared pieces: the judge choice (rows with a config, or the shipped config files), the
forms, the intermediate page every action shows, and starting one job per selected target."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from h2e_site.jobs.admin import jobs_redirect
from h2e_site.jobs.models import Job
from h2e_site.web import RUN_PERMISSION
from mining.models import Split

from ..models import Judge

JUDGE_CONFIG_DIR = Path(settings.BASE_DIR) / "configs" / "judges"


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
        for judge in Judge.objects.exclude(config={}).by_model()
    ]
    files = [(f"file:{p.name}", f"configs/judges/{p.name}") for p in judge_config_files()]
    return [(label, options) for label, options in [("Judges", rows), ("Config files", files)] if options]


def _demo_suffix(judge: Judge) -> str:
    return " - demo model, judgments not meaningful" if judge.is_demo_model else ""


def judge_from_choice(value: str) -> Judge:
    """The Judge row for a judge_choices() value; raises ValueError (ConfigError) for a bad config file."""
    from h2e_site.llm.config import load_config

    from ..configs import judge_for_config

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
) -> HttpResponse | None:
    """Start one job per target through a service; message each failure; go to the job(s) started."""
    jobs: list[Job] = []
    for target in targets:
        try:
            jobs.append(start(target))
        except ValueError as exc:  # ConfigError too: an imported row, a bad config, a bad argument
            messages.error(request, f"{target}: {exc}")
    return jobs_redirect(request, jobs, what=what)
