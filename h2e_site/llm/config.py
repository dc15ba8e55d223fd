"""Model configs: which model, how to reach it, how to decode, how hard to push, and which prompt file.

A config is a YAML mapping (configs/generators/*.yaml, configs/judges/*.yaml, a mining run's stages block),
validated here into a ModelConfig; `backend_config()` turns it into the BackendConfig a backend runs with.
The prompt is the repo's prompts/*.txt for the role and prompt_style, unless `prompt_path` names another file.

Backends: openai | vllm | local. The reference CLI's `deluge` (its OpenAI-style API client) is accepted as
openai; `id_backend` gives the reference's name for run identities (judging/configs.py hashes them):

    our backend   id payload backend
    openai        deluge   (the reference's API backend)
    vllm          vllm
    local         local    (no reference equivalent)
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlparse

import yaml
from django.conf import settings

from .base import BackendConfig, BackendName, LLMRequest
from .prompts import GENERATION_PROMPTS, JUDGE_PROMPT, PROMPTS_DIR, prompt_sha256, read_prompt

BACKEND_ALIASES: dict[str, BackendName] = {
    "openai": "openai",
    "deluge": "openai",
    "vllm": "vllm",
    "local": "local",
}
ID_BACKEND: dict[str, str] = {"openai": "deluge", "vllm": "vllm", "local": "local"}
VLLM_KEYS = {"mode", "engine_kwargs", "sampling_kwargs", "chat_template_kwargs"}
BASE_MODEL_STOP = "\n\n"
Role = Literal["generator", "judge"]

CONFIG_FIELDS = {
    "model",
    "backend",
    "provider",
    "base_url",
    "base_urls",
    "base_url_env",
    "api_key_env",
    "prompt_style",
    "prompt_path",
    "temperature",
    "max_new_tokens",
    "max_requests_per_minute",
    "max_tokens_per_minute",
    "max_concurrency",
    "request_timeout_s",
    "max_attempts",
    "reasoning_effort",
    "json_schema",
    "is_demo_model",
    "run_name",
    "vllm",
}


class ConfigError(ValueError):
    """A config that cannot be used; the message names the file and the field."""

    def __init__(self, source: str, field_name: str, message: str) -> None:
        super().__init__(f"{source}: {field_name}: {message}")
        self.source = source
        self.field_name = field_name


@dataclass(frozen=True)
class ModelConfig:
    """A resolved generator or judge config (defaults filled, names normalised)."""

    role: Role
    model: str
    backend: BackendName
    provider: str
    prompt_style: Literal["base", "inst"]
    prompt_path: str  # relative to the repo root when inside it
    temperature: float = 0.0
    max_new_tokens: int = 4096
    max_requests_per_minute: int = 1_000
    max_tokens_per_minute: int = 100_000
    reasoning_effort: str | None = None
    vllm: dict[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    base_urls: tuple[str, ...] = ()  # several servers of the model, used in turn (llm.base.BackendConfig)
    base_url_env: str | None = None  # an env var that, when set, overrides base_url (e.g. the local server)
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = 8
    request_timeout_s: float = 120.0
    max_attempts: int = 6
    json_schema: bool = False  # judge: constrain the output to the judge JSON schema
    is_demo_model: bool = False
    run_name: str = ""

    @property
    def id_backend(self) -> str:
        return ID_BACKEND[self.backend]

    @property
    def prompt_file(self) -> Path:
        path = Path(self.prompt_path)
        return path if path.is_absolute() else Path(settings.BASE_DIR) / path

    def prompt_text(self) -> str:
        """The prompt file's text as it is now (a row made from this config keeps its own copy)."""
        return read_prompt(self.prompt_file)

    @property
    def is_base_model(self) -> bool:
        return self.role == "generator" and self.prompt_style == "base"

    @property
    def mode(self) -> Literal["chat", "generate"]:
        """chat (one user message) or generate (raw completion): vllm.mode, else by prompt style."""
        mode = self.vllm.get("mode")
        if mode in ("chat", "generate"):
            return cast(Literal["chat", "generate"], mode)
        return "generate" if self.is_base_model else "chat"

    @property
    def stop(self) -> tuple[str, ...]:
        """Base models stop at a blank line (the reference's vllm configs say so; we make it the default)."""
        configured = self.vllm.get("sampling_kwargs", {}).get("stop")
        if configured:
            return tuple([configured] if isinstance(configured, str) else configured)
        return (BASE_MODEL_STOP,) if self.is_base_model else ()

    @property
    def request_stop(self) -> tuple[str, ...]:
        """The stop a request carries (decoding_request): `stop`, except on vLLM when its sampling_kwargs set
        one, which the engine takes from there itself (not passed twice)."""
        if self.backend == "vllm" and "stop" in self.vllm.get("sampling_kwargs", {}):
            return ()
        return self.stop

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def backend_config(self) -> BackendConfig:
        base_url = (os.environ.get(self.base_url_env) if self.base_url_env else None) or self.base_url
        return BackendConfig(
            backend=self.backend,
            model=self.model,
            provider=self.provider,
            base_url=base_url,
            base_urls=self.base_urls,
            api_key_env=self.api_key_env,
            mode=self.mode,
            max_concurrency=self.max_concurrency,
            max_requests_per_minute=self.max_requests_per_minute,
            max_tokens_per_minute=self.max_tokens_per_minute,
            request_timeout_s=self.request_timeout_s,
            max_attempts=self.max_attempts,
            reasoning_effort=self.reasoning_effort,
            engine_kwargs=dict(self.vllm.get("engine_kwargs", {})),
            sampling_kwargs=dict(self.vllm.get("sampling_kwargs", {})),
            chat_template_kwargs=dict(self.vllm.get("chat_template_kwargs", {})),
        )


