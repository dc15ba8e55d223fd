"""The run actions' shared pieces: the judge choice (rows with a config, or the shipped config files), the
forms, the intermediate page every action shows, and starting one job per selected target."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse

from h2e_site.jobs.admin import jobs_redirect
from h2e_site.jobs.models import Job
from h2e_site.llm.config import load_config
from mining.models import Split

from ..configs import judge_attach_config, judge_for_config, judge_id_of
from ..generate_jobs import LIMIT
from ..models import Judge

JUDGE_CONFIG_DIR = Path(settings.BASE_DIR) / "configs" / "judges"


def judge_config_files() -> list[Path]:
    """The judge configs shipped in configs/judges/ (YAML)."""
    if not JUDGE_CONFIG_DIR.is_dir():
        return []
    return sorted(p for p in JUDGE_CONFIG_DIR.iterdir() if p.suffix in {".yaml", ".yml"} and p.is_file())


def judge_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    """Judges that can run (rows with a config), then the config files no row was made from yet (a row is
    made on first use); a file some row was made from shows as that row, named with the file."""
    judges = list(Judge.objects.exclude(config={}).by_model())
    files_of: dict[str, list[str]] = defaultdict(list)
    new_files = []
    for path in judge_config_files():
        judge_id = _config_file_judge_id(path)
        if judge_id is not None and any(judge.judge_id == judge_id for judge in judges):
            files_of[judge_id].append(f"configs/judges/{path.name}")
        else:
            new_files.append((f"file:{path.name}", f"configs/judges/{path.name} (new judge)"))
    rows = [
        (
            f"judge:{judge.pk}",
            f"{judge.model} ({judge.judge_id}){_demo_suffix(judge)}"
            + (f" · {', '.join(files_of[judge.judge_id])}" if files_of[judge.judge_id] else ""),
        )
        for judge in judges
    ]
    return [(label, options) for label, options in [("Judges", rows), ("Config files", new_files)] if options]


def _config_file_judge_id(path: Path) -> str | None:
    """The judge_id a config file would make (None when the file does not load: choosing it says why)."""

    try:
        return judge_id_of(load_config(path, role="judge"))
    except (ValueError, OSError):
        return None


def _demo_suffix(judge: Judge) -> str:
    return " - demo model, judgments not meaningful" if judge.is_demo_model else ""


def judge_from_choice(value: str) -> Judge:
    """The Judge row for a judge_choices() value; raises ValueError (ConfigError) for a bad config file."""

    kind, _, ref = value.partition(":")
    if kind == "judge":
        return Judge.objects.get(pk=int(ref))
    path = JUDGE_CONFIG_DIR / ref
    if path not in judge_config_files():
        raise ValueError(f"no judge config file {ref!r} in configs/judges/")
    return judge_for_config(load_config(path, role="judge"))


class AttachConfigForm(forms.Form):
    config_file = forms.ChoiceField(label="Config file", help_text="a judge config from configs/judges/")

    def __init__(self, *args: Any, judge: Judge, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.judge = judge
        field = self.fields["config_file"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(p.name, f"configs/judges/{p.name}") for p in judge_config_files()]

    def clean_config_file(self) -> str:
        """Attach it (the service refuses a config that does not describe the judge: shown on the field)."""

        name = self.cleaned_data["config_file"]
        try:
            judge_attach_config(judge=self.judge, config=load_config(JUDGE_CONFIG_DIR / name, role="judge"))
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
        judge_field.choices = [("", "— choose a judge —"), *judge_choices()]

    def clean_judge(self) -> Judge:
        try:
            return judge_from_choice(self.cleaned_data["judge"])
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
