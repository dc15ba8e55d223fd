"""Generators and their generations (L2), judges and their judgments (How2Score)."""

from __future__ import annotations

from django.db import models
from django.db.models import Prefetch
from django.db.models.functions import Now

from h2e_site.jobs.configured_models import ConfiguredModel
from mining.models import Procedure, Topic

from .ids import judge_short_name


class GeneratorQuerySet(models.QuerySet["Generator"]):
    def by_model(self) -> GeneratorQuerySet:
        """By model name, then generator_id: the order every list of generators is shown in."""
        return self.order_by("model", "generator_id")


class Generator(ConfiguredModel):
    """A model under test: model + backend + decoding config + prompt, identified by generator_id."""

    id_field = "generator_id"

    generator_id = models.CharField(max_length=64, unique=True)
    provider = models.CharField(max_length=64, null=True, blank=True)
    prompt_style = models.CharField(max_length=16, blank=True, default="", help_text="base or inst")
    temperature = models.FloatField(null=True, blank=True)
    max_new_tokens = models.IntegerField(null=True, blank=True)
    max_requests_per_minute = models.IntegerField(null=True, blank=True)
    max_tokens_per_minute = models.IntegerField(null=True, blank=True)
    reasoning_effort = models.CharField(max_length=16, null=True, blank=True)
    vllm_overrides = models.JSONField(default=dict, blank=True)
    prompt_path = models.TextField(blank=True, default="")
    prompt_text = models.TextField(
        blank=True,
        default="",
        help_text="the prompt its jobs send, as hashed into generator_id (empty if imported)",
    )
    run_name = models.CharField(max_length=255, blank=True, default="")
    manifest = models.JSONField(
        default=dict, blank=True, help_text="generation_manifest.json as imported, written back verbatim"
    )
    config = models.JSONField(
        default=dict,
        db_default={},
        blank=True,
        help_text="the resolved YAML config this app runs it with (empty if imported)",
    )

    objects = GeneratorQuerySet.as_manager()

    class Meta:
        ordering = ["model", "generator_id"]


class Generation(models.Model):
    """One L2: a generator's procedure for one goal."""

    # Indexed through the unique (generator, procedure) constraint.
    generator = models.ForeignKey(
        Generator, on_delete=models.CASCADE, related_name="generations", db_index=False
    )
    procedure = models.ForeignKey(Procedure, on_delete=models.CASCADE, related_name="generations")
    prompt = models.TextField(blank=True, default="")
    model_completion = models.TextField(blank=True, default="")
    predicted_steps = models.JSONField(default=list, blank=True)
    n_tokens = models.IntegerField(null=True, blank=True, help_text="tiktoken o200k_base tokens of the steps")
    # Format proxies (paper D.3), computed with n_tokens (judging/metrics.py); NULL until computed.
    step_count_mismatch = models.BooleanField(null=True, blank=True)
    duplicate_step_rate = models.FloatField(null=True, blank=True)
    duplicate_ngram_rate = models.FloatField(null=True, blank=True, help_text="averaged over n = 1..4")
    error = models.TextField(blank=True, default="", help_text="why generating failed (then no L2 is stored)")
    attempts = models.IntegerField(default=0, db_default=0)
    extra = models.JSONField(default=dict, blank=True, help_text="record fields outside the h2e schema")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_default=Now())

    class Meta:
        ordering = ["generator_id", "procedure_id"]
        constraints = [
            models.UniqueConstraint(fields=["generator", "procedure"], name="generation_unique_per_procedure")
        ]
        # The last write, for the version the cached figures are keyed on (judging/versions.py).
        indexes = [models.Index(fields=["updated_at"], name="generation_updated_at")]

    def __str__(self) -> str:
        return f"L2 by {self.generator_id} for procedure {self.procedure_id}"


class JudgeQuerySet(models.QuerySet["Judge"]):
    def by_model(self) -> JudgeQuerySet:
        """By model name, then judge_id: the order every list of judges is shown in."""
        return self.order_by("model", "judge_id")


class Judge(ConfiguredModel):
    """An LLM judge: model + config + judge prompt, identified by judge_id."""

    id_field = "judge_id"

    judge_id = models.CharField(max_length=64, unique=True)
    provider = models.CharField(max_length=64, null=True, blank=True)
    temperature = models.FloatField(null=True, blank=True)
    max_new_tokens = models.IntegerField(null=True, blank=True)
    reasoning_effort = models.CharField(max_length=16, null=True, blank=True)
    vllm_overrides = models.JSONField(default=dict, blank=True)
    prompt_path = models.TextField(blank=True, default="")
    prompt_text = models.TextField(
        blank=True,
        default="",
        help_text="the prompt its jobs send, as hashed into judge_id (empty if imported)",
    )
    is_demo_model = models.BooleanField(
        default=False,
        help_text="A plumbing/demo model (e.g. SmolLM2-135M): its judgments are not meaningful.",
    )
    manifest = models.JSONField(
        default=dict, blank=True, help_text="judge_manifest.json as imported, written back verbatim"
    )
    config = models.JSONField(
        default=dict,
        db_default={},
        blank=True,
        help_text="the resolved YAML config this app runs it with (empty if imported)",
    )

    objects = JudgeQuerySet.as_manager()

    class Meta:
        ordering = ["model", "judge_id"]

    @property
    def short_name(self) -> str:
        """The reference's judge folder prefix (last piece of the model name), made filesystem-safe."""

        return judge_short_name(self.model)


