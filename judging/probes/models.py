"""Judge probes (issue #32 item 5, paper §D.1): a judge's verdicts on a sample of a generator's L2, each
judged as it is and perturbed in a known way; judging/probes/__init__.py says what each kind measures.

The perturbed L2 lives only here (JudgeProbeItem.perturbed_steps) and so does the judge's verdict on it: no
Generation, Judgment or CriticalFailure is written for it, so no leaderboard, agreement or failure page
ever counts it. The original L2 is a real Generation; its verdict is the judge's stored Judgment (judged
by the probe's job when there is none, and then stored as any judge job stores it), copied onto the item
when the probe reads it."""

from __future__ import annotations

from django.db import models


class ProbeKind(models.TextChoices):
    VERBOSE = "verbose", "verbose rewrite (same content, more words)"
    DELETE_STEP = "delete_step", "one step deleted"
    SWAP_STEPS = "swap_steps", "two steps swapped"


class JudgeProbe(models.Model):
    """One probe of a judge: `n` L2 of a generator, sampled with `seed`, perturbed by `kind`."""

    judge = models.ForeignKey("judging.Judge", on_delete=models.CASCADE, related_name="probes")
    generator = models.ForeignKey("judging.Generator", on_delete=models.CASCADE, related_name="probes")
    kind = models.CharField(max_length=16, choices=ProbeKind.choices)
    n = models.PositiveIntegerField(help_text="L2 sampled")
    seed = models.IntegerField(help_text="seeds the sample and each item's perturbation")
    rewriter_config = models.JSONField(
        default=dict, blank=True, help_text="verbose: the resolved config of the model that rewrites"
    )
    rewriter_config_path = models.CharField(max_length=255, blank=True, default="")
    prompt_text = models.TextField(blank=True, default="", help_text="verbose: the rewrite prompt sent")
    prompt_sha256 = models.CharField(max_length=64, blank=True, default="")
    job = models.ForeignKey(
        "jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="judge_probes"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=ProbeKind.values), name="judge_probe_kind_known"
            )
        ]

    def __str__(self) -> str:
        return f"probe #{self.pk}: {self.get_kind_display()} of {self.judge_id} on {self.generator_id}"


class JudgeProbeItem(models.Model):
    """One sampled L2: its perturbation, the judge's verdict on the original and on the perturbed L2, the
    tokens (o200k_base) of both, or why the item could not be finished."""

    probe = models.ForeignKey(JudgeProbe, on_delete=models.CASCADE, related_name="items", db_index=False)
    generation = models.ForeignKey("judging.Generation", on_delete=models.CASCADE, related_name="probe_items")
    position = models.PositiveIntegerField(help_text="its place in the seeded sample")
    perturbation = models.JSONField(
        default=dict, blank=True, help_text='{"deleted_step": k} or {"swapped_steps": [i, j]} (1-based)'
    )
    perturbed_steps = models.JSONField(null=True, blank=True, help_text="empty until rewritten (verbose)")
    rewrite_output = models.TextField(blank=True, default="", help_text="the rewriter's raw answer")
    original_tokens = models.IntegerField(null=True, blank=True)
    perturbed_tokens = models.IntegerField(null=True, blank=True)
    original_judgment = models.ForeignKey(
        "judging.Judgment", on_delete=models.SET_NULL, null=True, blank=True, related_name="probe_items"
    )
    original_has_failure = models.BooleanField(null=True, blank=True)
    original_n_failures = models.IntegerField(null=True, blank=True)
    original_parse_failed = models.BooleanField(null=True, blank=True)
    perturbed_has_failure = models.BooleanField(null=True, blank=True)
    perturbed_n_failures = models.IntegerField(null=True, blank=True)
    perturbed_parse_failed = models.BooleanField(null=True, blank=True)
    perturbed_failures = models.JSONField(
        default=list, blank=True, help_text="the critical failures the judge listed on the perturbed L2"
    )
    perturbed_output = models.TextField(blank=True, default="", help_text="the judge's raw answer")
    error = models.TextField(blank=True, default="", help_text="why the item was not finished")

    class Meta:
        ordering = ["probe_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["probe", "generation"], name="judge_probe_item_unique"),
            models.UniqueConstraint(fields=["probe", "position"], name="judge_probe_item_position"),
        ]

    def __str__(self) -> str:
        return f"probe {self.probe_id} item {self.position} (generation {self.generation_id})"

    @property
    def original_known(self) -> bool:
        return self.original_parse_failed is not None

    @property
    def perturbed_known(self) -> bool:
        return self.perturbed_parse_failed is not None

    @property
    def scored(self) -> bool:
        """Both verdicts read, neither a parse failure: the item counts in the probe's figures."""
        return self.original_parse_failed is False and self.perturbed_parse_failed is False

    @property
    def length_ratio(self) -> float | None:
        if self.perturbed_tokens is None or not self.original_tokens:
            return None
        return self.perturbed_tokens / self.original_tokens
