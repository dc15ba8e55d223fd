"""One request builder under a config's decoding (h2e_site.llm.config.decoding_request), the stop rule once:
every generation, judgment, pairwise verdict and answer request carries the config's max_new_tokens,
temperature and stop, except that a vLLM config whose sampling_kwargs set stop leaves it to the engine."""

from __future__ import annotations

from typing import Any

import pytest

from h2e_site.jobs.answering import constrained_request
from h2e_site.llm.base import LLMRequest
from h2e_site.llm.config import ModelConfig, Role, config_from_mapping, decoding_request
from judging.pairwise_prompt import pairwise_request
from judging.prompting import generation_request, judge_request

VLLM_STOP = {"sampling_kwargs": {"stop": ["###"]}}


def _config(role: Role = "generator", **fields: Any) -> ModelConfig:
    return config_from_mapping({"model": "m", "provider": "p", **fields}, role=role)


@pytest.mark.parametrize(
    ("fields", "stop"),
    [
        ({"prompt_style": "base"}, ("\n\n",)),  # a base model stops at a blank line
        ({"prompt_style": "inst"}, ()),
        ({"backend": "vllm", "prompt_style": "base", "vllm": VLLM_STOP}, ()),  # vLLM reads its own stop
        ({"prompt_style": "inst", "vllm": VLLM_STOP}, ("###",)),  # another backend is sent the configured one
    ],
)
def test_it_carries_the_configs_stop_unless_vllm_reads_it_itself(
    fields: dict[str, Any], stop: tuple[str, ...]
) -> None:
    config = _config(**fields, temperature=0.7, max_new_tokens=99)
    request = decoding_request(config, key="k", prompt="p")
    assert request == LLMRequest(key="k", prompt="p", max_tokens=99, temperature=0.7, stop=stop)
    assert config.request_stop == stop


@pytest.mark.parametrize("backend", ["openai", "vllm", "local"])
def test_every_request_builder_decodes_as_the_config_says(backend: str) -> None:
    fields = {"backend": backend, "vllm": VLLM_STOP, "max_new_tokens": 77, "temperature": 0.3}
    generator, judge = _config(prompt_style="base", **fields), _config("judge", **fields)
    requests = [
        (generator, generation_request(generator, key="k", prompt="p", n_steps=2)),
        (judge, judge_request(judge, key="k", prompt="p", n_l1=1, n_l2=2)),
        (judge, pairwise_request(judge, key="k", prompt="p")),
        (judge, constrained_request(judge, key="k", prompt="p", grammar='root ::= "A"', schema={})),
    ]
    for config, request in requests:
        expected = decoding_request(config, key="k", prompt="p")
        assert (request.max_tokens, request.temperature, request.stop) == (
            expected.max_tokens,
            expected.temperature,
            expected.stop,
        )
