"""Human annotation studies: a Study of L1/L2 pairs, its Prolific participants, their leased Assignments and
the Annotations they submit (critical failures stored like a judge's, so agreement treats both alike).

What the database itself guarantees:
- an item never has more live claims than its target of k annotations (`assigned_count <= target`), nor more
  completed annotations than live claims;
- a participant gets an item at most once (unique participant x item), holds at most one active assignment,
  and submits at most one annotation per item (one per assignment, unique participant x item).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Prefetch, Q
from django.urls import NoReverseMatch, resolve, reverse

from annotation.base import codebook
from annotation.base.comprehension import comprehension_questions_validate
from annotation.base.types import kind_choices, kind_label
from goal_step.models import TaskExample
from h2e_site.bounds import Range
from judging.models import FailureBase, Generation
from mining.models import Procedure

# Study.kind's default, as the migrations recorded it (0004, 0010: the column's default and its database
# default): the registry's first kind (annotation/kinds/__init__.py; tests/annotation/test_engine_words.py
# checks that they agree). The one kind's name the engine's tables hold: changing it would need a migration.
DEFAULT_KIND = "critical_failures"
PROLIFIC_STUDY_ID = RegexValidator(
    r"\A[0-9a-f]{24}\Z",
    "Prolific's study id is 24 hexadecimal characters (0-9, a-f), as in the study's URL on Prolific.",
    code="prolific_id",
)
STUDY_PAGES = ("annotation:study_detail", "annotator:entry")  # the pages a study's slug must lead to


def study_slug_free(slug: str) -> None:
    """A slug whose pages are the study's: `new` is refused, since /studies/new/ is the builder."""
    for name in STUDY_PAGES:
        try:
            path = reverse(name, args=[slug])
        except NoReverseMatch:
            return  # not a slug: the slug validator says so
        if resolve(path).view_name != name:
            raise ValidationError(
                f"“{slug}” is taken by the page {path}: choose another slug.", code="reserved"
            )


