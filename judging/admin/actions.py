"""The run actions' shared pieces: the judge choice (rows with a config, or the shipped config files), the
forms, the intermediate page every action shows, and starting one job per selected target."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.contrib import messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse

from h2e_site.jobs.admin import jobs_redirect
from h2e_site.jobs.models import Job
from h2e_site.llm.config import load_config
from mining.models import Split

from .. import judge_files
from ..configs import judge_attach_config
from ..generate_jobs import LIMIT
from ..models import Judge


class AttachConfigForm(forms.Form):
    config_file = forms.ChoiceField(label="Config file", help_text="a judge config from configs/judges/")

    def __init__(self, *args: Any, judge: Judge, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.judge = judge
        field = self.fields["config_file"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(p.name, f"configs/judges/{p.name}") for p in judge_files.judge_config_files()]

    def clean_config_file(self) -> str:
        """Attach it (the service refuses a config that does not describe the judge: shown on the field)."""

        name = self.cleaned_data["config_file"]
        try:
            judge_attach_config(
                judge=self.judge, config=load_config(judge_files.JUDGE_CONFIG_DIR / name, role="judge")
            )
        except ValueError as exc:  # ConfigError: names the file or the judge, and the field
            raise forms.ValidationError(str(exc)) from exc
        return f"configs/judges/{name}"


class GenerateForm(forms.Form):
    split = forms.ChoiceField(
        choices=[*Split.choices, ("", "all splits")],
        initial=Split.BENCH,
        required=False,
        help_text="the procedures (L1) to write L2 for; those with a good L2 from the generator are skipped",
    )
    limit = LIMIT.form_field(
        required=False, help_text="at most this many procedures (first by id); empty: all"
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
        judge_field.choices = [("", "— choose a judge —"), *judge_files.judge_choices()]

    def clean_judge(self) -> Judge:
        try:
            return judge_files.judge_from_choice(self.cleaned_data["judge"])
        except (ValueError, Judge.DoesNotExist) as exc:
            raise forms.ValidationError(str(exc)) from exc


def request_estimate(judge: Judge, n: int) -> str:
    """What n judge requests cost, as far as the app can say: an input-token estimate (the prompt's text at
    ~4 characters a token, plus ~350 tokens of goal, L1 and L2), and that no price is configured."""
    tokens = n * (len(judge.prompt_text or "") // 4 + 350)
    return (
        f"{n:,} request{'s' if n != 1 else ''} to {judge.model}, about {tokens:,} input tokens; "
        "cost: no price is configured for this model"
    )


def rejudge_summary(parse_failed: QuerySet[Any]) -> list[str]:
    """One line per judge: how many parse failures it re-judges, and what that costs."""
    counts = parse_failed.order_by().values_list("judge").annotate(n=Count("pk"))
    judges = Judge.objects.in_bulk([judge_pk for judge_pk, _ in counts])
    return [f"Judge {judges[pk].judge_id}: {request_estimate(judges[pk], n)}" for pk, n in counts]


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
