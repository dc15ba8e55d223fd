"""A mining run's config: backend and model per stage, prefilter thresholds, candidates per topic, seed,
prices. Written as YAML (configs/mining/*.yaml) or given as a mapping; stored resolved on the MiningRun.

    name: gpt-4.1 pilot
    candidates_per_topic: 500        # the first 500 documents of each topic, in import order (null: all)
    sample_candidates: false         # true: a sample of candidates_per_topic drawn with the seed instead
    seed: 0
    topics: [Health, Travel & Tourism]   # optional: only these topics
    max_document_chars: 60000        # optional: the document is cut to this many characters
    prefilter: {min_steps: 5, max_steps: 15, ngram_thresholds: {2: 0.40, 3: 0.35, 4: 0.30}}
    prices: {gpt-4.1: {input_per_million: 2.0, output_per_million: 8.0}}
    stages:
      default: {model: gpt-4.1, backend: openai, provider: openai, max_new_tokens: 2048}
      final_filter: {model: gpt-4.1-mini}           # merged over default
      filter: {prompt_path: prompts/my_filter.txt}   # e.g. a new prompt

Each LLM stage's block is a model config (h2e_site/llm/config.py: backend, provider, base_url,
base_url_env, api_key_env, temperature, max_new_tokens, rate limits, concurrency, json_schema...) whose
prompt_path defaults to the stage's prompts/mine_*.txt. Rate limits default to the reference's: 1,000
requests and 100,000 tokens per minute per stage (max_requests_per_minute, max_tokens_per_minute).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from h2e_site.llm.config import ConfigError, ModelConfig, config_from_mapping

from .models import Stage

LLM_STAGES: tuple[str, ...] = (
    Stage.EXTRACTION,
    Stage.FILTER,
    Stage.POSTPROCESS,
    Stage.RESOURCES,
    Stage.FINAL_FILTER,
)
STAGE_PROMPTS: dict[str, str] = {
    Stage.EXTRACTION: "prompts/mine_extraction.txt",
    Stage.FILTER: "prompts/mine_filter.txt",
    Stage.POSTPROCESS: "prompts/mine_postprocess.txt",
    Stage.RESOURCES: "prompts/mine_resources.txt",
    Stage.FINAL_FILTER: "prompts/mine_final_filter.txt",
}
DEFAULT_NGRAM_THRESHOLDS: dict[int, float] = {2: 0.40, 3: 0.35, 4: 0.30}
_TOP_KEYS = {
    "name",
    "candidates_per_topic",
    "sample_candidates",
    "seed",
    "topics",
    "max_document_chars",
    "prefilter",
    "prices",
    "stages",
}


@dataclass(frozen=True)
class PrefilterConfig:
    min_steps: int = 5  # the paper's default (the reference code's is 4)
    max_steps: int = 15
    ngram_thresholds: tuple[tuple[int, float], ...] = tuple(DEFAULT_NGRAM_THRESHOLDS.items())


@dataclass(frozen=True)
class Price:
    input_per_million: float = 0.0
    output_per_million: float = 0.0

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float:
        return (
            (prompt_tokens or 0) * self.input_per_million + (completion_tokens or 0) * self.output_per_million
        ) / 1e6


@dataclass(frozen=True)
class RunConfig:
    """A validated run config; `data` is the mapping it was read from (what the run stores)."""

    data: dict[str, Any]
    name: str
    candidates_per_topic: int | None
    sample_candidates: bool
    seed: int
    topics: tuple[str, ...] | None
    max_document_chars: int | None
    prefilter: PrefilterConfig
    prices: dict[str, Price]

    def stage_config(self, stage: str) -> ModelConfig:
        """The model config of an LLM stage: `stages.default` with `stages.<stage>` merged over it."""
        if stage not in LLM_STAGES:
            raise ValueError(f"{stage} is not an LLM stage")
        stages = self.data.get("stages") or {}
        mapping = {
            "prompt_path": STAGE_PROMPTS[stage],
            **(stages.get("default") or {}),
            **(stages.get(stage) or {}),
        }
        return config_from_mapping(mapping, role="judge", source=f"mining config stages.{stage}")

    def price_for(self, model: str) -> Price:
        return self.prices.get(model, Price())


def load_run_config(path: Path | str) -> RunConfig:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(str(path), "(file)", "no such file")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "(file)", f"not valid YAML: {exc}") from exc
    return run_config_from_mapping(data, source=str(path))


def run_config_from_mapping(data: Any, *, source: str = "<mining config>") -> RunConfig:
    """Validate a run config mapping; every LLM stage's model config is checked too."""
    if not isinstance(data, Mapping):
        raise ConfigError(source, "(top level)", "must be a mapping")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ConfigError(source, unknown[0], f"unknown field (known: {', '.join(sorted(_TOP_KEYS))})")
    data = dict(data)
    config = RunConfig(
        data=data,
        name=str(data.get("name") or "mining run"),
        candidates_per_topic=_optional_positive(data, "candidates_per_topic", source),
        sample_candidates=_boolean(data.get("sample_candidates", False), "sample_candidates", source),
        seed=_integer(data.get("seed", 0), "seed", source),
        topics=_topics(data.get("topics"), source),
        max_document_chars=_optional_positive(data, "max_document_chars", source),
        prefilter=_prefilter(data.get("prefilter") or {}, source),
        prices=_prices(data.get("prices") or {}, source),
    )
    _check_stages(data.get("stages"), source)
    for stage in LLM_STAGES:
        config.stage_config(stage)
    return config