class Study(models.Model):
    """A Prolific study: which items are annotated, by how many people, under which gates. Its kind says
    what an item is and what a participant answers; everything else here is shared by every kind."""

    slug = models.SlugField(max_length=64, unique=True, validators=[study_slug_free])
    title = models.CharField(max_length=200)
    kind = models.CharField(
        max_length=32,
        choices=kind_choices,
        default=DEFAULT_KIND,
        db_default=DEFAULT_KIND,
    )
    prolific_study_id = models.CharField(
        max_length=64,
        blank=True,
        default="",
        validators=[PROLIFIC_STUDY_ID],
        help_text="when set, STUDY_ID in the entry URL must match it (24 hexadecimal characters)",
    )
    selection = models.JSONField(
        default=dict, blank=True, help_text="how the generations were chosen (topics, generators, seed, ...)"
    )
    annotators_per_item = models.PositiveSmallIntegerField(default=3, validators=Range(1, 50).validators())
    items_per_participant = models.PositiveIntegerField(
        default=10,
        validators=Range(0, 100_000).validators(),
        help_text="regular items each participant annotates (0: as many as remain)",
    )
    min_dwell_seconds = models.PositiveIntegerField(
        default=codebook.MIN_DWELL_SECONDS, validators=Range(0, 3600).validators()
    )
    estimated_item_minutes = models.FloatField(
        default=codebook.ESTIMATED_ITEM_MINUTES,
        validators=Range(0.1, codebook.MAX_ITEM_MINUTES).validators(),
        help_text=f"minutes an item takes (at most {codebook.MAX_ITEM_MINUTES})",
    )
    lease_minutes = models.PositiveIntegerField(
        default=codebook.prolific_max_minutes(codebook.ESTIMATED_ITEM_MINUTES),
        validators=Range(1, codebook.MAX_LEASE_MINUTES).validators(),
        help_text="how long an issued item stays reserved (default: Prolific's least maximum time for the "
        "item's estimated X minutes, 2 + 2X + 2*sqrt(X))",
    )
    instructions = models.TextField(default=codebook.GUIDELINES, help_text="one guideline per line")
    consent_text = models.TextField(default=codebook.CONSENT)
    training_text = models.TextField(
        default=codebook.TRAINING,
        help_text="'## ' starts a heading, '- ' a list item, blank lines paragraphs",
    )
    comprehension_questions = models.JSONField(
        default=codebook.default_comprehension_questions,
        validators=[comprehension_questions_validate],
        help_text='list of {"question": str, "choices": [str, ...], "answer": index of the right choice}',
    )
    comprehension_attempts = models.PositiveSmallIntegerField(default=2, validators=Range(1, 10).validators())
    attention_check_every = models.PositiveSmallIntegerField(
        default=5,
        validators=Range(0, 1000).validators(),
        help_text="an attention-check item after every N regular items (0: none)",
    )
    completion_code = models.CharField(max_length=64)
    screenout_code = models.CharField(max_length=64)
    attention_failed_code = models.CharField(
        max_length=64, help_text="the code of a participant who failed attention_fail_limit attention checks"
    )
    attention_fail_limit = models.PositiveSmallIntegerField(
        default=2,
        validators=Range(1, 1000).validators(),
        help_text="failed attention checks that earn the failed-attention-check code (Prolific: one can be a "
        "ground to reject in a study under 5 minutes, more than one at 5 minutes or more)",
    )
    is_open = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "studies"
        # Acting on Prolific reaches people outside and spends money: permissions of their own
        # (docs/guides/researcher/studies.md, "Running the study on Prolific"), checked before anything is
        # sent (annotation/prolific/views.py).
        permissions = [
            (
                "run_prolific_study",
                "Can act on a study on Prolific (draft, publish, pause, resume, stop, sync, review)",
            ),
            ("pay_prolific_bonuses", "Can pay bonuses through Prolific"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(annotators_per_item__gte=1), name="study_k_positive"),
            models.CheckConstraint(condition=Q(lease_minutes__gte=1), name="study_lease_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.slug})"

    @property
    def kind_label(self) -> str:
        """The kind's label from the kind registry (its spec's `label`), as every page shows it."""
        return kind_label(self.kind)

    def clean(self) -> None:
        """A study's kind is fixed once it has items: they are of that kind (generations, procedures or
        task examples), and so are its annotations."""
        if self.pk is None or not self.items.exists():
            return
        stored = Study.objects.filter(pk=self.pk).values_list("kind", flat=True).first()
        if stored is not None and stored != self.kind:
            raise ValidationError(
                {"kind": f"The study has items of the kind “{stored}”: its kind cannot change."}
            )

    @property
    def guidelines(self) -> list[str]:
        return [line.strip() for line in self.instructions.splitlines() if line.strip()]


class StudyItemQuerySet(models.QuerySet["StudyItem"]):
    def not_attention_checks(self) -> StudyItemQuerySet:
        """The items that are measured (an attention check's "failure" is instructed, not found)."""
        return self.filter(is_attention_check=False)


class StudyItem(models.Model):
    """One thing annotated in a study: a generation (L2 with its L1) for critical failures, a procedure (L1)
    for step types. Counters are kept by the services, in the same transaction as the rows they count."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items", db_index=False)
    generation = models.ForeignKey(
        Generation, on_delete=models.PROTECT, related_name="study_items", null=True, blank=True
    )
    procedure = models.ForeignKey(
        Procedure, on_delete=models.PROTECT, related_name="study_items", null=True, blank=True
    )
    example = models.ForeignKey(
        TaskExample, on_delete=models.PROTECT, related_name="study_items", null=True, blank=True
    )
    subject_key = models.CharField(
        max_length=64,
        help_text="what the item annotates, in its kind's words (e.g. generation:12, pair:3:8): a study "
        "has one regular item per subject",
    )
    payload = models.JSONField(
        default=dict,
        blank=True,
        help_text="kind-specific: e.g. a step-types attention check's instructed answer",
    )
    position = models.PositiveIntegerField(default=0)
    target_annotations = models.PositiveSmallIntegerField(help_text="k, copied from the study")
    assigned_count = models.PositiveIntegerField(default=0, help_text="active + submitted assignments")
    completed_count = models.PositiveIntegerField(default=0, help_text="submitted annotations")
    is_attention_check = models.BooleanField(default=False)
    attention_expects_failure = models.BooleanField(
        null=True, blank=True, help_text="attention checks: the answer the item's instruction asks for"
    )

    objects = StudyItemQuerySet.as_manager()

    class Meta:
        ordering = ["study_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "subject_key"],
                condition=Q(is_attention_check=False),
                name="study_item_unique_subject",
            ),
            models.CheckConstraint(condition=~Q(subject_key=""), name="study_item_has_a_subject"),
            models.CheckConstraint(
                condition=Q(is_attention_check=True) | Q(assigned_count__lte=F("target_annotations")),
                name="study_item_never_over_assigned",
            ),
            models.CheckConstraint(
                condition=Q(completed_count__lte=F("assigned_count")), name="study_item_completed_le_assigned"
            ),
        ]
        indexes = [
            models.Index(
                fields=["study", "is_attention_check", "assigned_count", "position"], name="study_item_next"
            )
        ]

    def __str__(self) -> str:
        kind = "attention check" if self.is_attention_check else "item"
        return f"{kind} #{self.position} of {self.study_id}"


class Stage(models.TextChoices):
    CONSENT = "consent", "Consent"
    TRAINING = "training", "Training"
    COMPREHENSION = "comprehension", "Comprehension check"
    ITEMS = "items", "Items"
    DONE = "done", "Done"
    SCREENED_OUT = "screened_out", "Screened out"


class ParticipantQuerySet(models.QuerySet["Participant"]):
    def counted(self) -> ParticipantQuerySet:
        """Real participants: a staff member's preview is not one."""
        return self.filter(is_preview=False)


class Participant(models.Model):
    """A Prolific participant in one study, known only by their PROLIFIC_PID; or a staff member previewing
    the study as a participant (`is_preview`: nothing they do is counted)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants", db_index=False)
    prolific_pid = models.CharField(max_length=64)
    prolific_study_id = models.CharField(max_length=64, blank=True, default="")
    prolific_session_id = models.CharField(max_length=64, blank=True, default="")
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.CONSENT)
    comprehension_attempts = models.PositiveSmallIntegerField(default=0)
    items_completed = models.PositiveIntegerField(default=0, help_text="regular items submitted")
    user_agent = models.TextField(blank=True, default="")
    is_preview = models.BooleanField(
        default=False,
        help_text="a staff member's preview: takes no slot of an item, stores no annotation, not counted",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    consented_at = models.DateTimeField(null=True, blank=True)
    trained_at = models.DateTimeField(null=True, blank=True)
    qualified_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = ParticipantQuerySet.as_manager()

    class Meta:
        ordering = ["study_id", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["study", "prolific_pid"], name="participant_unique_pid")
        ]

    def __str__(self) -> str:
        return f"{self.prolific_pid} in {self.study_id}"


class AssignmentStatus(models.TextChoices):
    ACTIVE = "active", "Active (leased)"
    SUBMITTED = "submitted", "Submitted"
    EXPIRED = "expired", "Expired (lease reclaimed)"


class Assignment(models.Model):
    """An item leased to a participant, with the server's record of how it was read."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    participant = models.ForeignKey(
        Participant, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(
        max_length=16, choices=AssignmentStatus.choices, default=AssignmentStatus.ACTIVE
    )
    issued_at = models.DateTimeField()
    lease_expires_at = models.DateTimeField()
    goal_acknowledged_at = models.DateTimeField(null=True, blank=True)
    n_reading_steps = models.PositiveIntegerField(
        help_text=(
            "texts the reading gate reveals, counted when issued (the kind's "
            "reading_steps): all must be revealed"
        )
    )
    n_revealed = models.PositiveIntegerField(default=0, help_text="steps read so far")
    step_revealed_at = models.JSONField(
        default=list, blank=True, help_text="ISO time each step was clicked, in order"
    )
    presentation = models.JSONField(
        default=dict,
        blank=True,
        help_text="how the kind showed the item to this participant, drawn when issued (e.g. which L2 "
        "was on the left)",
    )

    class Meta:
        ordering = ["issued_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["participant", "item"], name="assignment_unique_participant_item"
            ),
            models.UniqueConstraint(
                fields=["participant"],
                condition=Q(status="active"),
                name="assignment_one_active_per_participant",
            ),
            models.CheckConstraint(
                condition=Q(n_revealed__lte=F("n_reading_steps")), name="assignment_revealed_le_steps"
            ),
        ]
        indexes = [
            models.Index(
                fields=["study", "lease_expires_at"],
                condition=Q(status="active"),
                name="assignment_active_lease",
            )
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.status})"

    @property
    def all_steps_revealed(self) -> bool:
        return self.n_revealed >= self.n_reading_steps


