"""The calibration study's form of its next round (the study page of a critical-failures study with a
calibration sample: annotation/kinds/critical_failures/calibration/sample.py draws it)."""

from __future__ import annotations

from django import forms

from annotation.base.types import SAMPLE_SIZE
from annotation.kinds.critical_failures.models import CalibrationDesign
from h2e_site.bounds import SEED
from judging.models import Judge


class CalibrationRoundForm(forms.Form):
    """The next round of a calibration study (its page): size, design, judges, seed."""

    size = SAMPLE_SIZE.form_field(initial=10, help_text="examples this round draws from the frame (n)")
    design = forms.ChoiceField(
        choices=[("", "default: disagreement with judges, else uniform"), *CalibrationDesign.choices],
        required=False,
    )
    judges = forms.ModelMultipleChoiceField(
        Judge.objects.all(), required=False, help_text="none: the study's judges"
    )
    seed = SEED.form_field(required=False, help_text="empty: a random seed (stored with the round)")
