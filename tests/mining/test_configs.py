"""The shipped mining configs load, and say what the rate limit is; config fields are checked by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from h2e_site.llm.config import ConfigError, ModelConfig
from mining.config import LLM_STAGES, load_run_config, run_config_from_mapping

CONFIGS = sorted((Path(settings.BASE_DIR) / "configs" / "mining").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_it_loads_each_shipped_config_and_names_the_default_token_limit(path: Path) -> None:
    config = load_run_config(path)
    assert all(config.stage_config(stage).max_tokens_per_minute for stage in LLM_STAGES)
    assert ModelConfig.max_tokens_per_minute == 100_000
    assert "100,000" in path.read_text(encoding="utf-8")


def test_it_takes_the_first_candidates_unless_asked_to_sample() -> None:
    stages = {"default": {"model": "m", "backend": "openai", "provider": "openai"}}
    assert not run_config_from_mapping({"stages": stages}).sample_candidates
    assert run_config_from_mapping({"stages": stages, "sample_candidates": True}).sample_candidates
    with pytest.raises(ConfigError, match="sample_candidates: must be true or false, got 'yes'"):
        run_config_from_mapping({"stages": stages, "sample_candidates": "yes"})
