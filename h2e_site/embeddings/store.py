"""Reading and writing stored vectors (numpy: imported where vectors are used, never at start-up).

`StoredEmbed` is what builders and searches call: texts in, unit rows out (float32), each text's vector read
from the store, and the texts without one embedded (the model loaded only then) and stored on the way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from django.db import connection

from .models import EmbeddingModel, TextVector
from .search import unit_rows
from .specs import DEFAULT_EMBEDDING_MODEL, EmbeddingSpec

VECTOR_DTYPE = np.dtype("<f2")  # float16, little-endian (models.py says why)
READ_CHUNK = 5_000  # hashes per query
WRITE_BATCH = 1_000  # rows per INSERT
EMBED_BATCH = 256  # texts per call to the encoder (and per progress step)

Encode = Callable[[Sequence[str]], np.ndarray]


def text_hash(text: str) -> str:
    """SHA-256 of the text's UTF-8 bytes, hex: how the store knows a text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def model_row(spec: EmbeddingSpec) -> EmbeddingModel:
    """The stored row of an embedding model (made on first use); ValueError when a row of the same name and
    revision has another dimension."""
    row, _ = EmbeddingModel.objects.get_or_create(
        name=spec.name, revision=spec.revision, defaults={"dimension": spec.dimension}
    )
    if row.dimension != spec.dimension:
        raise ValueError(
            f"embedding model {spec.name} @ {spec.revision}: stored with {row.dimension} dimensions, "
            f"the model gives {spec.dimension}"
        )
    return row


def stored_hashes(model: EmbeddingModel, hashes: Sequence[str] | None = None) -> set[str]:
    """The hashes with a vector under `model`: among `hashes` when given (read by chunks), else all."""
    if hashes is None:
        rows = TextVector.objects.filter(model=model).values_list("text_hash", flat=True)
        return set(rows.iterator(chunk_size=20_000))
    unique = list(dict.fromkeys(hashes))
    found: set[str] = set()
    for start in range(0, len(unique), READ_CHUNK):
        found.update(h for h, *_ in _rows_among(model, unique[start : start + READ_CHUNK], with_vector=False))
    return found


def _rows_among(model: EmbeddingModel, hashes: list[str], *, with_vector: bool) -> list[tuple[Any, ...]]:
    """(text_hash[, vector]) of the stored rows of `model` whose hash is one of `hashes`. On PostgreSQL, a
    join with the hashes unnested from one text parameter: an index probe per hash. (`text_hash = ANY(...)`
    lets the planner scan every row of the model when its statistics are stale, as they are right after an
    embed job fills the table: 0.5 s a chunk at 835,000 rows, against 13 ms; and an IN list of 5,000 costs
    psycopg more to build than the database to answer.) Elsewhere, IN."""
    columns = ("text_hash", "vector") if with_vector else ("text_hash",)
    if connection.vendor != "postgresql":
        return list(TextVector.objects.filter(model=model, text_hash__in=hashes).values_list(*columns))
    selected = ", ".join(f"t.{column}" for column in columns)
    sql = (
        f"SELECT {selected} FROM unnest(string_to_array(%s, ',')) AS h(text_hash) "
        f"JOIN {TextVector._meta.db_table} t ON t.model_id = %s AND t.text_hash = h.text_hash"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [",".join(hashes), model.pk])
        return cursor.fetchall()


def vectors_save(model: EmbeddingModel, hashes: Sequence[str], vectors: np.ndarray) -> None:
    """Store one row per hash (a hash already stored is left as it is: saving twice changes nothing)."""
    rows = np.asarray(vectors, dtype=np.float32)
    if rows.shape != (len(hashes), model.dimension):
        raise ValueError(f"{rows.shape} vectors for {len(hashes)} texts of {model.dimension} dimensions")
    half = rows.astype(VECTOR_DTYPE)
    TextVector.objects.bulk_create(
        (TextVector(model=model, text_hash=h, vector=half[i].tobytes()) for i, h in enumerate(hashes)),
        ignore_conflicts=True,
        batch_size=WRITE_BATCH,
    )


