"""The pairwise figures page's form of its LLM twin: which judge answers the study's pairs."""

from __future__ import annotations

from django import forms

from judging.models import Judge


class PairwiseJudgeForm(forms.Form):
    judge = forms.ModelChoiceField(
        Judge.objects.order_by("judge_id"),
        to_field_name="judge_id",
        help_text="a judge made from a config (an imported judge has no prompt to send); it is asked about "
        "every pair in both orders, with the pairwise prompt (prompts/pairwise_judge.txt)",
    )
