"""Which backend runs a config: the one place that knows every implementation, above base.py (the protocol
and request types they all build on), so that base imports none of them.

openai_http imports the openai client at its top, so it is imported here only when a config asks for it
(a lazy import of a heavy library: the web app and CPU workers that never call a model do not pay for it);
vllm_offline imports vllm itself lazily, so it is imported at the top.
"""

from __future__ import annotations

from .base import BackendConfig, LLMBackend
from .vllm_offline import VLLMOfflineBackend


def backend_from_config(config: BackendConfig) -> LLMBackend:
    """The backend implementation for a config (imports heavy modules lazily)."""
    if config.backend == "openai" or config.backend == "local":
        from .openai_http import OpenAICompatibleBackend

        return OpenAICompatibleBackend(config)
    if config.backend == "vllm":
        return VLLMOfflineBackend(config)
    raise ValueError(f"unknown LLM backend {config.backend!r} (expected openai, vllm or local)")
