"""The "Answer with a model" form of a task set's page: a model config (configs/goal_step/, or any generator
config of configs/generators/), the split and whether the model sees the candidates alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings

from .answer import configs_dir, task_model_for_config
from .models import TaskModel, TaskSplit


def _yaml_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix in {".yaml", ".yml"} and p.is_file())


def answer_config_files() -> dict[str, Path]:
    """The configs offered, by their path from the project root: goal-step models, then generators."""
    generators = Path(settings.BASE_DIR) / "configs" / "generators"
    return {
        str(path.relative_to(settings.BASE_DIR)): path
        for path in [*_yaml_files(configs_dir()), *_yaml_files(generators)]
    }


class AnswerTasksForm(forms.Form):
    config = forms.ChoiceField(
        label="Model",
        help_text="a config of configs/goal_step/ or configs/generators/ (the model is made on first use; "
        "the same file always makes the same model, so starting again answers only what is missing)",
    )
    split = forms.ChoiceField(choices=TaskSplit.choices, initial=TaskSplit.TEST)
    candidates_only = forms.BooleanField(
        required=False,
        label="Candidates only",
        help_text="show the candidates without the prompt: the model's artifact check (it should sit at "
        "chance)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["config"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "— choose a model config —"), *((name, name) for name in answer_config_files())]

    def clean_config(self) -> TaskModel:
        """The TaskModel of the chosen file; a config that cannot answer (a prompt_path) names the field."""
        name = self.cleaned_data["config"]
        try:
            return task_model_for_config(answer_config_files()[name])
        except ValueError as exc:  # ConfigError, a broken prompt file
            raise forms.ValidationError(str(exc)) from exc