class JudgmentQuerySet(models.QuerySet["Judgment"]):
    def with_failures(self) -> JudgmentQuerySet:
        """Each judgment's critical failures prefetched, in the judge's order."""
        return self.prefetch_related(Prefetch("failures", queryset=CriticalFailure.objects.order_by("order")))


class Judgment(models.Model):
    """A judge's verdict on one generation: its critical failures, or a parse failure."""

    # judge and generator are indexed through the composite indexes in Meta.
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="judgments", db_index=False)
    generation = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="judgments")
    # Denormalised from the generation so How2Score aggregates scan one table (set by the services).
    generator = models.ForeignKey(
        Generator, on_delete=models.CASCADE, related_name="judgments", db_index=False
    )
    # Denormalised too: the example (goal) judged, which pairs judgments across generators (paired tests).
    procedure = models.ForeignKey(
        Procedure, on_delete=models.CASCADE, related_name="judgments", db_index=False
    )
    topic = models.ForeignKey(
        Topic, on_delete=models.PROTECT, null=True, blank=True, related_name="judgments", db_index=False
    )
    reasoning = models.TextField(blank=True, default="")
    raw_output = models.TextField(blank=True, default="")
    parse_failed = models.BooleanField(default=False)
    has_failure = models.BooleanField(default=False)
    n_failures = models.IntegerField(default=0)
    previous_has_failure = models.BooleanField(
        null=True,
        blank=True,
        help_text="the verdict this judgment replaced when the judge was re-run on the generation (empty "
        "when it replaced nothing, or either is a parse failure): a flip when it differs from has_failure",
    )
    attempts = models.IntegerField(default=0, db_default=0)
    extra = models.JSONField(default=dict, blank=True, help_text="record fields outside the h2e schema")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_default=Now())

    objects = JudgmentQuerySet.as_manager()

    class Meta:
        ordering = ["judge_id", "generation_id"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "generation"], name="judgment_unique_per_generation"),
            models.CheckConstraint(
                condition=models.Q(n_failures__gte=0), name="judgment_n_failures_non_negative"
            ),
        ]
        indexes = [
            # Leaderboard: GROUP BY generator, judge over the flags, answered from the index alone.
            models.Index(
                fields=["generator", "judge"],
                name="judgment_leaderboard",
                include=["parse_failed", "has_failure", "n_failures", "topic", "procedure"],
            ),
            models.Index(fields=["judge", "topic"], name="judgment_judge_topic"),
            # The last write, for the version the cached figures are keyed on (judging/versions.py).
            models.Index(fields=["updated_at"], name="judgment_updated_at"),
            # Failure browser (judging/failures.py): judgments with failures, newest generation first, so
            # a page is found by walking one of these, whichever filter is given.
            models.Index(
                fields=["-generation", "id"],
                name="judgment_failures_walk",
                condition=models.Q(n_failures__gt=0),
                include=["judge", "generator", "topic", "n_failures"],
            ),
            models.Index(
                fields=["judge", "-generation", "id"],
                name="judgment_failures_judge",
                condition=models.Q(n_failures__gt=0),
            ),
            models.Index(
                fields=["generator", "-generation", "id"],
                name="judgment_failures_generator",
                condition=models.Q(n_failures__gt=0),
            ),
            models.Index(
                fields=["topic", "-generation", "id"],
                name="judgment_failures_topic",
                condition=models.Q(n_failures__gt=0),
            ),
        ]

    def __str__(self) -> str:
        return f"Judgment by {self.judge_id} of generation {self.generation_id}"


