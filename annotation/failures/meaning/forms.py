"""The failure-patterns page's form: k (empty: chosen from the data) and seed, bounded by FailurePatternRun's
fields (model_range), as the API's serializer and the command are."""

from __future__ import annotations

from django import forms

from annotation.failures.meaning.jobs import DEFAULT_K, DEFAULT_SEED, pattern_k_range
from annotation.failures.meaning.models import FailurePatternRun
from h2e_site.bounds import model_range


class FailurePatternsForm(forms.Form):
    k = model_range(FailurePatternRun, "k").form_field(
        required=False,
        label="Clusters (k)",
        widget=forms.NumberInput(attrs={"placeholder": "from the data"}),
        help_text=f"how many patterns faiss k-means looks for; empty: chosen from the topic's failures "
        f"with a vector, n (⌊√(n/2)⌋, from {pattern_k_range()[0]} to {DEFAULT_K})",
    )
    seed = model_range(FailurePatternRun, "seed").form_field(
        initial=DEFAULT_SEED, label="Seed", help_text="the same seed gives the same clusters"
    )
