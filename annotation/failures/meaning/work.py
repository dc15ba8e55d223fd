"""Running a `failure_patterns` job (jobs.py queues it): the topic's failures with a stored vector under the
default embedding model are clustered by faiss k-means, and the clusters stored as a FailurePatternRun.

- Failures: the topic's judges' failures (their judgment's topic) and humans' (their generation's procedure's
  topic, attention checks left out), in a fixed order (judges' then humans', by id); those whose text has no
  vector yet are counted and left out.
- Clustering: faiss.Kmeans, spherical (unit centroids: cosine), NITER iterations from k-means++ initial
  centroids (drawn with the job's seed among at most INIT_SAMPLE failures: plain random ones often put two
  centroids in one group and none in another), faiss's own sample drawn with the same seed; each failure then
  goes to its nearest centroid. Same failures, same vectors, same seed: the same clusters.
- A cluster's representative is the member nearest its centroid, the normalised mean of its members'
  vectors (the largest inner product; on a tie, the first in the order above); clusters are ranked largest
  first (a tie: the representative's order). An empty cluster is dropped.
- Progress: one step per failure read, one for the clustering, one for storing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import faiss
import numpy as np
from django.db import transaction

from annotation.base.models import AnnotatedFailure
from annotation.failures.meaning.models import HUMAN, JUDGE, FailurePattern, FailurePatternRun
from annotation.failures.meaning.space import default_model
from h2e_site.embeddings.models import EmbeddingModel
from h2e_site.embeddings.search import as_float32, unit_rows
from h2e_site.embeddings.store import READ_CHUNK, stored_hashes, text_hash, vectors_read
from h2e_site.jobs.loop import JobWork, Progress
from h2e_site.jobs.models import Job
from judging.models import CriticalFailure, Judge
from mining.models import Topic

NITER = 20
INIT_SAMPLE = 50_000  # rows k-means++ draws its initial centroids among


@dataclass(frozen=True)
class TopicFailure:
    source: str  # judge / human
    pk: int
    description: str
    generator_id: str
    judge_id: str = ""  # judges' failures
    study: str = ""  # humans' failures


def topic_failures(topic: Topic) -> Iterator[TopicFailure]:
    """The topic's failures, judges' then humans', by id."""
    judge = (
        CriticalFailure.objects.filter(judgment__topic=topic)
        .order_by("pk")
        .values_list("pk", "description", "judgment__generator__generator_id", "judgment__judge__judge_id")
    )
    for pk, description, generator_id, judge_id in judge.iterator(chunk_size=READ_CHUNK):
        yield TopicFailure(JUDGE, pk, description, generator_id, judge_id=judge_id)
    generation = "annotation__item__generation__"
    human = (
        AnnotatedFailure.objects.not_attention_checks()
        .filter(**{f"{generation}procedure__topic": topic})
        .order_by("pk")
        .values_list("pk", "description", f"{generation}generator__generator_id", "annotation__study__slug")
    )
    for pk, description, generator_id, study in human.iterator(chunk_size=READ_CHUNK):
        yield TopicFailure(HUMAN, pk, description, generator_id, study=study)


def topic_failure_counts(topic: Topic) -> tuple[int, int]:
    """(the topic's failures with a stored vector under the default model, all its failures): read by their
    text hashes, a chunk of READ_CHUNK a query (60,000 failures: 12 index probes)."""
    model = default_model()
    descriptions = [failure.description for failure in topic_failures(topic)]
    if model is None or not descriptions:
        return 0, len(descriptions)
    hashes = [text_hash(description) for description in descriptions]
    stored = stored_hashes(model, hashes)
    return sum(h in stored for h in hashes), len(descriptions)


@dataclass(frozen=True)
class Clusters:
    labels: np.ndarray  # the cluster of each row
    representatives: dict[int, int]  # cluster -> its representative's row


def failure_clusters(vectors: np.ndarray, *, k: int, seed: int) -> Clusters:
    """faiss k-means of unit rows into k clusters (see the module's docstring)."""
    rows = as_float32(vectors)
    kmeans = faiss.Kmeans(
        rows.shape[1], k, niter=NITER, seed=seed, spherical=True, min_points_per_centroid=1, verbose=False
    )
    kmeans.train(rows, init_centroids=plus_plus_centroids(rows, k=k, seed=seed))
    _, nearest = kmeans.index.search(rows, 1)
    labels = nearest[:, 0].astype(np.int64)
    return Clusters(labels, representatives(rows, labels))


def plus_plus_centroids(rows: np.ndarray, *, k: int, seed: int) -> np.ndarray:
    """k-means++ (Arthur & Vassilvitskii 2007) among a seeded sample of unit rows: the first centroid a
    random row, each next one a row drawn with probability proportional to its squared distance to the
    nearest centroid so far."""
    rng = np.random.default_rng(seed)
    sample = rows[np.sort(rng.choice(len(rows), size=min(len(rows), INIT_SAMPLE), replace=False))]
    chosen = [int(rng.integers(len(sample)))]
    nearest = np.maximum(2.0 - 2.0 * (sample @ sample[chosen[0]]), 0.0)  # squared distance, unit rows
    for _ in range(k - 1):
        total = float(nearest.sum())
        pick = (
            int(rng.choice(len(sample), p=nearest / total)) if total > 0 else int(rng.integers(len(sample)))
        )
        chosen.append(pick)
        nearest = np.minimum(nearest, np.maximum(2.0 - 2.0 * (sample @ sample[pick]), 0.0))
    return np.ascontiguousarray(sample[chosen])


