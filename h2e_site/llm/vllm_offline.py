"""The vLLM offline engine: `vllm.LLM` inside a Celery worker on the `gpu` queue.

vllm is imported lazily: the web app and CPU workers never need it, and where it is absent a clear
ImproperlyConfigured names the extra to install. One engine per process for a given model + engine kwargs
(loading weights takes minutes). Requests run in chunks (one `generate` / `chat` call each, one
SamplingParams per request, since each judge request carries its own bounded schema); should_stop() is
asked before each chunk and each chunk's results reach on_result as soon as it finishes.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from .base import BackendConfig, LLMRequest, LLMResult, OnResult

INSTALL_HINT = "the vllm backend needs `pip install -e '.[vllm]'` and a GPU worker on the `gpu` queue"
CHUNK_SIZE = 256  # requests per engine call: big enough to keep the GPU busy, small enough to cancel

_engines: dict[str, Any] = {}
_engines_lock = threading.Lock()


def import_vllm() -> ModuleType:
    try:
        import vllm
    except ImportError as exc:
        raise ImproperlyConfigured(f"{INSTALL_HINT} (import failed: {exc})") from exc
    return vllm


@dataclass(frozen=True)
class SamplingSpec:
    """What a request asks of vLLM, without vllm's classes: `kwargs` for SamplingParams and the structured
    output constraint ({"json": schema} or {"grammar": gbnf}), if any."""

    kwargs: dict[str, Any]
    structured: dict[str, Any] | None


def sampling_spec(config: BackendConfig, request: LLMRequest) -> SamplingSpec:
    kwargs: dict[str, Any] = {"temperature": request.temperature, "max_tokens": request.max_tokens}
    if request.top_p is not None:
        kwargs["top_p"] = request.top_p
    if request.stop:
        kwargs["stop"] = list(request.stop)
    if request.seed is not None:
        kwargs["seed"] = request.seed
    kwargs.update(config.sampling_kwargs)  # the config's vllm overrides are deliberate: they win
    structured: dict[str, Any] | None = None
    if request.json_schema is not None:
        structured = {"json": request.json_schema}
        kwargs.pop("stop", None)  # a stop string inside the JSON would cut it short
    elif request.grammar is not None:
        structured = {"grammar": request.grammar}
    return SamplingSpec(kwargs, structured)


def sampling_params(vllm: ModuleType, spec: SamplingSpec) -> Any:
    """SamplingParams for the installed vLLM: structured_outputs (current) or guided_decoding (<= 0.11)."""
    kwargs = dict(spec.kwargs)
    if spec.structured is not None:
        try:
            from vllm.sampling_params import StructuredOutputsParams

            kwargs["structured_outputs"] = StructuredOutputsParams(**spec.structured)
        except ImportError:
            from vllm.sampling_params import GuidedDecodingParams

            kwargs["guided_decoding"] = GuidedDecodingParams(**spec.structured)
    return vllm.SamplingParams(**kwargs)


def engine_for(vllm: ModuleType, config: BackendConfig) -> Any:
    key = json.dumps([config.model, config.engine_kwargs], sort_keys=True, default=str)
    with _engines_lock:
        if key not in _engines:
            _engines[key] = vllm.LLM(model=config.model, **config.engine_kwargs)
        return _engines[key]


class VLLMOfflineBackend:
    def __init__(self, config: BackendConfig) -> None:
        self.config = config
        self._vllm = import_vllm()

    def close(self) -> None:
        """The engine stays loaded for the next job in this worker process."""

    def run(
        self,
        requests: Iterable[LLMRequest],
        on_result: OnResult,
        *,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        pending = iter(requests)
        llm = None
        while not should_stop():
            chunk = list(itertools.islice(pending, CHUNK_SIZE))
            if not chunk:
                return
            llm = llm or engine_for(self._vllm, self.config)
            for result in self._run_chunk(llm, chunk):
                on_result(result)

    def _run_chunk(self, llm: Any, chunk: Sequence[LLMRequest]) -> list[LLMResult]:
        params = [sampling_params(self._vllm, sampling_spec(self.config, r)) for r in chunk]
        started = time.monotonic()
        try:
            outputs = self._generate(llm, chunk, params)
        except Exception as exc:  # the engine failed the whole chunk: report each request, raise nothing
            transient = not isinstance(exc, ValueError | TypeError)
            error = f"vLLM failed: {type(exc).__name__}: {exc}"
            return [LLMResult(r.key, None, error=error, transient=transient) for r in chunk]
        latency_s = time.monotonic() - started
        return [self._result(r, output, latency_s) for r, output in zip(chunk, outputs, strict=True)]

    def _generate(self, llm: Any, chunk: Sequence[LLMRequest], params: list[Any]) -> list[Any]:
        if self.config.mode == "chat":
            conversations = [[{"role": "user", "content": r.prompt}] for r in chunk]
            return llm.chat(
                conversations,
                sampling_params=params,
                use_tqdm=False,
                add_generation_prompt=True,
                chat_template_kwargs=self.config.chat_template_kwargs or None,
            )
        return llm.generate([r.prompt for r in chunk], sampling_params=params, use_tqdm=False)

    @staticmethod
    def _result(request: LLMRequest, output: Any, latency_s: float) -> LLMResult:
        if not output.outputs:
            return LLMResult(request.key, None, error="vLLM returned no output")
        completion = output.outputs[0]
        prompt_ids = getattr(output, "prompt_token_ids", None)
        return LLMResult(
            request.key,
            completion.text or "",
            prompt_tokens=len(prompt_ids) if prompt_ids is not None else None,
            completion_tokens=len(completion.token_ids),
            latency_s=latency_s,
        )