class JudgeError(models.Model):
    """A judge request that failed (API or connection error after the retries): a failed item of its judge
    job, retryable from the job, and never a judgment: it is in no score, no parse-failure count and no
    agreement figure. Written over by the next error of the same judge on the same generation, deleted when
    a judgment of that generation by that judge is stored."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="errors", db_index=False)
    generation = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="judge_errors")
    job = models.ForeignKey(
        "jobs.Job",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="judge_errors",
        help_text="the judge job whose item this was (empty for errors stored before jobs recorded them)",
    )
    error = models.TextField()
    attempts = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["judge_id", "generation_id"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "generation"], name="judge_error_unique_per_generation")
        ]

    def __str__(self) -> str:
        return f"{self.judge_id} could not judge generation {self.generation_id}: {self.error[:60]}"


class FailureBase(models.Model):
    """A critical failure as the paper defines it (C.1): a description linked to L1 (reference) and L2
    (generated) step numbers. Judges' (CriticalFailure) and annotators' (AnnotatedFailure) share it."""

    order = models.PositiveIntegerField(default=0)
    description = models.TextField()
    l1_steps = models.JSONField(default=list, blank=True)
    l2_steps = models.JSONField(default=list, blank=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.description[:80]


class CriticalFailure(FailureBase):
    """One critical failure a judge listed."""

    # Indexed through the unique (judgment, order) constraint.
    judgment = models.ForeignKey(Judgment, on_delete=models.CASCADE, related_name="failures", db_index=False)
    steps_out_of_range = models.BooleanField(
        default=False,
        db_default=False,
        help_text="cites an L1 or L2 step number that does not exist (kept as given)",
    )

    class Meta:
        ordering = ["judgment_id", "order"]
        constraints = [
            models.UniqueConstraint(fields=["judgment", "order"], name="critical_failure_unique_order")
        ]


class PairwiseOrder(models.TextChoices):
    """Which L2 of a pair the judge saw first ("Procedure 1"): A is the generation with the lower pk."""

    AB = "ab", "A shown first"
    BA = "ba", "B shown first"


class PairwiseVerdict(models.TextChoices):
    """A pairwise judge's verdict as shown: which of the two L2s it saw has fewer critical failures."""

    FIRST = "first", "the first shown has fewer critical failures"
    SECOND = "second", "the second shown has fewer critical failures"
    BOTH_NONE = "both_none", "neither has a critical failure"
    BOTH_FAIL = "both_fail", "both fail equally"


class PairwiseJudgment(models.Model):
    """A judge's verdict on two L2s of one goal (generation_a.pk < generation_b.pk) shown in one order, or a
    parse failure (verdict empty, raw output and the problem kept): the LLM twin of a pairwise study's answer
    (judging/pairwise_jobs.py asks both orders). The judge is the Judge row a pointwise judge uses; the
    pairwise prompt it was asked with is identified by prompt_sha256 (prompts/pairwise_judge.txt)."""

    # judge is indexed through the unique (judge, a, b, order) constraint.
    judge = models.ForeignKey(
        Judge, on_delete=models.CASCADE, related_name="pairwise_judgments", db_index=False
    )
    generation_a = models.ForeignKey(Generation, on_delete=models.PROTECT, related_name="pairwise_as_a")
    generation_b = models.ForeignKey(Generation, on_delete=models.PROTECT, related_name="pairwise_as_b")
    order = models.CharField(max_length=2, choices=PairwiseOrder.choices)
    verdict = models.CharField(
        max_length=16,
        choices=PairwiseVerdict.choices,
        blank=True,
        default="",
        help_text="as shown (first, second, both_none, both_fail); empty when the answer could not be read",
    )
    raw_output = models.TextField(blank=True, default="")
    parse_problem = models.TextField(blank=True, default="", help_text="why the verdict could not be read")
    prompt_sha256 = models.CharField(max_length=64, help_text="SHA-256 of the pairwise prompt template sent")
    job = models.ForeignKey(
        "jobs.Job",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="pairwise_judgments",
        help_text="the pairwise judge job that wrote it last",
    )
    attempts = models.IntegerField(default=0)
    prompt_tokens = models.IntegerField(null=True, blank=True)
    completion_tokens = models.IntegerField(null=True, blank=True)
    latency_s = models.FloatField(default=0.0, help_text="seconds waiting on the model (answering attempt)")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["judge_id", "generation_a_id", "generation_b_id", "order"]
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "generation_a", "generation_b", "order"],
                name="pairwise_judgment_unique_per_order",
            ),
            models.CheckConstraint(
                condition=models.Q(generation_a__lt=models.F("generation_b")),
                name="pairwise_judgment_a_before_b",
            ),
            models.CheckConstraint(
                condition=models.Q(order__in=PairwiseOrder.values), name="pairwise_judgment_order_known"
            ),
            models.CheckConstraint(
                condition=models.Q(verdict__in=[*PairwiseVerdict.values, ""]),
                name="pairwise_judgment_verdict_known",
            ),
        ]

    def __str__(self) -> str:
        pair = f"{self.generation_a_id} vs {self.generation_b_id} ({self.order})"
        return f"{self.judge_id} on {pair}: {self.verdict or 'parse failure'}"


# Tables defined beside their code and registered here with the app's: the reward service and a run's
# checkpoints (issue #32, judging/training/) and judge probes (judging/probes/).
from .probes.models import JudgeProbe, JudgeProbeItem, ProbeKind  # noqa: E402
from .training.checkpoint_models import Checkpoint, OODResult  # noqa: E402
from .training.models import RewardCall, RewardJudgment, TrainingRun  # noqa: E402

__all__ = [
    "Checkpoint",
    "CriticalFailure",
    "FailureBase",
    "Generation",
    "Generator",
    "Judge",
    "JudgeError",
    "JudgeProbe",
    "JudgeProbeItem",
    "Judgment",
    "OODResult",
    "PairwiseJudgment",
    "PairwiseOrder",
    "PairwiseVerdict",
    "ProbeKind",
    "RewardCall",
    "RewardJudgment",
    "TrainingRun",
]
