"""Topics and procedures (L1 references), whether mined here or imported from How2Bench."""

from __future__ import annotations

from django.db import models

from h2e_site.bounds import SEED


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


# --- goal-step tasks (the wikiHow paper) --------------------------------------------------------------------


class GoalStepTask(models.TextChoices):
    """The three multiple-choice tasks of the wikiHow goal-step paper (§3)."""

    STEP_INFERENCE = "step_inference", "Step inference"
    GOAL_INFERENCE = "goal_inference", "Goal inference"
    STEP_ORDERING = "step_ordering", "Step ordering"


class TaskSplit(models.TextChoices):
    TEST = "test", "Test (to validate with crowd workers)"
    TRAIN = "train", "Train (built automatically; no prompt or candidate shared with test)"


class TaskSet(models.Model):
    """Multiple-choice examples of the three tasks, built from procedures (mining/goal_step/) or imported
    (BIG-bench JSON), with the builder's funnel and the candidates-only artifact check of each task."""

    name = models.SlugField(max_length=64, unique=True)
    source = models.CharField(max_length=16, default="built", help_text="built here, or imported (bigbench)")
    seed = models.IntegerField(default=0, validators=SEED.validators())
    selection = models.JSONField(default=dict, blank=True, help_text="which procedures (splits, topics)")
    settings = models.JSONField(default=dict, blank=True, help_text="the builder's settings as used")
    funnel = models.JSONField(
        default=dict, blank=True, help_text="per task: candidates in, removed by each filter, kept"
    )
    artifacts = models.JSONField(
        default=dict, blank=True, help_text="per task: the candidates-only baseline, k of n with its interval"
    )
    job = models.ForeignKey("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class TaskExample(models.Model):
    """One multiple-choice example: a prompt (a goal, or a step), its candidates and the right one."""

    task_set = models.ForeignKey(TaskSet, on_delete=models.CASCADE, related_name="examples")
    task = models.CharField(max_length=16, choices=GoalStepTask.choices)
    split = models.CharField(max_length=8, choices=TaskSplit.choices, default=TaskSplit.TEST)
    position = models.PositiveIntegerField()
    prompt = models.TextField()
    candidates = models.JSONField(help_text="the candidate texts, in the order shown (A, B, ...)")
    answer = models.PositiveSmallIntegerField(help_text="index of the right candidate")
    procedure = models.ForeignKey(
        Procedure, on_delete=models.SET_NULL, null=True, blank=True, related_name="task_examples"
    )
    topic = models.ForeignKey(Topic, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    meta = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["task_set_id", "task", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["task_set", "task", "position"], name="task_example_unique_position"
            )
        ]
        indexes = [models.Index(fields=["task_set", "split", "task"], name="task_example_set_split")]

    def __str__(self) -> str:
        return f"{self.task} #{self.position} of {self.task_set_id}"


class TaskModel(models.Model):
    """A model that answers goal-step examples: a generator config and its prompt, identified by model_id (a
    hash of them), or a set of imported answers."""

    model_id = models.CharField(max_length=64, unique=True)
    model = models.CharField(max_length=255)
    backend = models.CharField(max_length=32, blank=True, default="")
    config = models.JSONField(default=dict, blank=True)
    prompt_text = models.TextField(blank=True, default="")
    prompt_sha256 = models.CharField(max_length=64, blank=True, default="")
    is_demo_model = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model", "model_id"]

    def __str__(self) -> str:
        return f"{self.model} ({self.model_id})"


class TaskAnswer(models.Model):
    """A model's answer to one example: the candidate it chose (None: unparsable, counted as wrong and shown
    apart), from the full prompt or from the candidates alone (its own artifact check)."""

    model = models.ForeignKey(TaskModel, on_delete=models.CASCADE, related_name="answers", db_index=False)
    example = models.ForeignKey(TaskExample, on_delete=models.CASCADE, related_name="model_answers")
    candidates_only = models.BooleanField(default=False)
    choice = models.PositiveSmallIntegerField(null=True, blank=True)
    raw_output = models.TextField(blank=True, default="")
    job = models.ForeignKey("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model_id", "example_id"]
        constraints = [
            models.UniqueConstraint(fields=["model", "example", "candidates_only"], name="task_answer_unique")
        ]

    def __str__(self) -> str:
        return f"{self.model_id} on {self.example_id}: {self.choice}"

    @property
    def correct(self) -> bool:
        return self.choice is not None and self.choice == self.example.answer
