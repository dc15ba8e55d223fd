"""What a reward is: a YAML file in configs/rewards/ (like a judge's), read and checked here.

    judge: configs/judges/smollm2-local.yaml   # the How2Score judge: a judge config (an HTTP server)
    weights: {how2score: 1.0, format: 1.0, length: 1.0}   # total: the weighted sum of those asked for
    length: {tau: 0.2, alpha: 5.0, tokenizer: o200k_base}  # §E.4's band, its decay, the fixed tokenizer
    answer_after: "</think>"   # a thinking model's answer: the text after the last marker ("" = all)
    time_budget_s: 20          # a batch answers within this; items not judged by then get an error

Every field but `judge` has the paper's default. A config error names the file and the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

from h2e_site.llm.config import ConfigError, ModelConfig, config_from_mapping, load_config

from ..rewards import ALPHA, TAU, THINK_END

COMPONENTS = ("how2score", "format", "length")
TOKENIZERS = ("o200k_base",)  # bundled with the studio (judging.metrics): nothing is downloaded at run time
MAX_TIME_BUDGET_S = 25.0  # below gunicorn's 30 s timeout (docker-compose.yml): longer work is a job
FIELDS = {"judge", "weights", "length", "answer_after", "time_budget_s"}


@dataclass(frozen=True)
class RewardConfig:
    name: str
    judge: ModelConfig
    weights: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COMPONENTS, 1.0))
    tau: float = TAU
    alpha: float = ALPHA
    tokenizer: str = "o200k_base"
    answer_after: str = THINK_END
    time_budget_s: float = 20.0

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "judge": self.judge.as_json()}


def reward_config_dir() -> Path:
    """configs/rewards/ (settings.H2E_REWARD_CONFIG_DIR)."""
    return Path(settings.H2E_REWARD_CONFIG_DIR)


def reward_config_names() -> list[str]:
    if not reward_config_dir().is_dir():
        return []
    return sorted(path.stem for path in reward_config_dir().glob("*.yaml"))


def load_reward_config(name: str) -> RewardConfig:
    """configs/rewards/<name>.yaml; ConfigError naming the file (or the name, when there is no such file)."""
    path = reward_config_dir() / f"{name}.yaml"
    if name not in reward_config_names():
        known = ", ".join(reward_config_names()) or "none"
        raise ConfigError("reward", "name", f"no reward config {name!r} in configs/rewards/ (known: {known})")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "(file)", f"not valid YAML: {exc}") from exc
    return reward_config_from_mapping(data, name=name, source=str(path))


def reward_config_from_mapping(data: Any, *, name: str, source: str) -> RewardConfig:
    if not isinstance(data, Mapping):
        raise ConfigError(source, "(top level)", "must be a mapping of field: value")
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise ConfigError(source, unknown[0], f"unknown field (known: {', '.join(sorted(FIELDS))})")
    length = _mapping(data, "length", source)
    unknown = sorted(set(length) - {"tau", "alpha", "tokenizer"})
    if unknown:
        raise ConfigError(source, f"length.{unknown[0]}", "unknown field (known: alpha, tau, tokenizer)")
    return RewardConfig(
        name=name,
        judge=_judge(data, source),
        weights=_weights(data, source),
        tau=_number(length, "tau", TAU, source, low=0.0, high=1.0, high_open=True, prefix="length."),
        alpha=_number(length, "alpha", ALPHA, source, low=0.0, high=1000.0, prefix="length."),
        tokenizer=_tokenizer(length, source),
        answer_after=_answer_after(data, source),
        time_budget_s=_number(data, "time_budget_s", 20.0, source, low=0.1, high=MAX_TIME_BUDGET_S),
    )


def _mapping(data: Mapping[str, Any], name: str, source: str) -> Mapping[str, Any]:
    value = data.get(name) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(source, name, "must be a mapping")
    return value


def _judge(data: Mapping[str, Any], source: str) -> ModelConfig:
    value = data.get("judge")
    if isinstance(value, Mapping):
        judge = config_from_mapping(value, role="judge", source=f"{source} (judge)")
    elif isinstance(value, str) and value.strip():
        path = Path(value)
        judge = load_config(path if path.is_absolute() else Path(settings.BASE_DIR) / path, role="judge")
    else:
        raise ConfigError(source, "judge", "required: a judge config file (configs/judges/...) or a mapping")
    if judge.backend == "vllm":
        raise ConfigError(
            source,
            "judge",
            "the reward service asks its judge over HTTP: name an OpenAI-compatible server "
            "(backend openai or local; for vLLM, `vllm serve` and base_url or base_urls), "
            "not the offline engine",
        )
    return judge


def _weights(data: Mapping[str, Any], source: str) -> dict[str, float]:
    given = _mapping(data, "weights", source)
    unknown = sorted(set(given) - set(COMPONENTS))
    if unknown:
        raise ConfigError(
            source, f"weights.{unknown[0]}", f"unknown component (known: {', '.join(COMPONENTS)})"
        )
    return {
        name: _number(given, name, 1.0, source, low=-1000.0, high=1000.0, prefix="weights.")
        for name in COMPONENTS
    }


def _number(
    data: Mapping[str, Any],
    name: str,
    default: float,
    source: str,
    *,
    low: float,
    high: float,
    high_open: bool = False,
    prefix: str = "",
) -> float:
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(source, prefix + name, f"must be a number, got {value!r}")
    if value < low or value > high or (high_open and value == high):
        bound = f"[{low:g}, {high:g}{')' if high_open else ']'}"
        raise ConfigError(source, prefix + name, f"must lie in {bound}, got {value!r}")
    return float(value)


def _tokenizer(length: Mapping[str, Any], source: str) -> str:
    value = length.get("tokenizer", "o200k_base")
    if value not in TOKENIZERS:
        raise ConfigError(
            source, "length.tokenizer", f"must be one of {', '.join(TOKENIZERS)}, got {value!r}"
        )
    return str(value)


def _answer_after(data: Mapping[str, Any], source: str) -> str:
    value = data.get("answer_after", THINK_END)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConfigError(source, "answer_after", f'must be a string ("" for the whole text), got {value!r}')
    return value
