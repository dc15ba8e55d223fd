"""The OpenAI-compatible HTTP backend: the OpenAI API, a `vllm serve` server, or llama.cpp's server.

Requests run on a thread pool (`max_concurrency` in flight) while the calling thread hands each result to
`on_result` as it arrives, so the caller (a Celery task) writes to the database from its own thread.
Transient failures (429, 408, 409, 5xx, timeouts, dropped connections) are retried with exponential backoff
and jitter, honouring Retry-After / retry-after-ms, up to `max_attempts`; other 4xx fail at once.
The openai client's own retries are off (max_retries=0): these are the only ones.
"""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence, Sized
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Literal

import openai
from django.core.exceptions import ImproperlyConfigured

from .base import (
    BackendConfig,
    LLMRequest,
    LLMResult,
    OnResult,
    api_key_for,
    is_openai_api,
)
from .ratelimit import RateLimiter

logger = logging.getLogger(__name__)

ServerKind = Literal["openai", "vllm", "llama.cpp"]
TRANSIENT_STATUSES = frozenset({408, 409, 429})
MAX_RETRY_AFTER_S = 300.0
STOP_POLL_S = 1.0  # how often should_stop() is asked while every slot is busy


def server_kind(config: BackendConfig) -> ServerKind:
    """Which server is behind the URL: it decides how JSON and grammar constraints are sent."""
    if config.backend == "local":
        return "llama.cpp"
    if is_openai_api(config.servers[0]):  # not config.provider: the reference says "openai" for any API
        return "openai"
    return "vllm"


def request_params(config: BackendConfig, request: LLMRequest) -> dict[str, Any]:
    """The keyword arguments for `client.chat.completions.create` / `client.completions.create`."""
    kind = server_kind(config)
    params: dict[str, Any] = {"model": config.model}
    extra: dict[str, Any] = {}
    if config.mode == "chat":
        params["messages"] = [{"role": "user", "content": request.prompt}]
    else:
        params["prompt"] = request.prompt
    # OpenAI's reasoning models take max_completion_tokens and only their default temperature
    if kind == "openai" and config.mode == "chat":
        params["max_completion_tokens"] = request.max_tokens
    else:
        params["max_tokens"] = request.max_tokens
    if not (kind == "openai" and config.reasoning_effort):
        params["temperature"] = request.temperature
    if request.top_p is not None:
        params["top_p"] = request.top_p
    if request.stop:
        params["stop"] = list(request.stop)
    if request.seed is not None:
        params["seed"] = request.seed
    if config.reasoning_effort:
        if config.mode == "chat":
            params["reasoning_effort"] = config.reasoning_effort
        else:
            extra["reasoning_effort"] = config.reasoning_effort
    if request.json_schema is not None:
        response_format = json_response_format(kind, request.json_schema)
        if config.mode == "chat":
            params["response_format"] = response_format
        else:  # only vLLM constrains the completions endpoint (check_supported refuses the others)
            extra["structured_outputs"] = {"json": request.json_schema}
    if request.grammar is not None:
        extra.update(grammar_extra(kind, request.grammar))
    if extra:
        params["extra_body"] = extra
    return params


def check_supported(config: BackendConfig, requests: Iterable[LLMRequest]) -> None:
    """Refuse constraints the server would ignore or reject: a misconfiguration, raised before any call."""
    kind = server_kind(config)
    if kind == "openai" and any(r.grammar for r in requests):
        raise ImproperlyConfigured("the OpenAI API has no grammar-constrained decoding; use a JSON schema")
    if config.mode == "generate" and kind != "vllm" and any(r.json_schema for r in requests):
        raise ImproperlyConfigured(
            f"{kind}'s completions endpoint ignores a JSON schema: use mode 'chat' for the judge"
        )


def json_response_format(kind: ServerKind, schema: dict[str, Any]) -> dict[str, Any]:
    if kind == "llama.cpp":  # llama.cpp's server rejects json_schema; it takes the schema with json_object
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": "judgment", "schema": schema, "strict": True}}


def grammar_extra(kind: ServerKind, grammar: str) -> dict[str, Any]:
    if kind == "llama.cpp":
        return {"grammar": grammar}
    return {"structured_outputs": {"grammar": grammar}}  # vLLM >= 0.12 (guided_grammar was removed)


def estimated_tokens(request: LLMRequest) -> int:
    """A cheap upper-ish estimate for the token budget: ~4 characters per prompt token + max_tokens."""
    return len(request.prompt) // 4 + request.max_tokens


@dataclass(frozen=True)
class Failure:
    message: str
    transient: bool
    retry_after_s: float | None = None
    status: int | None = None


def classify(exc: Exception) -> Failure:
    if isinstance(exc, openai.APITimeoutError):
        return Failure("request timed out", transient=True)
    if isinstance(exc, openai.APIConnectionError):
        return Failure(f"connection error: {exc.__cause__ or exc}", transient=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        transient = status in TRANSIENT_STATUSES or status >= 500
        return Failure(f"HTTP {status}: {exc.message}", transient, retry_after(exc.response.headers), status)
    return Failure(f"{type(exc).__name__}: {exc}", transient=False)


def retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date), if given."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return min(max(float(millis) / 1000, 0.0), MAX_RETRY_AFTER_S)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


