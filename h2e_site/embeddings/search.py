"""Neighbour search over unit vectors with faiss (inner product = cosine).

`VectorIndex.build(vectors)`: exact (IndexFlatIP) up to EXACT_LIMIT rows; above it an inverted-file index
(IndexIVFScalarQuantizer, float16 codes: half the memory of float32 rows) with NLIST_PER_SQRT x sqrt(n) lists,
trained by faiss's k-means on a seeded sample and searched in NPROBE of them. The approximate index misses a
neighbour that sits in a list not probed: `recall_at_k` measures it against the exact search on a sample, and
benchmarks/goal_step_build.py and benchmarks/failure_meaning.py report it. Queries go in blocks, so memory
stays bounded by the index and a block's results. `nprobe_for(n, scan_rows)` is the number of lists to probe
so that a query scans about `scan_rows` rows (a search of every row among n costs n x nprobe x n / nlist:
n^1.5 at a fixed nprobe).

`cached(key, build)` keeps the last few things built in this process (indexes, clusterings), keyed by what
they were built from (the model and the digest of the text hashes, say), so a page that searches the same set
again does not build again; `index_cached(key, vectors)` is an index kept so.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import faiss
import numpy as np

EXACT_LIMIT = 20_000
NLIST_PER_SQRT = 2  # inverted lists: 2 x sqrt(n) (about 500 rows per list at 60,000, 1,600 at 600,000)
NPROBE = 16
TRAIN_PER_LIST = 40  # k-means training sample: rows per list
KMEANS_ITERATIONS = 10
SEARCH_BLOCK = 8_192
ADD_BLOCK = 65_536
CACHED_INDEXES = 4


def unit_rows(
    vectors: np.ndarray,
    dtype: np.dtype | type = np.float32,
    block: int = 65_536,
    *,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Rows scaled to length 1 again (float16 rounding moves a norm by ~1e-3), as `dtype`, a block at a
    time (a float32 copy of every row at once would double the memory of a large corpus); into `out` when
    it is an array of that dtype and shape (`vectors` itself: in place), else a new array."""
    if out is None or out.dtype != np.dtype(dtype) or out.shape != vectors.shape:
        out = np.empty(vectors.shape, dtype=dtype)
    for start in range(0, len(vectors), block):
        rows = np.asarray(vectors[start : start + block], dtype=np.float32)
        out[start : start + block] = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return out


def as_float32(rows: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rows, dtype=np.float32)


@dataclass
class VectorIndex:
    index: faiss.Index
    n: int
    exact: bool

    @classmethod
    def build(
        cls,
        vectors: np.ndarray,
        *,
        rows: np.ndarray | None = None,
        exact_limit: int = EXACT_LIMIT,
        nprobe: int = NPROBE,
        seed: int = 0,
        code_bits: int = 16,
    ) -> VectorIndex:
        """An index of `vectors` (unit rows, float16 or float32), or of vectors[rows] read a block at a time
        (no copy of them all); the i-th row indexed is id i. code_bits: 16 (float16 codes) or 8 (8-bit
        scalar codes, trained per dimension: half the memory, ~15 % slower to scan)."""
        rows = np.arange(len(vectors)) if rows is None else rows
        n, dimension = len(rows), vectors.shape[1]
        if n <= exact_limit:
            index: faiss.Index = faiss.IndexFlatIP(dimension)
            _add(index, vectors, rows)
            return cls(index, n, exact=True)
        nlist = max(1, int(NLIST_PER_SQRT * math.sqrt(n)))
        quantizer = faiss.IndexFlatIP(dimension)
        codes = faiss.ScalarQuantizer.QT_8bit if code_bits == 8 else faiss.ScalarQuantizer.QT_fp16
        index = faiss.IndexIVFScalarQuantizer(quantizer, dimension, nlist, codes, faiss.METRIC_INNER_PRODUCT)
        index.cp.niter = KMEANS_ITERATIONS
        index.cp.seed = seed
        index.cp.max_points_per_centroid = TRAIN_PER_LIST
        sample = np.random.default_rng(seed).choice(n, size=min(n, nlist * TRAIN_PER_LIST), replace=False)
        index.train(as_float32(vectors[rows[np.sort(sample)]]))
        _add(index, vectors, rows)
        index.nprobe = min(nprobe, nlist)
        return cls(index, n, exact=False)

    def search(
        self, queries: np.ndarray, k: int, *, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (len(queries), k) (or (len(rows), k) for the queries queries[rows], read a
        block at a time), best first; id -1 where fewer than k rows were found."""
        rows = np.arange(len(queries)) if rows is None else rows
        k = max(0, min(k, self.n))
        scores = np.full((len(rows), k), -np.inf, dtype=np.float32)
        ids = np.full((len(rows), k), -1, dtype=np.int64)
        if k == 0:
            return scores, ids
        for start in range(0, len(rows), SEARCH_BLOCK):
            block = as_float32(queries[rows[start : start + SEARCH_BLOCK]])
            scores[start : start + len(block)], ids[start : start + len(block)] = self.index.search(block, k)
        return scores, ids


def nprobe_for(n: int, scan_rows: int, *, most: int = NPROBE, least: int = 4) -> int:
    """Lists to probe in an inverted file of n rows so that a query scans about `scan_rows` of them, between
    `least` and `most`."""
    per_list = n / max(1, int(NLIST_PER_SQRT * math.sqrt(n)))
    return max(least, min(most, math.ceil(scan_rows / per_list)))


def _add(index: faiss.Index, vectors: np.ndarray, rows: np.ndarray) -> None:
    for start in range(0, len(rows), ADD_BLOCK):
        index.add(as_float32(vectors[rows[start : start + ADD_BLOCK]]))


def exact_search(vectors: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact top k of `queries` among `vectors` (a flat index, built for this call)."""
    return VectorIndex.build(vectors, exact_limit=len(vectors)).search(queries, k)


def recall_at_k(index: VectorIndex, vectors: np.ndarray, *, k: int, sample: int, seed: int = 0) -> float:
    """The share of the exact top-k neighbours of `sample` rows drawn with `seed` that `index` finds too."""
    rows = np.sort(
        np.random.default_rng(seed).choice(len(vectors), size=min(sample, len(vectors)), replace=False)
    )
    queries = vectors[rows]
    _, truth = exact_search(vectors, queries, k)
    _, found = index.search(queries, k)
    hits = sum(len(set(a[a >= 0]) & set(b[b >= 0])) for a, b in zip(truth, found, strict=True))
    wanted = int((truth >= 0).sum())
    return hits / wanted if wanted else 1.0


_CACHE: OrderedDict[Hashable, Any] = OrderedDict()
_CACHE_LOCK = threading.Lock()
T = TypeVar("T")


def cached(key: Hashable, build: Callable[[], T]) -> T:
    """What `build()` returns, kept under `key` (say, the model and the set of texts an index holds): built
    on the first call, then reused; the least recently used of more than CACHED_INDEXES entries is dropped.
    Two threads asking for a missing key at once may both build it (the second result is kept)."""
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return cast(T, _CACHE[key])
    value = build()
    with _CACHE_LOCK:
        _CACHE[key] = value
        while len(_CACHE) > CACHED_INDEXES:
            _CACHE.popitem(last=False)
    return value


def index_cached(key: Hashable, vectors: Callable[[], np.ndarray]) -> VectorIndex:
    """The index of `vectors()` kept under `key` (see `cached`)."""
    return cached(("index", key), lambda: VectorIndex.build(vectors()))
