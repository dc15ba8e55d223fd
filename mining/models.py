"""Topics and procedures (L1 references), whether mined here or imported from How2Bench."""

from __future__ import annotations

from django.db import models

# The 14 WebOrganizer topics that How2Mine samples from (paper §3, Table 7), in the paper's order.
WEBORGANIZER_TOPICS: tuple[str, ...] = (
    "Art & Design",
    "Crime & Law",
    "Education & Jobs",
    "Electronics & Hardware",
    "Fashion & Beauty",
    "Food & Dining",
    "Health",
    "Home & Hobbies",
    "Industrial",
    "Religion",
    "Science, Math & Technology",
    "Sports & Fitness",
    "Transportation",
    "Travel & Tourism",
)


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
    n_tokens = models.IntegerField(
        null=True, blank=True, help_text="tiktoken o200k_base tokens of the L1 steps"
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
