"""Topics and procedures (L1 references), whether mined here or imported from How2Bench."""

from __future__ import annotations

from django.db import models


class Topic(models.Model):
    """A WebOrganizer topic. Imported files may name others; those are created with is_weborganizer=False."""

    name = models.CharField(max_length=200, unique=True)
    is_weborganizer = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Split(models.TextChoices):
    BENCH = "bench", "How2Bench (evaluation)"
    TRAIN = "train", "How2Train"
    POOL = "pool", "Pool (not yet split)"


class Procedure(models.Model):
    """A reference procedure (L1): a goal, its resources and its steps."""

    source_example_id = models.CharField(max_length=255, unique=True)
    topic = models.ForeignKey(
        Topic, on_delete=models.PROTECT, null=True, blank=True, related_name="procedures"
    )
    goal = models.TextField()
    resources = models.JSONField(default=list, blank=True)
    steps = models.JSONField(default=list)
    url = models.TextField(blank=True, default="")
    source_text = models.TextField(blank=True, default="")
    split = models.CharField(max_length=8, choices=Split.choices, default=Split.BENCH, db_index=True)
    ordered = models.BooleanField(
        null=True,
        blank=True,
        help_text="whether the order of its steps matters (an `ordered` field at import, or How2Mine's final "
        "filter); empty: not known. Step Ordering tasks are built from ordered procedures only",
    )
    n_tokens = models.IntegerField(
        null=True, blank=True, help_text="tiktoken o200k_base tokens of the L1 steps"
    )
    mining_run = models.ForeignKey(
        "MiningRun",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="procedures",
        help_text="the mining run that first stored it",
    )
    source_document = models.ForeignKey(
        "SourceDocument", on_delete=models.SET_NULL, null=True, blank=True, related_name="procedures"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["source_example_id"]
        indexes = [models.Index(fields=["topic", "split"], name="procedure_topic_split")]

    def __str__(self) -> str:
        return f"{self.source_example_id}: {self.goal[:80]}"

    @property
    def n_steps(self) -> int:
        return len(self.steps)


# --- How2Mine: documents, runs and the outcome of each stage per document ---------------------------------


class SourceDocument(models.Model):
    """A web document procedures are mined from (the reference's `source_example`)."""

    doc_id = models.CharField(max_length=255, unique=True)
    text = models.TextField()
    url = models.TextField(blank=True, default="")
    topic = models.ForeignKey(
        Topic, on_delete=models.PROTECT, null=True, blank=True, related_name="documents"
    )
    extra = models.JSONField(default=dict, blank=True, help_text="the record's other fields, as imported")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["doc_id"]

    def __str__(self) -> str:
        return self.doc_id


class Stage(models.TextChoices):
    """The How2Mine stages, in pipeline order (paper §3.2)."""

    EXTRACTION = "extraction", "Procedure extraction"
    PREFILTER = "prefilter", "Heuristics filter"
    FILTER = "filter", "LLM filter"
    POSTPROCESS = "postprocess", "Postprocess rewrite"
    RESOURCES = "resources", "Resource extraction"
    FINAL_FILTER = "final_filter", "Final validation"


STAGE_ORDER: tuple[str, ...] = tuple(Stage.values)
# An LLM stage's outcome written without a request (the LLM filter's drop of an extraction with an empty goal:
# nothing to send). The reference writes such a record too but leaves it out of the stage's processed count;
# the funnel counts it as the reference does ("not sent", not processed).
NOT_SENT = models.Q(stage=Stage.FILTER, request_sha256="", raw_output="", error="", reused=False)


class RunStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class MiningRun(models.Model):
    """One How2Mine run: a config (backend/model per stage, thresholds, candidates per topic, seed) over a
    fixed set of documents. Executed by MINE jobs; the latest is `job`."""

    name = models.CharField(max_length=200)
    config = models.JSONField(default=dict, help_text="the resolved run config (mining/config.py)")
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.DRAFT)
    documents = models.ManyToManyField(SourceDocument, related_name="mining_runs", blank=True)
    kept_procedures = models.ManyToManyField(
        Procedure,
        blank=True,
        related_name="mining_runs",
        help_text="the procedures its final validation kept, also those an earlier run had stored with the "
        "same content: the run's export",
    )
    job = models.ForeignKey("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})"


class StageOutcome(models.Model):
    """What one stage of a run made of one document. A document reaches a stage only if it passed the one
    before; a missing outcome is work still to do."""

    run = models.ForeignKey(MiningRun, on_delete=models.CASCADE, related_name="outcomes")
    document = models.ForeignKey(SourceDocument, on_delete=models.CASCADE, related_name="outcomes")
    stage = models.CharField(max_length=16, choices=Stage.choices)
    passed = models.BooleanField()
    reason = models.TextField(blank=True, default="", help_text="why it was rejected")
    payload = models.JSONField(default=dict, blank=True, help_text="the parsed stage output")
    prompt_tokens = models.IntegerField(null=True, blank=True)
    completion_tokens = models.IntegerField(null=True, blank=True)
    cost = models.FloatField(default=0.0, help_text="USD, from the run config's prices")
    raw_output = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="", help_text="API error or unparsable output")
    request_sha256 = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="SHA-256 of the request (stage, model identity, filled prompt): an answer to the same "
        "request is reused instead of sent again; empty when no request was made",
    )
    reused = models.BooleanField(
        default=False, help_text="the answer of an earlier outcome with the same request: no request was sent"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "document_id", "stage"]
        constraints = [
            models.UniqueConstraint(fields=["run", "document", "stage"], name="outcome_unique_per_stage")
        ]
        indexes = [
            models.Index(fields=["run", "stage", "passed"], name="outcome_run_stage_passed"),
            models.Index(
                fields=["request_sha256"], name="outcome_request", condition=~models.Q(request_sha256="")
            ),
        ]

    def __str__(self) -> str:
        verdict = "passed" if self.passed else "rejected"
        return f"{self.stage} {verdict}: document {self.document_id} in run {self.run_id}"