def representatives(rows: np.ndarray, labels: np.ndarray) -> dict[int, int]:
    """Each cluster's member nearest its centroid (the normalised mean of its members)."""
    chosen = {}
    for cluster in np.unique(labels):
        members = np.flatnonzero(labels == cluster)
        centroid = unit_rows(rows[members].mean(axis=0, keepdims=True))[0]
        chosen[int(cluster)] = int(members[int(np.argmax(rows[members] @ centroid))])
    return chosen


class PatternWork(JobWork):
    def __init__(self, job: Job, *, on_progress: Callable[[Job], None] | None = None) -> None:
        super().__init__(job, on_progress)
        self.k = int(job.parameters["k"])
        self.seed = int(job.parameters["seed"])

    def run(self) -> None:
        if FailurePatternRun.objects.filter(job=self.job).exists():
            return  # stored before its worker died
        topic = Topic.objects.filter(pk=self.job.parameters.get("topic")).first()
        model = default_model()
        if topic is None:
            self.failure = "topic: deleted before the job ran"
            return
        if model is None:
            self.failure = "no failure has a stored vector: run the embed job over the failures first"
            return
        failures = list(topic_failures(topic))
        self._total(len(failures) + 2)
        vectors, kept = self._read(model, failures)
        if len(kept) < self.k:
            self.failure = (
                f"k: {self.k} clusters need at least {self.k} failures with a stored vector; topic "
                f"{topic.name!r} has {len(kept)} (of {len(failures)}): run the embed job, or ask for fewer"
            )
            return
        clusters = failure_clusters(vectors, k=self.k, seed=self.seed)
        self._step()
        self._store(topic, model, kept, clusters, n_without=len(failures) - len(kept))
        self._step()

    def _total(self, total: int) -> None:
        self.job.total = total
        Job.objects.filter(pk=self.job.pk).update(total=total)
        self.progress = Progress()
        self.write_progress(force=True)

    def _step(self, n: int = 1) -> None:
        self.progress.done += n
        self.write_progress()

    def _read(
        self, model: EmbeddingModel, failures: list[TopicFailure]
    ) -> tuple[np.ndarray, list[TopicFailure]]:
        """The unit vectors of the failures that have one, and those failures, in order."""
        blocks, kept = [], []
        for start in range(0, len(failures), READ_CHUNK):
            chunk = failures[start : start + READ_CHUNK]
            vectors, found = vectors_read(model, [text_hash(f.description) for f in chunk])
            blocks.append(unit_rows(vectors[found]))
            kept += [f for f, ok in zip(chunk, found, strict=True) if ok]
            self._step(len(chunk))
        empty = np.zeros((0, model.dimension), np.float32)
        return (np.concatenate(blocks) if blocks else empty), kept

    def _store(
        self,
        topic: Topic,
        model: EmbeddingModel,
        kept: list[TopicFailure],
        clusters: Clusters,
        *,
        n_without: int,
    ) -> None:
        judges = Judge.objects.filter(judge_id__in={f.judge_id for f in kept if f.judge_id})
        demo = sorted(judges.filter(is_demo_model=True).values_list("judge_id", flat=True))
        with transaction.atomic():
            run = FailurePatternRun.objects.create(
                topic=topic, embedding_model=model, k=self.k, seed=self.seed, job=self.job,
                n_failures=len(kept), n_without_vector=n_without, created_by=self.job.created_by,
                by_generator=_counts(kept, "generator_id"), by_judge=_counts(kept, "judge_id"),
                by_study=_counts(kept, "study"),
                demo_judges=demo,
            )  # fmt: skip
            FailurePattern.objects.bulk_create(_patterns(run, kept, clusters))
        self.job.parameters = {**self.job.parameters, "run": run.pk}
        Job.objects.filter(pk=self.job.pk).update(parameters=self.job.parameters)


def _counts(failures: list[TopicFailure], field: str) -> dict[str, int]:
    return dict(sorted(Counter(getattr(f, field) for f in failures if getattr(f, field)).items()))


def _patterns(run: FailurePatternRun, kept: list[TopicFailure], clusters: Clusters) -> list[FailurePattern]:
    members: dict[int, list[TopicFailure]] = {}
    for failure, label in zip(kept, clusters.labels.tolist(), strict=True):
        members.setdefault(label, []).append(failure)
    order = sorted(members, key=lambda c: (-len(members[c]), clusters.representatives[c]))
    patterns = []
    for rank, cluster in enumerate(order, start=1):
        inside, representative = members[cluster], kept[clusters.representatives[cluster]]
        patterns.append(
            FailurePattern(
                run=run,
                rank=rank,
                size=len(inside),
                representative_source=representative.source,
                representative_pk=representative.pk,
                representative_text=representative.description,
                by_generator=_counts(inside, "generator_id"),
                by_judge=_counts(inside, "judge_id"),
                by_study=_counts(inside, "study"),
                judge_members=[f.pk for f in inside if f.source == JUDGE],
                human_members=[f.pk for f in inside if f.source == HUMAN],
            )
        )
    return patterns
