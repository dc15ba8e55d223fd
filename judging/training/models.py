"""The tables of the reward service: a training run, each reward call it made, and the judge's verdict on a
(procedure, final answer) pair, kept so that the same pair is answered from the store.

They live in the judging app (judging/models.py imports this module): a run's judge is a Judge, its
procedures are mining's Procedures, and its checkpoints come back as Generators.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from h2e_site.bounds import INT32_MAX

RUN_NAME_MAX = 200
GROUP_MAX = 200
POLICY_MAX = 255


class TrainingRun(models.Model):
    """An RL run that asks the reward service for rewards: every call with its step is kept under it."""

    name = models.CharField(max_length=RUN_NAME_MAX, unique=True)
    policy = models.CharField(
        max_length=POLICY_MAX, blank=True, default="", help_text="the model being trained"
    )
    reward_name = models.CharField(
        max_length=200, help_text="the reward config (configs/rewards/<name>.yaml)"
    )
    reward_config = models.JSONField(default=dict, help_text="the reward config as the run first used it")
    judge = models.ForeignKey(
        "judging.Judge", on_delete=models.PROTECT, related_name="training_runs", null=True, blank=True
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [("request_reward", "Can ask the reward service for rewards (POST /api/reward/)")]

    def __str__(self) -> str:
        return self.name


class RewardJudgment(models.Model):
    """What a judge said about one final answer to one procedure (read answers only: a judge that failed or
    could not be read is asked again next time). `procedure_key` is the SHA-256 of the procedure's goal,
    resources and reference steps, so a procedure given inline and by its id share their verdicts."""

    judge = models.ForeignKey("judging.Judge", on_delete=models.CASCADE, related_name="reward_judgments")
    procedure_key = models.CharField(max_length=64)
    answer_sha256 = models.CharField(max_length=64)
    has_failure = models.BooleanField()
    n_failures = models.IntegerField()
    failures = models.JSONField(default=list, blank=True)
    reasoning = models.TextField(blank=True, default="")
    raw_output = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "procedure_key", "answer_sha256"], name="reward_judgment_unique_per_answer"
            )
        ]

    def __str__(self) -> str:
        return f"{self.judge_id} on {self.procedure_key[:8]}/{self.answer_sha256[:8]}"


class RewardCall(models.Model):
    """One item of one POST /api/reward/: the rewards it was given, with its run and step."""

    run = models.ForeignKey(
        TrainingRun, on_delete=models.CASCADE, related_name="calls", null=True, blank=True
    )
    step = models.IntegerField(null=True, blank=True)
    group = models.CharField(max_length=GROUP_MAX, blank=True, default="")
    reward_name = models.CharField(max_length=200)
    judge = models.ForeignKey(
        "judging.Judge", on_delete=models.PROTECT, related_name="reward_calls", null=True, blank=True
    )
    procedure = models.ForeignKey(
        "mining.Procedure", on_delete=models.SET_NULL, related_name="reward_calls", null=True, blank=True
    )
    procedure_key = models.CharField(max_length=64)
    answer = models.TextField(help_text="the final answer judged (after the config's answer marker)")
    judgment = models.ForeignKey(
        RewardJudgment, on_delete=models.SET_NULL, related_name="calls", null=True, blank=True
    )
    how2score = models.SmallIntegerField(null=True, blank=True, help_text="1 no critical failure, 0 some")
    format = models.SmallIntegerField(null=True, blank=True, help_text="1 the step format holds, 0 not")
    format_reason = models.CharField(max_length=200, blank=True, default="")
    n_steps = models.IntegerField(null=True, blank=True)
    length = models.FloatField(null=True, blank=True, help_text="the reference-calibrated length reward")
    length_ratio = models.FloatField(null=True, blank=True, help_text="|gen| / |ref| in tokens")
    gen_tokens = models.IntegerField(null=True, blank=True)
    ref_tokens = models.IntegerField(null=True, blank=True)
    total = models.FloatField(null=True, blank=True)
    from_store = models.BooleanField(default=False)
    error = models.TextField(blank=True, default="", help_text="why How2Score is missing")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["run", "step"], name="reward_call_run_step")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(step__gte=0, step__lte=INT32_MAX) | models.Q(step__isnull=True),
                name="reward_call_step_in_range",
            )
        ]

    def __str__(self) -> str:
        return f"{self.run_id or '-'}@{self.step}: {self.total}"