def _integer(value: Any, name: str, source: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(source, name, f"must be an integer, got {value!r}")
    return value


def _boolean(value: Any, name: str, source: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(source, name, f"must be true or false, got {value!r}")
    return value


def _optional_positive(data: Mapping[str, Any], name: str, source: str) -> int | None:
    value = data.get(name)
    if value is None:
        return None
    if _integer(value, name, source) < 1:
        raise ConfigError(source, name, f"must be a positive integer, got {value!r}")
    return int(value)


def _topics(value: Any, source: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(t, str) and t.strip() for t in value):
        raise ConfigError(source, "topics", "must be a list of topic names")
    return tuple(t.strip() for t in value)


def _prefilter(block: Any, source: str) -> PrefilterConfig:
    if not isinstance(block, Mapping):
        raise ConfigError(source, "prefilter", "must be a mapping (min_steps, max_steps, ngram_thresholds)")
    unknown = sorted(set(block) - {"min_steps", "max_steps", "ngram_thresholds"})
    if unknown:
        raise ConfigError(source, f"prefilter.{unknown[0]}", "unknown key")
    min_steps = _integer(block.get("min_steps", 5), "prefilter.min_steps", source)
    max_steps = _integer(block.get("max_steps", 15), "prefilter.max_steps", source)
    if not 1 <= min_steps <= max_steps:
        raise ConfigError(
            source, "prefilter", f"need 1 <= min_steps <= max_steps, got {min_steps}, {max_steps}"
        )
    thresholds = dict(DEFAULT_NGRAM_THRESHOLDS)
    for n, limit in (block.get("ngram_thresholds") or {}).items():
        if (
            not str(n).isdigit()
            or int(n) < 1
            or isinstance(limit, bool)
            or not isinstance(limit, int | float)
        ):
            raise ConfigError(source, f"prefilter.ngram_thresholds.{n}", "must map n (>= 1) to a rate")
        thresholds[int(n)] = float(limit)
    return PrefilterConfig(min_steps, max_steps, tuple(sorted(thresholds.items())))


def _prices(block: Any, source: str) -> dict[str, Price]:
    if not isinstance(block, Mapping):
        raise ConfigError(
            source, "prices", "must map a model name to {input_per_million, output_per_million}"
        )
    prices = {}
    for model, price in block.items():
        if not isinstance(price, Mapping) or set(price) - {"input_per_million", "output_per_million"}:
            raise ConfigError(source, f"prices.{model}", "expected {input_per_million, output_per_million}")
        values = {key: float(value) for key, value in price.items()}
        prices[str(model)] = Price(**values)
    return prices


def _check_stages(block: Any, source: str) -> None:
    if block is None:
        raise ConfigError(source, "stages", "required: at least stages.default with a model")
    if not isinstance(block, Mapping):
        raise ConfigError(source, "stages", "must be a mapping of stage name to a model config")
    unknown = sorted(set(block) - {"default", *LLM_STAGES})
    if unknown:
        raise ConfigError(
            source, f"stages.{unknown[0]}", f"unknown stage (known: default, {', '.join(LLM_STAGES)})"
        )
