"""The reward config (configs/rewards/*.yaml): the shipped ones load, defaults are the paper's, and every
mistake is named by file and field; a judge config's several servers (base_urls) are checked the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from h2e_site.llm.config import ConfigError, config_from_mapping
from judging.training.reward_config import load_reward_config, reward_config_names

JUDGE = {"model": "m", "backend": "openai", "provider": "vllm", "base_url": "http://127.0.0.1:9/v1"}


def test_the_shipped_reward_configs_load_with_the_papers_defaults() -> None:
    assert {"smollm2-local", "how2judge-servers"} <= set(reward_config_names())
    config = load_reward_config("smollm2-local")
    assert (config.tau, config.alpha, config.tokenizer, config.answer_after) == (
        0.2,
        5.0,
        "o200k_base",
        "</think>",
    )
    assert config.weights == {"how2score": 1.0, "format": 1.0, "length": 1.0}
    servers = load_reward_config("how2judge-servers").judge.backend_config()
    assert servers.servers == ("http://127.0.0.1:8101/v1", "http://127.0.0.1:8102/v1")


@pytest.mark.parametrize(
    ("content", "field", "words"),
    [
        ({}, "judge", "required"),
        ({"judge": JUDGE, "length": {"tau": 1.0}}, "length.tau", "[0, 1)"),
        ({"judge": JUDGE, "length": {"alpha": -1}}, "length.alpha", "must lie in"),
        ({"judge": JUDGE, "length": {"tokenizer": "gpt2"}}, "length.tokenizer", "o200k_base"),
        ({"judge": JUDGE, "length": {"beta": 1}}, "length.beta", "unknown"),
        ({"judge": JUDGE, "weights": {"vibes": 1}}, "weights.vibes", "unknown component"),
        ({"judge": JUDGE, "weights": {"format": "lots"}}, "weights.format", "a number"),
        ({"judge": JUDGE, "time_budget_s": 600}, "time_budget_s", "must lie in"),
        ({"judge": JUDGE, "answer_after": 3}, "answer_after", "a string"),
        ({"judge": {**JUDGE, "backend": "vllm"}}, "judge", "over HTTP"),
        ({"judge": JUDGE, "judges": 2}, "judges", "unknown field"),
    ],
)
def test_a_mistake_is_named_by_file_and_field(
    settings: Any, tmp_path: Path, content: dict[str, Any], field: str, words: str
) -> None:
    settings.H2E_REWARD_CONFIG_DIR = str(tmp_path)
    (tmp_path / "broken.yaml").write_text(yaml.safe_dump(content), encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_reward_config("broken")
    assert (
        raised.value.field_name == field and words in str(raised.value) and "broken.yaml" in str(raised.value)
    )


def test_an_unknown_reward_is_named_with_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"no reward config 'nonesuch'.*smollm2-local"):
        load_reward_config("nonesuch")


@pytest.mark.parametrize(
    ("urls", "field"),
    [(["ftp://x/v1"], "base_urls[0]"), (["http://a/v1", 3], "base_urls[1]"), ("http://a/v1", "base_urls")],
)
def test_several_judge_servers_are_checked(urls: Any, field: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config_from_mapping({**JUDGE, "base_url": None, "base_urls": urls}, role="judge")
    assert raised.value.field_name == field


def test_one_server_or_several_not_both() -> None:
    with pytest.raises(ConfigError, match="not both"):
        config_from_mapping({**JUDGE, "base_urls": ["http://a/v1"]}, role="judge")
    stored = config_from_mapping(
        {**JUDGE, "base_url": None, "base_urls": ["http://a/v1", "http://b/v1"]}, role="judge"
    )
    again = config_from_mapping(stored.as_json() | {"role": "judge"}, role="judge")
    assert again.backend_config().servers == ("http://a/v1", "http://b/v1")
