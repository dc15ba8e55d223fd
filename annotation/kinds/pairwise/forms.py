"""The pairwise figures page's forms of its LLM twin: which judge answers the study's pairs, and a config
attached to an imported judge so that it can."""

from __future__ import annotations

from typing import Any

from django import forms

from h2e_site.llm.config import load_config
from judging import judge_files
from judging.configs import judge_attach_config
from judging.models import Judge


class PairwiseJudgeForm(forms.Form):
    """Only judges that can run: judges with a config, and the config files of configs/judges/ (a file's
    judge is made on first use). An imported judge runs once a config is attached (AttachJudgeConfigForm)."""

    judge = forms.ChoiceField(
        help_text="a judge with a config, or a config file from configs/judges/; it is asked about every "
        "pair in both orders, with the pairwise prompt (prompts/pairwise_judge.txt)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["judge"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "— choose a judge —"), *judge_files.judge_choices()]

    def clean_judge(self) -> Judge:
        try:
            return judge_files.judge_from_choice(self.cleaned_data["judge"])
        except (ValueError, Judge.DoesNotExist) as exc:  # ConfigError names the file and the field
            raise forms.ValidationError(str(exc)) from exc


class AttachJudgeConfigForm(forms.Form):
    """An imported judge (no config) and a config file of configs/judges/ that describes it: attached when the
    form is valid (judging.configs.judge_attach_config refuses a config whose prompt or model differ)."""

    imported_judge = forms.ModelChoiceField(
        Judge.objects.filter(config={}).order_by("model", "judge_id"),
        to_field_name="judge_id",
        empty_label="— choose an imported judge —",
        label="Imported judge",
        help_text="imported from h2e files: it has no config, so it cannot run until one is attached",
    )
    config_file = forms.ChoiceField(
        label="Config file",
        help_text="its prompt must hash to the judge's recorded prompt (its judge_id stays)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["config_file"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(p.name, f"configs/judges/{p.name}") for p in judge_files.judge_config_files()]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        judge, name = data.get("imported_judge"), data.get("config_file")
        if judge is not None and name:
            try:
                config = load_config(judge_files.JUDGE_CONFIG_DIR / name, role="judge")
                judge_attach_config(judge=judge, config=config)
            except ValueError as exc:  # ConfigError: names the file or the judge, and the field
                raise forms.ValidationError(str(exc)) from exc
        return data
