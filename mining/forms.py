"""The "Mine" form of the Mining page: a run config from configs/mining/*.yaml and an optional run name.

A config is refused, naming the file and the field, when it does not validate (mining/config.py), when a
stage sends to the OpenAI API and its key variable is not set (every request would fail), or when it selects
no imported document.
"""

from __future__ import annotations

from pathlib import Path

from django import forms
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from h2e_site.llm.base import api_key_for
from h2e_site.llm.config import ConfigError

from .config import LLM_STAGES, RunConfig, load_run_config
from .models import MiningRun
from .runs import select_documents

CONFIG_DIR = Path(settings.BASE_DIR) / "configs" / "mining"


def config_files() -> list[Path]:
    """The run configs the page offers, by file name."""
    return sorted(CONFIG_DIR.glob("*.yaml"))


def _choice(path: Path) -> tuple[str, str]:
    try:
        name = load_run_config(path).name
    except ConfigError:
        name = "does not validate"
    return path.name, f"{name} ({path.name})"


def config_problem(config: RunConfig) -> str:
    """Why a run of this config could not send its requests ("" when it can)."""
    for stage in LLM_STAGES:
        model_config = config.stage_config(stage)
        if model_config.backend != "openai":
            continue
        try:
            api_key_for(model_config.backend_config())
        except ImproperlyConfigured as exc:
            return f"stages.{stage}: {exc}"
    return ""


def runnable_config_name() -> str | None:
    """The first config of configs/mining/ whose requests can be sent here (its API keys set, or a local
    server's): the form offers it first, so that a demo without an OpenAI key starts on the embedded model."""
    for path in config_files():
        try:
            config = load_run_config(path)
        except ConfigError:
            continue
        if not config_problem(config):
            return path.name
    return None


class MineForm(forms.Form):
    config = forms.ChoiceField(
        help_text="a run config of configs/mining/: model per stage, thresholds, candidates per topic"
    )
    name = forms.CharField(
        max_length=MiningRun._meta.get_field("name").max_length,
        required=False,
        help_text="the run's name (empty: the config's name)",
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["config"].choices = [_choice(path) for path in config_files()]  # type: ignore[attr-defined]
        self.fields["config"].initial = runnable_config_name()

    def clean_config(self) -> RunConfig:
        path = CONFIG_DIR / self.cleaned_data["config"]
        try:
            config = load_run_config(path)
        except ConfigError as exc:
            raise forms.ValidationError(str(exc)) from exc
        problem = config_problem(config)
        if problem:
            raise forms.ValidationError(f"{path.name}: {problem}")
        if not select_documents(config):
            raise forms.ValidationError(
                f"{path.name} selects no document: import some first (python manage.py import_documents "
                "PATH; the demo's are in demo/mining/documents.jsonl)"
            )
        return config
