"""Generator and Judge rows made from configs (runnable from the app), for the run-trigger tests."""

from __future__ import annotations

from typing import Any

from h2e_site.llm.config import config_from_mapping
from judging.configs import generator_for_config, judge_for_config
from judging.models import Generator, Judge


def make_runnable_generator(*, model: str = "loopback/gen-model", **fields: Any) -> Generator:
    config = config_from_mapping(
        {
            "model": model,
            "backend": "openai",
            "provider": "openai",
            "base_url": "http://127.0.0.1:9/v1",
            **fields,
        },
        role="generator",
    )
    return generator_for_config(config)


def make_runnable_judge(*, model: str = "loopback/judge-model", **fields: Any) -> Judge:
    config = config_from_mapping(
        {
            "model": model,
            "backend": "openai",
            "provider": "openai",
            "base_url": "http://127.0.0.1:9/v1",
            **fields,
        },
        role="judge",
    )
    return judge_for_config(config)
