"""Encoders for the embedding tests: unit vectors from a text's hash (equal texts: cosine 1, different ones
about 0), each saying which model it is, and counting what they were asked to embed."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from h2e_site.embeddings.specs import EmbeddingSpec


class CountingHashEncoder:
    def __init__(
        self, name: str = "tests/hash", dimension: int = 32, *, fail_after: int | None = None
    ) -> None:
        self.spec = EmbeddingSpec(name, name, "1", dimension)
        self.encoded: list[str] = []
        self.fail_after = fail_after  # raise on the call after this many texts (a worker dying mid-job)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_after is not None and len(self.encoded) >= self.fail_after:
            raise SystemExit("the worker died")
        self.encoded.extend(texts)
        rows = np.stack([self._row(text) for text in texts]) if texts else np.zeros((0, self.spec.dimension))
        return rows.astype(np.float32)

    def _row(self, text: str) -> np.ndarray:
        digest = hashlib.sha256(f"{self.spec.name}|{text}".encode()).digest()
        row = np.random.default_rng(int.from_bytes(digest[:8], "little")).standard_normal(self.spec.dimension)
        return row / np.linalg.norm(row)