class AnnotationQuerySet(models.QuerySet["Annotation"]):
    def not_attention_checks(self) -> AnnotationQuerySet:
        return self.filter(item__is_attention_check=False)

    def attention_checks(self) -> AnnotationQuerySet:
        return self.filter(item__is_attention_check=True)

    def with_failures(self) -> AnnotationQuerySet:
        """Each annotation's critical failures prefetched, in the participant's order."""
        return self.prefetch_related(
            Prefetch("failures", queryset=AnnotatedFailure.objects.order_by("order"))
        )


class Annotation(models.Model):
    """A participant's answer on one item, and the evidence of how it was given. Critical failures: has L2
    any critical failure (has_failure) and which ones (AnnotatedFailure); step types: a StepTypeLabel per
    candidate and the task-level answer in `answer`."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="annotation")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="annotations", db_index=False)
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="annotations")
    participant = models.ForeignKey(
        Participant, on_delete=models.CASCADE, related_name="annotations", db_index=False
    )
    has_failure = models.BooleanField(null=True, blank=True, help_text="critical failures only")
    n_failures = models.PositiveIntegerField(default=0)
    answer = models.JSONField(
        default=dict, blank=True, help_text="kind-specific task-level answers (step types: expert_knowledge)"
    )
    comments = models.TextField(blank=True, default="")
    attention_passed = models.BooleanField(null=True, blank=True, help_text="attention checks only")
    # Evidence: the server's clock, and what the browser reported (kept, never trusted for the gates).
    issued_at = models.DateTimeField()
    goal_acknowledged_at = models.DateTimeField()
    step_revealed_at = models.JSONField(default=list)
    submitted_at = models.DateTimeField()
    elapsed_seconds = models.FloatField(help_text="submitted_at - issued_at, server clock")
    active_seconds = models.FloatField(
        null=True, blank=True, help_text="time the tab was visible, as reported by the browser"
    )
    user_agent = models.TextField(blank=True, default="")

    objects = AnnotationQuerySet.as_manager()

    class Meta:
        ordering = ["study_id", "item_id", "submitted_at"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "item"], name="annotation_unique_participant_item")
        ]

    def __str__(self) -> str:
        return f"annotation {self.pk} of item {self.item_id}"


class AnnotatedFailureQuerySet(models.QuerySet["AnnotatedFailure"]):
    def not_attention_checks(self) -> AnnotatedFailureQuerySet:
        return self.filter(annotation__item__is_attention_check=False)


class AnnotatedFailure(FailureBase):
    """One critical failure a participant listed (the same shape as a judge's CriticalFailure)."""

    annotation = models.ForeignKey(
        Annotation, on_delete=models.CASCADE, related_name="failures", db_index=False
    )

    objects = AnnotatedFailureQuerySet.as_manager()

    class Meta:
        ordering = ["annotation_id", "order"]
        constraints = [
            models.UniqueConstraint(fields=["annotation", "order"], name="annotated_failure_unique_order")
        ]


# --- step types (the SIO paper) -----------------------------------------------------------------------------
