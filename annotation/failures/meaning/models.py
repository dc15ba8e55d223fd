"""A topic's failure patterns as computed: one FailurePatternRun (topic, k, seed, the embedding model whose
vectors were clustered, the job) and its FailurePattern clusters, largest first.

A cluster keeps its size, its representative failure (the member nearest the cluster's centroid, the
normalised mean of its members' vectors), its members (CriticalFailure and AnnotatedFailure ids) and its
counts per generator, per judge and per study; the run keeps the same counts over every failure clustered,
so a share is a cluster's count of a generator (judge, study) over the run's count of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from django.conf import settings
from django.db import models

from h2e_site.bounds import SEED, Range
from h2e_site.embeddings.models import EmbeddingModel
from h2e_site.jobs.models import Job
from mining.models import Topic

CLUSTERS = Range(2, 100)  # clusters a run asks for (a page lists them all)
JUDGE: Final = "judge"
HUMAN: Final = "human"
FAILURE_SOURCES = [(JUDGE, "judge"), (HUMAN, "human")]


class FailurePatternRun(models.Model):
    """One clustering of a topic's failure descriptions with faiss k-means: the same topic, model, k, seed
    and failures give the same clusters."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    embedding_model = models.ForeignKey(EmbeddingModel, on_delete=models.CASCADE, related_name="+")
    k = models.PositiveIntegerField(validators=CLUSTERS.validators(), help_text="clusters asked for")
    seed = models.PositiveIntegerField(validators=SEED.validators(), help_text="faiss k-means' seed")
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    n_failures = models.PositiveIntegerField(help_text="the topic's failures clustered (with a vector)")
    n_without_vector = models.PositiveIntegerField(
        default=0, help_text="the topic's failures left out: no vector stored yet"
    )
    # name -> failures clustered: generator_id, judge_id, study slug (the shares' denominators)
    by_generator = models.JSONField(default=dict)
    by_judge = models.JSONField(default=dict)
    by_study = models.JSONField(default=dict)
    demo_judges = models.JSONField(default=list, help_text="judge_ids of demo models among the judges")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "annotation"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["topic", "-created_at"], name="pattern_run_topic_newest")]

    def __str__(self) -> str:
        return f"{self.k} failure patterns of {self.topic_id}, seed {self.seed}"


class FailurePattern(models.Model):
    """One cluster of a run: rank 1 is the largest."""

    run = models.ForeignKey(FailurePatternRun, on_delete=models.CASCADE, related_name="patterns")
    rank = models.PositiveIntegerField()
    size = models.PositiveIntegerField()
    representative_source = models.CharField(max_length=5, choices=FAILURE_SOURCES)
    representative_pk = models.BigIntegerField()
    representative_text = models.TextField(help_text="its description when the run clustered it")
    by_generator = models.JSONField(default=dict)
    by_judge = models.JSONField(default=dict)
    by_study = models.JSONField(default=dict)
    judge_members = models.JSONField(default=list, help_text="CriticalFailure ids")
    human_members = models.JSONField(default=list, help_text="AnnotatedFailure ids")

    class Meta:
        app_label = "annotation"
        ordering = ["run_id", "rank"]
        constraints = [models.UniqueConstraint(fields=["run", "rank"], name="failure_pattern_unique_rank")]

    def __str__(self) -> str:
        return f"pattern {self.rank} of run {self.run_id} ({self.size} failures)"

    @property
    def representative_token(self) -> str:
        """`judge-12` / `human-7`, as the failure browser and the generation page name a failure."""
        return f"{self.representative_source}-{self.representative_pk}"

    def shares(
        self, run: FailurePatternRun, models: dict[str, str] | None = None
    ) -> dict[str, list[ClusterShare]]:
        """Per generator, judge and study of the run: this cluster's count of its failures over its total
        (`models`: generator_id / judge_id -> the model's name, shown beside the id)."""
        return {
            "generators": _shares(self.by_generator, run.by_generator, models=models),
            "judges": _shares(self.by_judge, run.by_judge, models=models, demo=set(run.demo_judges)),
            "studies": _shares(self.by_study, run.by_study),
        }


@dataclass(frozen=True)
class ClusterShare:
    """k of n failures of one generator (judge, study) are in the cluster."""

    name: str  # generator_id, judge_id or study slug
    k: int
    n: int
    demo: bool = field(default=False, compare=False)  # a demo model's judge: its failures mean nothing
    model: str = field(default="", compare=False)  # the generator's or judge's model

    @property
    def percent(self) -> float:
        return 100 * self.k / self.n if self.n else 0.0


def _shares(
    counts: dict[str, int],
    totals: dict[str, int],
    *,
    models: dict[str, str] | None = None,
    demo: set[str] | None = None,
) -> list[ClusterShare]:
    return [
        ClusterShare(
            name, counts.get(name, 0), n, demo=name in (demo or ()), model=(models or {}).get(name, "")
        )
        for name, n in sorted(totals.items())
    ]
