"""The "Start a judge probe" form: the judge (a row with a config, or a file of configs/judges/), the
generator whose L2 are sampled, the kind of perturbation, the sample size and seed, and for the verbose
probe the rewriter (a file of configs/generators/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings

from ..judge_files import judge_choices, judge_from_choice
from ..models import Generator, Judge
from .jobs import MAX_N, MAX_SEED
from .models import ProbeKind

DEFAULT_N = 50


def rewriter_config_files() -> dict[str, Path]:
    """The generator configs a rewriter may be, by their path from the project root."""
    directory = Path(settings.BASE_DIR) / "configs" / "generators"
    if not directory.is_dir():
        return {}
    files = sorted(p for p in directory.iterdir() if p.suffix in {".yaml", ".yml"} and p.is_file())
    return {str(path.relative_to(settings.BASE_DIR)): path for path in files}


class JudgeProbeForm(forms.Form):
    judge = forms.ChoiceField(help_text="the judge under test (a config file makes its judge on first use)")
    generator = forms.ModelChoiceField(
        queryset=Generator.objects.by_model(),
        help_text="whose L2 are sampled (those without an error; 2 steps at least to delete or swap)",
    )
    kind = forms.ChoiceField(choices=ProbeKind.choices, initial=ProbeKind.VERBOSE)
    n = forms.IntegerField(
        label="Sample size", min_value=1, max_value=MAX_N, initial=DEFAULT_N, help_text="L2 sampled"
    )
    seed = forms.IntegerField(
        min_value=0, max_value=MAX_SEED, initial=0, help_text="the same seed draws the same sample"
    )
    rewriter_config = forms.ChoiceField(
        label="Rewriter",
        required=False,
        help_text="verbose only: the model that rewrites each L2 (a config of configs/generators/)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        judge = self.fields["judge"]
        rewriter = self.fields["rewriter_config"]
        assert isinstance(judge, forms.ChoiceField) and isinstance(rewriter, forms.ChoiceField)
        judge.choices = [("", "— choose a judge —"), *judge_choices()]
        rewriter.choices = [("", "— none —"), *((name, name) for name in rewriter_config_files())]

    def clean_judge(self) -> Judge:
        try:
            return judge_from_choice(self.cleaned_data["judge"])
        except (ValueError, Judge.DoesNotExist) as exc:  # a config file that does not load
            raise forms.ValidationError(str(exc)) from exc

    def clean_rewriter_config(self) -> Path | None:
        name = self.cleaned_data["rewriter_config"]
        return rewriter_config_files()[name] if name else None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        verbose = data.get("kind") == ProbeKind.VERBOSE
        if verbose and "rewriter_config" in data and data["rewriter_config"] is None:
            self.add_error("rewriter_config", "The verbose probe needs a rewriter.")
        if not verbose and data.get("rewriter_config") is not None:
            self.add_error("rewriter_config", "Only the verbose probe has a rewriter: choose none.")
        return data
