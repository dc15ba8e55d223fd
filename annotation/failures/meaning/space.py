"""The failure space: every critical-failure description, judges' (CriticalFailure) and humans'
(AnnotatedFailure, attention checks left out), whose vector is stored under the default embedding model, as
the rows of one faiss index (h2e_site.embeddings.search.VectorIndex: exact up to 20,000 rows, an inverted
file above, probed in SPACE_NPROBE lists).

Built from the store (each description's vector read by its text hash) on the first request, and kept per
process (`search.cached`). Each request first reads the space's state in a few index lookups: the largest
id of both failure tables and of the model's vectors, and what changes when a failure is deleted (on
PostgreSQL the tables' deletion counters, pg_stat_user_tables.n_tup_del, which cost nothing where counting
600,000 rows costs 40 ms; elsewhere their counts). Failures added since, and failures whose text got its
vector since, are then added to the index in place (a few rows: milliseconds), so a new failure is found by
the first request after its vector is stored; a deletion, or growth by more than half since the build,
builds the space again. A failure deleted in the meantime is still a row of the index, and is left out when
the neighbours are read. Only each row's source and id are kept beside the index, and the text hashes of
the failures without a vector; a failure's own vector is read from the store when it is asked about.

Similar failures of a failure: its nearest rows, itself left out and so are failures of the same judgment
(annotation) with the same text, distance = 1 - cosine of the two stored vectors.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, models
from django.db.models import Max, QuerySet

from annotation.base.models import AnnotatedFailure
from annotation.failures.meaning.models import HUMAN, JUDGE
from h2e_site.embeddings.models import EmbeddingModel, TextVector
from h2e_site.embeddings.search import VectorIndex, as_float32, cached, unit_rows
from h2e_site.embeddings.specs import minilm_spec
from h2e_site.embeddings.store import READ_CHUNK, text_hash, vectors_read
from judging.models import CriticalFailure

Source = Literal["judge", "human"]
SIMILAR_K = 10
# Inverted lists probed above 20,000 rows: at 600,000 rows (1,549 lists) two thirds of them, 13 ms a search,
# recall@10 0.90 against the exact search on random vectors, the hardest case (docs/benchmarks.md).
SPACE_NPROBE = 1024
EXTRA = 8  # neighbours asked beyond k, for those left out (itself, the same text of the same judgment)
_SOURCE_CODE = {JUDGE: 0, HUMAN: 1}
_SOURCES: dict[int, Source] = {0: JUDGE, 1: HUMAN}
NOT_EMBEDDED = (
    "Not embedded yet: this failure's description has no stored vector. Run the embed job "
    "(manage.py embed --source judge_failures --source human_failures, or the admin's Embedding models)."
)


def default_model() -> EmbeddingModel | None:
    """The stored row of the default embedding model (None when nothing was ever stored under it, or the
    model is not installed): read only, a page never creates it."""
    try:
        spec = minilm_spec()
    except ImproperlyConfigured:
        return None
    return EmbeddingModel.objects.filter(name=spec.name, revision=spec.revision).first()


# --- the space --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpaceState:
    """What a space was read up to: the largest failure ids and vector id, and the deletion marks."""

    judge_last: int
    human_last: int
    vector_last: int
    deleted: tuple[object, object]

    def covers(self, other: SpaceState) -> bool:
        """`other` only adds to this state: nothing deleted, no id smaller."""
        return self.deleted == other.deleted and (
            other.judge_last >= self.judge_last
            and other.human_last >= self.human_last
            and other.vector_last >= self.vector_last
        )


def space_state(model: EmbeddingModel) -> SpaceState:
    def last(queryset: QuerySet[Any]) -> int:
        return int(queryset.aggregate(last=Max("pk"))["last"] or 0)

    return SpaceState(
        judge_last=last(CriticalFailure.objects.all()),
        human_last=last(AnnotatedFailure.objects.all()),
        vector_last=last(TextVector.objects.filter(model=model)),
        deleted=(_deletions(CriticalFailure), _deletions(AnnotatedFailure)),
    )


def _deletions(table: type[models.Model]) -> object:
    """What changes when a row of `table` is deleted: PostgreSQL's deletion counter of the table (counted
    when the deleting transaction ends), elsewhere the number of rows."""
    if connection.vendor != "postgresql":
        return table._default_manager.count()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n_tup_del FROM pg_stat_user_tables WHERE relid = %s::regclass", [table._meta.db_table]
        )
        row = cursor.fetchone()
    return row[0] if row else None


Row = tuple[int, int, str]  # (source code: 0 judge, 1 human; failure id; text hash)


class FailureSpace:
    """Row i of `index` is the failure (sources[i], pks[i]). Searched and grown under its lock."""

    def __init__(self, model: EmbeddingModel, state: SpaceState) -> None:
        self.model = model
        self.state = state
        self.sources = np.zeros(0, dtype=np.uint8)
        self.pks = np.zeros(0, dtype=np.int64)
        self.index: VectorIndex | None = None
        self.built_rows = 0
        self.missing: dict[str, list[tuple[int, int]]] = {}  # text hash -> failures without its vector
        self.lock = threading.Lock()

    @property
    def n(self) -> int:
        return len(self.pks)

    def search(self, query: np.ndarray, k: int) -> list[tuple[float, int, int]]:
        """(score, source code, failure id) of the k rows nearest `query` (a unit row), best first."""
        with self.lock:
            if self.index is None:
                return []
            scores, ids = self.index.search(query, k)
            return [
                (float(score), int(self.sources[i]), int(self.pks[i]))
                for score, i in zip(scores[0], ids[0], strict=True)
                if i >= 0
            ]

    def can_grow_to(self, state: SpaceState) -> bool:
        return self.index is not None and self.state.covers(state) and 2 * self.n <= 3 * self.built_rows

    def grow(self, state: SpaceState) -> None:
        """Add the failures of old texts whose vector was stored since, and the failures added since."""
        with self.lock:
            if state.vector_last > self.state.vector_last and self.missing:
                self._add(self._arrived(state))
            self._add(_rows(failure_descriptions(self.state, state)))
            self.state = state

    def _arrived(self, state: SpaceState) -> list[Row]:
        new = TextVector.objects.filter(
            model=self.model, pk__gt=self.state.vector_last, pk__lte=state.vector_last
        ).values_list("text_hash", flat=True)
        arrived = [h for h in new.iterator(chunk_size=READ_CHUNK) if h in self.missing]
        return [(code, pk, h) for h in arrived for code, pk in self.missing.pop(h)]

    def _add(self, rows: list[Row]) -> None:
        assert self.index is not None
        for start in range(0, len(rows), READ_CHUNK):
            chunk = rows[start : start + READ_CHUNK]
            vectors, found = self._read(chunk)
            if len(vectors):
                self.index.index.add(as_float32(unit_rows(vectors)))
                self.index.n += len(vectors)
            self.sources = np.concatenate([self.sources, [code for code, _, _ in found]]).astype(np.uint8)
            self.pks = np.concatenate([self.pks, [pk for _, pk, _ in found]]).astype(np.int64)

    def _read(self, chunk: list[Row]) -> tuple[np.ndarray, list[Row]]:
        """The stored vectors of the rows that have one (float16), and those rows; the others are missing."""
        vectors, found = vectors_read(self.model, [h for _, _, h in chunk])
        for (code, pk, h), ok in zip(chunk, found, strict=True):
            if not ok:
                self.missing.setdefault(h, []).append((code, pk))
        return vectors[found], [row for row, ok in zip(chunk, found, strict=True) if ok]


class _Holder:
    """The latest space of a model in this process."""

    def __init__(self) -> None:
        self.space: FailureSpace | None = None
        self.lock = threading.Lock()


def failure_space(model: EmbeddingModel) -> FailureSpace:
    """The space of the model's stored failure vectors as of now: built on the first call, then grown by
    what was added, or built again after a deletion (see the module's docstring)."""
    holder = cached(("failure-space", model.pk), _Holder)
    state = space_state(model)
    with holder.lock:
        space = holder.space
        if space is not None and space.state == state:
            return space
        if space is not None and space.can_grow_to(state):
            space.grow(state)
            return space
        holder.space = failure_space_build(model, state)
        return holder.space


def failure_descriptions(
    since: SpaceState | None = None, until: SpaceState | None = None
) -> Iterator[tuple[int, int, str]]:
    """(source code, id, description) of the failures the browser lists, judges' then humans', by id: those
    with an id above `since`'s and up to `until`'s (each bound when given)."""
    judge = CriticalFailure.objects.order_by("pk")
    human = AnnotatedFailure.objects.not_attention_checks().order_by("pk")
    if since is not None:
        judge, human = judge.filter(pk__gt=since.judge_last), human.filter(pk__gt=since.human_last)
    if until is not None:
        judge, human = judge.filter(pk__lte=until.judge_last), human.filter(pk__lte=until.human_last)
    for code, rows in ((0, judge), (1, human)):
        for pk, description in rows.values_list("pk", "description").iterator(chunk_size=READ_CHUNK):
            yield code, pk, description


def _rows(failures: Iterator[tuple[int, int, str]]) -> list[Row]:
    return [(code, pk, text_hash(description)) for code, pk, description in failures]


def failure_space_build(model: EmbeddingModel, state: SpaceState) -> FailureSpace:
    """Every failure up to `state` with a stored vector, read a chunk of READ_CHUNK at a time into one
    float16 array (unit rows) and indexed; the array is dropped once the index holds the rows."""
    space = FailureSpace(model, state)
    capacity = CriticalFailure.objects.count() + AnnotatedFailure.objects.count()
    vectors = np.empty((capacity, model.dimension), dtype=np.float16)
    sources = np.empty(capacity, dtype=np.uint8)
    pks = np.empty(capacity, dtype=np.int64)
    kept = 0
    for chunk in _chunks(failure_descriptions(until=state), READ_CHUNK):
        found_vectors, found = space._read(_rows(iter(chunk)))
        n = min(len(found), capacity - kept)  # rows deleted while reading: fewer than counted
        vectors[kept : kept + n] = unit_rows(found_vectors[:n], np.float16)
        sources[kept : kept + n] = [code for code, _, _ in found]
        pks[kept : kept + n] = [pk for _, pk, _ in found]
        kept += n
    space.sources, space.pks = sources[:kept].copy(), pks[:kept].copy()
    space.index = VectorIndex.build(vectors[:kept], nprobe=SPACE_NPROBE) if kept else None
    space.built_rows = kept
    return space


def _chunks(rows: Iterator[tuple[int, int, str]], size: int) -> Iterator[list[tuple[int, int, str]]]:
    chunk: list[tuple[int, int, str]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# --- one failure and its neighbours ----------------------------------------------------------------------


@dataclass(frozen=True)
class FailureSeen:
    """A failure as the similar-failures list shows it."""

    source: Source
    pk: int
    description: str
    parent_id: int  # its judgment (judge) or annotation (human)
    generation_id: int
    by: str  # the judge's model, or "study <slug>"
    by_id: str  # judge_id, or the annotation
    generator_model: str
    generator_id: str
    topic: str
    distance: float | None = None  # to the failure asked about (1 - cosine)

    @property
    def token(self) -> str:
        return f"{self.source}-{self.pk}"


@dataclass(frozen=True)
class SimilarFailures:
    failure: FailureSeen
    neighbours: list[FailureSeen]
    problem: str = ""  # why there are none: not embedded yet


def failures_seen(source: Source, pks: list[int]) -> dict[int, FailureSeen]:
    """The failures of one source by id (one query), attention-check ones left out."""
    if source == JUDGE:
        judge_rows = CriticalFailure.objects.filter(pk__in=pks).values_list(
            "pk", "description", "judgment_id", "judgment__generation_id", "judgment__judge__model",
            "judgment__judge__judge_id", "judgment__generator__model", "judgment__generator__generator_id",
            "judgment__topic__name",
        )  # fmt: skip
        return {
            pk: FailureSeen(JUDGE, pk, text, parent, generation, model, jid, gmodel, gid, topic or "")
            for pk, text, parent, generation, model, jid, gmodel, gid, topic in judge_rows
        }
    generation = "annotation__item__generation__"
    human_rows = (
        AnnotatedFailure.objects.not_attention_checks()
        .filter(pk__in=pks)
        .values_list(
            "pk", "description", "annotation_id", "annotation__item__generation_id",
            "annotation__study__slug", f"{generation}generator__model",
            f"{generation}generator__generator_id", f"{generation}procedure__topic__name",
        )
    )  # fmt: skip
    return {
        pk: FailureSeen(
            HUMAN, pk, text, parent, g, f"study {slug}", f"annotation #{parent}", gm, gid, t or ""
        )
        for pk, text, parent, g, slug, gm, gid, t in human_rows
    }


def failure_seen(source: Source, pk: int) -> FailureSeen | None:
    return failures_seen(source, [pk]).get(pk)


def similar_failures(failure: FailureSeen, *, k: int = SIMILAR_K) -> SimilarFailures:
    """The k failures nearest `failure` in the space, nearest first (distance, then source and id)."""
    model = default_model()
    query = _vector_of(model, failure.description) if model is not None else None
    if model is None or query is None:
        return SimilarFailures(failure, [], NOT_EMBEDDED)
    found = failure_space(model).search(query, k + EXTRA)
    return SimilarFailures(failure, _neighbours(failure, found, k))


def _vector_of(model: EmbeddingModel, description: str) -> np.ndarray | None:
    vectors, found = vectors_read(model, [text_hash(description)])
    return unit_rows(vectors) if found[0] else None


def _neighbours(failure: FailureSeen, found: list[tuple[float, int, int]], k: int) -> list[FailureSeen]:
    pks: dict[Source, list[int]] = {JUDGE: [], HUMAN: []}
    for _, code, pk in found:
        pks[_SOURCES[code]].append(pk)
    seen = {source: failures_seen(source, ids) for source, ids in pks.items() if ids}
    neighbours = []
    for score, code, pk in found:
        other = seen.get(_SOURCES[code], {}).get(pk)
        if other is None or _same(failure, other):
            continue  # deleted since the space was read, itself, or its own text again
        neighbours.append(_with_distance(other, 1.0 - score))
    neighbours.sort(key=lambda f: (f.distance, _SOURCE_CODE[f.source], f.pk))
    return neighbours[:k]


def _same(failure: FailureSeen, other: FailureSeen) -> bool:
    """Itself, or the same text listed again in the same judgment (annotation)."""
    if (other.source, other.parent_id) != (failure.source, failure.parent_id):
        return False
    return other.pk == failure.pk or other.description == failure.description


def _with_distance(failure: FailureSeen, distance: float) -> FailureSeen:
    from dataclasses import replace

    return replace(failure, distance=max(0.0, distance))