class OpenAICompatibleBackend:
    def __init__(
        self, config: BackendConfig, *, backoff_base_s: float = 1.0, backoff_max_s: float = 60.0
    ) -> None:
        if config.max_concurrency < 1 or config.max_attempts < 1:
            raise ImproperlyConfigured("max_concurrency and max_attempts must be at least 1")
        self.config = config
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.limiter = RateLimiter(config.max_requests_per_minute, config.max_tokens_per_minute)
        key = api_key_for(config)
        self._clients = [
            openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=config.request_timeout_s)
            for url in config.servers
        ]
        self._turn = itertools.count()  # next() is atomic under the GIL: each request takes the next server

    def close(self) -> None:
        for client in self._clients:
            client.close()

    @property
    def _client(self) -> Any:
        """The next server's client: several servers (base_urls) are used in turn, one request each."""
        return self._clients[next(self._turn) % len(self._clients)]

    def run(
        self,
        requests: Sequence[LLMRequest] | Iterable[LLMRequest],
        on_result: OnResult,
        *,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        if isinstance(requests, Sequence):
            check_supported(self.config, requests)  # a lazy iterable is checked request by request
        stop = threading.Event()
        pending = iter(requests)
        in_flight: set[Future[LLMResult | None]] = set()
        workers = self.config.max_concurrency
        if isinstance(requests, Sized):  # any iterable works; a lazy one lets the caller build requests
            workers = max(1, min(workers, len(requests)))  # as slots free up, across its batches
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm") as pool:

            def fill() -> None:
                """Start requests until `workers` are in flight (asking should_stop before each)."""
                while not stop.is_set() and len(in_flight) < workers:
                    if should_stop():
                        stop.set()
                        return
                    request = next(pending, None)
                    if request is None:
                        return
                    check_supported(self.config, (request,))
                    in_flight.add(pool.submit(self._complete, request, stop))

            fill()
            while in_flight:
                done, in_flight = wait(in_flight, timeout=STOP_POLL_S, return_when=FIRST_COMPLETED)
                if not done and not stop.is_set() and should_stop():
                    stop.set()
                fill()  # before handing results over: the slots stay busy while the caller stores them
                for future in done:
                    result = future.result()
                    if result is not None:
                        on_result(result)

    def _complete(self, request: LLMRequest, stop: threading.Event) -> LLMResult | None:
        """One request with its retries (on a pool thread). None when it was never started (stopped)."""
        estimate = estimated_tokens(request)
        last: Failure | None = None
        for attempt in range(1, self.config.max_attempts + 1):
            if not self.limiter.acquire(estimate, stop):
                return self._stopped(request, attempt - 1, last)
            started = time.monotonic()
            try:
                response = self._send(request)
            except Exception as exc:  # every failure becomes a result; none escapes the pool
                self.limiter.correct(estimate, 0)
                last = classify(exc)
                if not last.transient:
                    return LLMResult(request.key, None, error=last.message, attempts=attempt)
                if attempt == self.config.max_attempts:
                    break
                delay = self._retry_delay(attempt, last)
                if last.status == 429 and last.retry_after_s is not None:
                    self.limiter.pause(delay)
                if stop.wait(delay):
                    return self._stopped(request, attempt, last)
                continue
            return self._result(request, response, estimate, attempt, time.monotonic() - started)
        assert last is not None
        return LLMResult(
            request.key,
            None,
            error=f"gave up after {self.config.max_attempts} attempts: {last.message}",
            transient=True,
            attempts=self.config.max_attempts,
        )

    def _send(self, request: LLMRequest) -> Any:
        params = request_params(self.config, request)
        if self.config.mode == "chat":
            return self._client.chat.completions.create(**params)
        return self._client.completions.create(**params)

    def _result(
        self, request: LLMRequest, response: Any, estimate: int, attempts: int, latency_s: float
    ) -> LLMResult:
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        completion_tokens = getattr(usage, "completion_tokens", None)
        if prompt_tokens is not None and completion_tokens is not None:
            self.limiter.correct(estimate, prompt_tokens + completion_tokens)
        if not response.choices:
            return LLMResult(request.key, None, error="the response has no choices", attempts=attempts)
        choice = response.choices[0]
        text = choice.message.content if self.config.mode == "chat" else choice.text
        return LLMResult(
            request.key,
            text or "",
            attempts=attempts,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=latency_s,
        )

    def _retry_delay(self, attempt: int, failure: Failure) -> float:
        if failure.retry_after_s is not None:
            return failure.retry_after_s
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)  # "equal jitter": spread retries, keep the growth

    @staticmethod
    def _stopped(request: LLMRequest, attempts: int, last: Failure | None) -> LLMResult | None:
        if attempts == 0:
            return None  # never started: no result, as the contract says
        reason = last.message if last else "stopped"
        return LLMResult(
            request.key, None, error=f"stopped before retrying: {reason}", transient=True, attempts=attempts
        )