def vectors_read(model: EmbeddingModel, hashes: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The stored vectors of `hashes`, in their order (float16 rows; zeros where none is stored), and a mask
    of those found."""
    unique = list(dict.fromkeys(hashes))
    out = np.zeros((len(unique), model.dimension), dtype=VECTOR_DTYPE)
    found = np.zeros(len(unique), dtype=bool)
    for start in range(0, len(unique), READ_CHUNK):
        chunk = unique[start : start + READ_CHUNK]
        pairs = _rows_among(model, chunk, with_vector=True)
        if not pairs:
            continue
        place = {h: start + i for i, h in enumerate(chunk)}  # a chunk's: no map of every hash at once
        at = np.fromiter((place[h] for h, _ in pairs), dtype=np.int64, count=len(pairs))
        blob = b"".join(bytes(vector) for _, vector in pairs)
        out[at] = np.frombuffer(blob, dtype=VECTOR_DTYPE).reshape(len(pairs), model.dimension)
        found[at] = True
    if len(unique) == len(hashes):
        return out, found
    place = {h: i for i, h in enumerate(unique)}
    back = np.fromiter((place[h] for h in hashes), dtype=np.int64, count=len(hashes))
    return out[back], found[back]


class StoredEmbed:
    """An embedding function over the store: `embed(texts)` reads each text's vector and embeds (and stores)
    only the texts without one, in batches of EMBED_BATCH; `on_batch(n)` is called after each (it may
    raise to stop). The encoder is loaded on the first text to embed, never when everything is stored.
    `embedded` counts the texts this object embedded."""

    def __init__(
        self,
        key: str = DEFAULT_EMBEDDING_MODEL,
        *,
        encoder: object | None = None,
        on_batch: Callable[[int], None] | None = None,
        dtype: np.dtype | type = np.float32,
        device: str = "cpu",
    ) -> None:
        self.key = key
        self.dtype = dtype
        self.device = device
        self._encoder = encoder
        self._model: EmbeddingModel | None = None
        self.on_batch = on_batch or (lambda n: None)
        self.embedded = 0

    @property
    def model(self) -> EmbeddingModel:
        if self._model is None:
            from .encoders import embedding_spec

            self._model = model_row(embedding_spec(self.key, encoder=self._encoder))
        return self._model

    def encoder(self) -> object:
        if self._encoder is None:
            from .encoders import embedder_for

            self._encoder = embedder_for(self.key, device=self.device)
        return self._encoder

    def missing(self, texts: Iterable[str]) -> list[str]:
        """The distinct texts without a stored vector (shortest first: batches of similar length)."""
        by_hash = {text_hash(t): t for t in dict.fromkeys(texts)}
        stored = stored_hashes(self.model, list(by_hash))
        return sorted((t for h, t in by_hash.items() if h not in stored), key=len)

    def fill(self, texts: Sequence[str]) -> None:
        """Embed and store the texts given (callers pass missing() ones), a batch at a time."""
        for start in range(0, len(texts), EMBED_BATCH):
            chunk = list(texts[start : start + EMBED_BATCH])
            vectors = self.encoder().encode(chunk)  # type: ignore[attr-defined]
            vectors_save(self.model, [text_hash(t) for t in chunk], vectors)
            self.embedded += len(chunk)
            self.on_batch(len(chunk))

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.dimension), dtype=self.dtype)
        hashes = [text_hash(t) for t in texts]
        vectors, found = vectors_read(self.model, hashes)
        if not found.all():
            self.fill(sorted(dict.fromkeys(t for t, ok in zip(texts, found, strict=True) if not ok), key=len))
            vectors, found = vectors_read(self.model, hashes)
        return unit_rows(vectors, self.dtype, out=vectors)  # in place when float16 is asked for