def load_config(path: Path | str, *, role: Role) -> ModelConfig:
    """Read and validate a generator or judge YAML file."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise ConfigError(source, "(file)", "no such file")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(source, "(file)", f"not valid YAML: {exc}") from exc
    return config_from_mapping(data, role=role, source=source)


def config_from_mapping(data: Any, *, role: Role, source: str = "<config>") -> ModelConfig:
    """Validate a config mapping (a YAML file's content, or a row's stored .config)."""
    if not isinstance(data, Mapping):
        raise ConfigError(source, "(top level)", "must be a mapping of field: value")
    unknown = sorted(set(data) - CONFIG_FIELDS - {"role"})
    if unknown:
        raise ConfigError(source, unknown[0], f"unknown field (known: {', '.join(sorted(CONFIG_FIELDS))})")
    reader = _Reader(data, source)
    model = reader.text("model", required=True)
    backend = _backend(reader)
    provider = reader.text("provider") or None
    if provider is None:
        if backend == "openai":
            raise ConfigError(source, "provider", "required for backend openai/deluge (e.g. openai)")
        provider = "local"
    prompt_style = _prompt_style(reader, role)
    vllm = _vllm_block(reader)
    return ModelConfig(
        role=role,
        model=model,
        backend=backend,
        provider=provider,
        prompt_style=prompt_style,
        prompt_path=_prompt_path(reader, role, prompt_style),
        temperature=reader.number("temperature", 0.0, minimum=0.0),
        max_new_tokens=reader.integer("max_new_tokens", 4096),
        max_requests_per_minute=reader.integer("max_requests_per_minute", 1_000),
        max_tokens_per_minute=reader.integer("max_tokens_per_minute", 100_000),
        reasoning_effort=reader.text("reasoning_effort") or None,
        vllm=vllm,
        base_url=reader.text("base_url") or None,
        base_urls=_base_urls(reader),
        base_url_env=reader.text("base_url_env") or None,
        api_key_env=reader.text("api_key_env") or "OPENAI_API_KEY",
        max_concurrency=reader.integer("max_concurrency", 8),
        request_timeout_s=reader.number("request_timeout_s", 120.0, minimum=0.001),
        max_attempts=reader.integer("max_attempts", 6),
        json_schema=reader.boolean("json_schema", backend == "local"),
        is_demo_model=reader.boolean("is_demo_model", False),
        run_name=reader.text("run_name"),
    )


class _Reader:
    def __init__(self, data: Mapping[str, Any], source: str) -> None:
        self.data = data
        self.source = source

    def error(self, name: str, message: str) -> ConfigError:
        return ConfigError(self.source, name, message)

    def text(self, name: str, *, required: bool = False) -> str:
        value = self.data.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                raise self.error(name, "required (a non-empty string)")
            return ""
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise self.error(name, f"must be a string, got {type(value).__name__}")
        return str(value).strip()

    def number(self, name: str, default: float, *, minimum: float) -> float:
        value = self.data.get(name, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(name, f"must be a number, got {value!r}")
        if value < minimum:
            raise self.error(name, f"must be >= {minimum}, got {value!r}")
        return float(value)

    def integer(self, name: str, default: int) -> int:
        value = self.data.get(name, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.error(name, f"must be a positive integer, got {value!r}")
        return value

    def boolean(self, name: str, default: bool) -> bool:
        value = self.data.get(name, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(name, f"must be true or false, got {value!r}")
        return value


def _backend(reader: _Reader) -> BackendName:
    name = (reader.text("backend") or "openai").lower()
    if name not in BACKEND_ALIASES:
        raise reader.error("backend", f"unknown backend {name!r} (expected openai, vllm, local or deluge)")
    return BACKEND_ALIASES[name]


def _prompt_style(reader: _Reader, role: Role) -> Literal["base", "inst"]:
    style = (reader.text("prompt_style") or "inst").lower()
    if style not in GENERATION_PROMPTS:
        raise reader.error("prompt_style", f"must be base or inst, got {style!r}")
    if role == "judge" and style != "inst":
        raise reader.error("prompt_style", "a judge is an instruct (chat) model: use inst or leave it out")
    return cast(Literal["base", "inst"], style)


def _prompt_path(reader: _Reader, role: Role, prompt_style: str) -> str:
    given = reader.text("prompt_path")
    name = JUDGE_PROMPT if role == "judge" else GENERATION_PROMPTS[prompt_style]
    path = Path(given) if given else PROMPTS_DIR / name
    resolved = path if path.is_absolute() else Path(settings.BASE_DIR) / path
    if not resolved.is_file():
        raise reader.error("prompt_path", f"no such prompt file: {resolved}")
    try:
        return str(resolved.resolve().relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:
        return str(resolved.resolve())


def _base_urls(reader: _Reader) -> tuple[str, ...]:
    """`base_urls`: a list of at least one http(s) URL, or absent; not with `base_url`."""
    urls = reader.data.get("base_urls")
    if urls is None or (isinstance(urls, list | tuple) and not urls):  # a stored config says [] for none
        return ()
    if reader.data.get("base_url"):
        raise reader.error("base_urls", "give base_url (one server) or base_urls (several), not both")
    if not isinstance(urls, list | tuple):
        raise reader.error("base_urls", "must be a list of server URLs")
    for index, url in enumerate(urls):
        parsed = urlparse(url) if isinstance(url, str) else None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise reader.error(f"base_urls[{index}]", f"must be an http(s) URL, got {url!r}")
    return tuple(urls)


def _vllm_block(reader: _Reader) -> dict[str, Any]:
    block = reader.data.get("vllm")
    if block is None:
        return {}
    if not isinstance(block, Mapping):
        raise reader.error(
            "vllm", "must be a mapping (mode, engine_kwargs, sampling_kwargs, chat_template_kwargs)"
        )
    unknown = sorted(set(block) - VLLM_KEYS)
    if unknown:
        raise reader.error(f"vllm.{unknown[0]}", f"unknown key (known: {', '.join(sorted(VLLM_KEYS))})")
    mode = block.get("mode")
    if mode is not None and mode not in ("chat", "generate"):
        raise reader.error("vllm.mode", f"must be chat or generate, got {mode!r}")
    for key in VLLM_KEYS - {"mode"}:
        if block.get(key) is not None and not isinstance(block[key], Mapping):
            raise reader.error(f"vllm.{key}", "must be a mapping")
    return {key: (dict(value) if isinstance(value, Mapping) else value) for key, value in block.items()}


def config_identity(config: ModelConfig, *, output: str, with_prompt_style: bool = False) -> dict[str, Any]:
    """The fields that make a configured model what it is, for the ids of the rows that run it (step-type
    classifiers, goal-step answerers): backend (the reference's name), provider, model, temperature,
    max_new_tokens, reasoning_effort, vLLM overrides, and how its output is held (`output`); with the prompt
    style where the prompt depends on it. Operational fields (URL, concurrency, limits) are not identity."""
    identity: dict[str, Any] = {
        "backend": config.id_backend,
        "provider": config.provider,
        "model": config.model,
        "temperature": float(config.temperature),
        "max_new_tokens": int(config.max_new_tokens),
        "reasoning_effort": config.reasoning_effort,
        "vllm_overrides": dict(config.vllm or {}),
        "output": output,
    }
    if with_prompt_style:
        identity["prompt_style"] = config.prompt_style
    return identity


def decoding_request(
    config: ModelConfig,
    *,
    key: str,
    prompt: str,
    grammar: str | None = None,
    json_schema: dict[str, Any] | None = None,
) -> LLMRequest:
    """One prompt under the config's decoding (max_new_tokens, temperature, its request_stop), held to a
    GBNF `grammar` (the embedded model) or a `json_schema` when given. The generation, judge, pairwise and
    answering requests (judging/prompting.py, judging/pairwise_prompt.py, h2e_site/jobs/answering.py) are
    built here; a mining stage's request (mining/stages.py) carries no stop and is built there."""
    return LLMRequest(
        key=key,
        prompt=prompt,
        max_tokens=config.max_new_tokens,
        temperature=config.temperature,
        stop=config.request_stop,
        grammar=grammar,
        json_schema=json_schema,
    )


def hashed_id(payload: Mapping[str, Any], prompts: Mapping[str, str]) -> str:
    """The first 12 hex of SHA-256 over the canonical JSON of `payload` plus the SHA-256 of each prompt
    (under "prompts_sha256"): an id that changes with the model's identity and with any prompt's text."""
    full = {
        **payload,
        "prompts_sha256": {name: prompt_sha256(text) for name, text in sorted(prompts.items())},
    }
    blob = json.dumps(full, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]
