"""The embedding models that compute, loaded only when a text needs embedding: all-MiniLM-L6-v2 in numpy
(tokenizers + safetensors: the 6-layer BERT encoder, then mean pooling over the tokens and L2 normalisation,
as the model's sentence-transformers modules Transformer, Pooling mean, Normalize do; its output matches
sentence-transformers to float32 precision, tests/mining/test_embedding.py holds reference vectors computed
with sentence-transformers 5 / torch 2.13 CPU), and any sentence-transformers model where it is installed.
embedder_for picks one by name (specs.py says what the names mean). Imported where a model is loaded, so numpy
and scipy stay out of the start-up of the web and Celery processes."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from django.core.exceptions import ImproperlyConfigured
from scipy.special import erf

from .specs import DEFAULT_EMBEDDING_MODEL, Embedder, EmbeddingSpec, minilm_spec, packaged_model_dir

BATCH = 64  # texts per forward pass


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (BERT, 6 layers, 384 dims) in numpy: mean pooling, L2 normalised."""

    def __init__(self, model_dir: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = model_dir or packaged_model_dir()
        self.spec = minilm_spec()
        config = json.loads((folder / "config.json").read_text())
        max_length = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.weights = load_file(str(folder / "model.safetensors"))
        self._transposed: dict[str, np.ndarray] = {}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.enable_padding(pad_id=int(config.get("pad_token_id", 0)))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Batches of similar length (less padding), returned in the order given."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            out[chosen] = self._encode_batch([texts[i] for i in chosen])
        return out

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        hidden = self._embeddings(ids)
        for layer in range(self.layers):
            hidden = self._layer(hidden, mask, f"encoder.layer.{layer}.")
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)

    def _embeddings(self, ids: np.ndarray) -> np.ndarray:
        w = self.weights
        positions = np.arange(ids.shape[1])
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][positions][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        return self._norm(x, "embeddings.LayerNorm.")

    def _layer(self, x: np.ndarray, mask: np.ndarray, prefix: str) -> np.ndarray:
        attention = self._attention(x, mask, prefix + "attention.self.")
        x = self._norm(
            x + self._dense(attention, prefix + "attention.output.dense."),
            prefix + "attention.output.LayerNorm.",
        )
        inner = self._dense(x, prefix + "intermediate.dense.")
        inner = _gelu(inner)
        return self._norm(x + self._dense(inner, prefix + "output.dense."), prefix + "output.LayerNorm.")

    def _attention(self, x: np.ndarray, mask: np.ndarray, prefix: str) -> np.ndarray:
        batch, length, width = x.shape
        size = width // self.heads

        def split(name: str) -> np.ndarray:
            return (
                self._dense(x, prefix + name + ".")
                .reshape(batch, length, self.heads, size)
                .transpose(0, 2, 1, 3)
            )

        q, k, v = split("query"), split("key"), split("value")
        # float32 throughout: a float64 scalar here made every layer after the first run in float64
        scale = np.float32(np.sqrt(size))
        scores = q @ k.transpose(0, 1, 3, 2) / scale + (1.0 - mask)[:, None, None, :] * -1e9
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        return (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)

    def _dense(self, x: np.ndarray, prefix: str) -> np.ndarray:
        """A linear layer as one 2-D matrix product (numpy's stacked matmul would not use BLAS well)."""
        weight = self._transposed.get(prefix)
        if weight is None:
            weight = self._transposed[prefix] = np.ascontiguousarray(self.weights[prefix + "weight"].T)
        flat = x.reshape(-1, x.shape[-1]) @ weight + self.weights[prefix + "bias"]
        return flat.reshape(*x.shape[:-1], weight.shape[1])

    def _norm(self, x: np.ndarray, prefix: str) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + self.eps) * self.weights[prefix + "weight"] + self.weights[
            prefix + "bias"
        ]


_GELU_THREADS: ThreadPoolExecutor | None = None
SQRT_HALF = np.float32(np.sqrt(0.5))


def _gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU, as BERT's "gelu": x / 2 (1 + erf(x / sqrt 2)), kept float32 (scipy's erf gives
    float64 for float32, which made every layer after it run in float64), the rows split over the cores
    (a ufunc releases the GIL; erf is a third of the encoder's time on one core)."""
    global _GELU_THREADS
    if _GELU_THREADS is None:
        _GELU_THREADS = ThreadPoolExecutor(max(1, os.cpu_count() or 1))
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty(rows.shape, dtype=np.float32)

    def part(block: slice) -> None:
        y = rows[block]
        out[block] = 0.5 * y * (1.0 + erf(y * SQRT_HALF))

    parts = np.array_split(np.arange(len(rows)), _GELU_THREADS._max_workers)
    list(_GELU_THREADS.map(part, [slice(int(p[0]), int(p[-1]) + 1) for p in parts if len(p)]))
    return out.reshape(x.shape)


class SentenceTransformerEmbedder:
    """Any sentence-transformers model, e.g. Qwen/Qwen3-Embedding-0.6B (a hub name, cached, or a local
    folder), where sentence-transformers and torch are installed; rows L2-normalised."""

    def __init__(self, name_or_path: str, *, device: str = "cpu", spec: EmbeddingSpec | None = None) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ImproperlyConfigured(
                f"the embedding model {name_or_path!r} needs sentence-transformers (and torch==2.13.0 CPU on "
                "this machine, or a CUDA build on a GPU worker); the default model 'minilm' on the CPU needs "
                "neither"
            ) from exc
        self.model = SentenceTransformer(name_or_path, device=device)
        revision = getattr(self.model.model_card_data, "base_model_revision", None) or "unpinned"
        dimension = int(self.model.get_sentence_embedding_dimension() or 0)
        self.spec = spec or EmbeddingSpec(name_or_path, name_or_path, str(revision), dimension)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.model.encode(list(texts), batch_size=BATCH, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32)


def embedder_for(name: str = DEFAULT_EMBEDDING_MODEL, *, device: str = "cpu") -> Embedder:
    """`minilm`: the packaged all-MiniLM-L6-v2 in numpy; anything else: a sentence-transformers model. On
    another device (a GPU worker's "cuda"), sentence-transformers runs the model: for `minilm`, the same
    packaged files (its sentence-transformers modules are in the wheel), so its vectors go under the same
    model row."""
    if device != "cpu":
        if name == DEFAULT_EMBEDDING_MODEL:
            return SentenceTransformerEmbedder(str(packaged_model_dir()), device=device, spec=minilm_spec())
        return SentenceTransformerEmbedder(name, device=device)
    if name == DEFAULT_EMBEDDING_MODEL:
        return MiniLMEmbedder()
    return SentenceTransformerEmbedder(name)


def embedding_spec(name: str = DEFAULT_EMBEDDING_MODEL, *, encoder: object | None = None) -> EmbeddingSpec:
    """The identity of the model `name` means: the default's without loading it; another's from `encoder`
    when given (an object with a `spec`), else from the model, loaded for it."""
    if encoder is not None:
        given = getattr(encoder, "spec", None)
        if not isinstance(given, EmbeddingSpec):
            raise ValueError(
                f"{type(encoder).__name__} must say which model it is (a `spec`): vectors of two "
                "models are never stored under one"
            )
        return given
    if name == DEFAULT_EMBEDDING_MODEL:
        return minilm_spec()
    return SentenceTransformerEmbedder(name).spec
