"""The one small interface every LLM backend implements.

A caller (the generation or judging service) builds LLMRequests, hands them to a backend's `run`, and
receives each LLMResult through `on_result` as soon as it is ready, so results are committed as they arrive
rather than at the end of a batch. Backends never raise for a single failed request: they retry what is
transient up to their bound and then report the request as failed (error set, `transient` saying whether a
later retry could succeed). They raise only for misconfiguration (e.g. vllm not installed).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

BackendName = Literal["openai", "vllm", "local"]


@dataclass(frozen=True)
class BackendConfig:
    """How to reach a model. Built from a generator/judge YAML config (judging/configs.py)."""

    backend: BackendName
    model: str
    provider: str | None = None
    base_url: str | None = None  # openai: None = api.openai.com; local: the embedded server's URL
    # Several servers of one model (e.g. vLLM replicas): requests go to each in turn, and max_concurrency is
    # the total in flight across them. Empty: the one base_url.
    base_urls: tuple[str, ...] = ()
    api_key_env: str = "OPENAI_API_KEY"  # the env var holding the key (never the key itself)
    mode: Literal["chat", "generate"] = "chat"  # chat: one user message; generate: raw completion
    max_concurrency: int = 8
    max_requests_per_minute: int | None = None
    max_tokens_per_minute: int | None = None
    request_timeout_s: float = 120.0
    max_attempts: int = 6
    reasoning_effort: str | None = None
    # vLLM offline engine (backend "vllm"): forwarded to vllm.LLM(**engine_kwargs),
    # SamplingParams(**sampling_kwargs)
    # and llm.chat(chat_template_kwargs=...).
    engine_kwargs: dict[str, Any] = field(default_factory=dict)
    sampling_kwargs: dict[str, Any] = field(default_factory=dict)
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def servers(self) -> tuple[str | None, ...]:
        """The URLs requests go to in turn: base_urls, else the one base_url (None: api.openai.com)."""
        return self.base_urls or (self.base_url,)


@dataclass(frozen=True)
class LLMRequest:
    """One prompt. `key` lets the caller match the result (e.g. the Generation or Judgment it is for)."""

    key: str
    prompt: str
    max_tokens: int
    temperature: float = 0.0
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    json_schema: dict[str, Any] | None = None  # constrain the output to this JSON schema (judge)
    grammar: str | None = None  # GBNF grammar (llama.cpp), e.g. exactly n numbered steps (generation)
    seed: int | None = None


@dataclass(frozen=True)
class LLMResult:
    key: str
    text: str | None  # the raw completion (None when the request failed)
    error: str = ""  # why it failed after the bounded retries ("" on success)
    transient: bool = False  # the failure was transient (429/5xx/timeout/connection): worth retrying later
    attempts: int = 1
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0  # wall time spent waiting on the model for the successful attempt

    @property
    def ok(self) -> bool:
        return self.text is not None and not self.error


OnResult = Callable[[LLMResult], None]


class LLMBackend(Protocol):
    config: BackendConfig

    def run(
        self,
        requests: Iterable[LLMRequest],
        on_result: OnResult,
        *,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        """Run every request (concurrently where the backend can), calling on_result once per request
        as it completes, from the calling thread. `requests` may be a lazy iterator: it is consumed as
        the backend has room, so a caller can stream a whole job through one call. Stops starting new
        requests once should_stop() is true (cancellation); requests not started get no result.
        should_stop() is also called at least once a second while requests are in flight."""
        ...

    def close(self) -> None: ...


PLACEHOLDER_API_KEY = "not-needed"  # local servers ignore the key; the client insists on one


def is_openai_api(base_url: str | None) -> bool:
    return base_url is None or urlparse(base_url).hostname == "api.openai.com"


def api_key_for(config: BackendConfig) -> str:
    """The key a backend sends: the environment variable the config names, a placeholder for a local server;
    ImproperlyConfigured when the OpenAI API's key is not set. Here, not beside the HTTP client, so that a
    form can check a config without importing `openai` at start-up."""
    key = os.environ.get(config.api_key_env, "")
    if key:
        return key
    if any(is_openai_api(url) for url in config.servers):
        raise ImproperlyConfigured(
            f"the OpenAI API needs a key: set the environment variable {config.api_key_env} "
            f"(named by api_key_env in the config for model {config.model!r})"
        )
    return PLACEHOLDER_API_KEY
