"""Stored embeddings: a vector per (embedding model, text), so that no text is embedded twice.

A text is known by its hash (text_hash: SHA-256 of its UTF-8 bytes, hex), not stored again: the tables
that hold texts (procedures, critical failures) stay their source. Vectors are float16, little-endian,
L2-normalised before rounding: 768 bytes for a 384-dimension model. float16 keeps about 3 significant
digits, so a cosine moves by at most ~1e-3 (tests/embeddings/test_store.py measures it), far below the gaps
neighbour search and the 0.65 deduplication threshold act on; half of float32's bytes is what lets 100,000
procedures' ~600,000 texts fit in a few hundred MB of database.
"""

from __future__ import annotations

from django.db import models


class EmbeddingModel(models.Model):
    """One embedding model as it computed its vectors: a vector of one model is never compared with another's,
    so a new revision of the same name is a new row (and its texts are embedded again)."""

    name = models.CharField(max_length=200, help_text="e.g. sentence-transformers/all-MiniLM-L6-v2")
    revision = models.CharField(max_length=200, help_text="the weights' version (package version and hash)")
    dimension = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "revision"]
        constraints = [
            models.UniqueConstraint(fields=["name", "revision"], name="embedding_model_unique_revision")
        ]

    def __str__(self) -> str:
        return f"{self.name} @ {self.revision} ({self.dimension} dims)"


class TextVector(models.Model):
    """The vector of one text under one embedding model (float16, little-endian, dimension values)."""

    model = models.ForeignKey(
        EmbeddingModel, on_delete=models.CASCADE, related_name="vectors", db_index=False
    )
    text_hash = models.CharField(max_length=64)
    vector = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model", "text_hash"], name="text_vector_unique_text")]

    def __str__(self) -> str:
        return f"{self.text_hash[:12]} under model {self.model_id}"
