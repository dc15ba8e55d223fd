"""The vLLM offline backend, as far as it can be tested without vllm and a GPU: the clear error when vllm is
absent and the mapping of a request onto SamplingParams. The engine path itself runs only on a GPU worker."""

from __future__ import annotations

import importlib.util

import pytest
from django.core.exceptions import ImproperlyConfigured

from h2e_site.llm.backends import backend_from_config
from h2e_site.llm.base import BackendConfig, LLMRequest
from h2e_site.llm.vllm_offline import sampling_spec

CONFIG = BackendConfig(
    backend="vllm", model="Qwen/Qwen3-8B", mode="chat", sampling_kwargs={"top_k": 20, "temperature": 0.6}
)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_it_says_how_to_install_vllm_when_it_is_absent() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"pip install -e '\.\[vllm\]'.*`gpu` queue"):
        backend_from_config(CONFIG)


def test_it_maps_a_request_onto_sampling_params() -> None:
    request = LLMRequest(key="g1", prompt="p", max_tokens=512, top_p=0.9, stop=("\n\n",), seed=7)
    spec = sampling_spec(CONFIG, request)
    assert spec.kwargs == {
        "temperature": 0.6,  # the config's override wins over the request's 0.0
        "max_tokens": 512,
        "top_p": 0.9,
        "stop": ["\n\n"],
        "seed": 7,
        "top_k": 20,
    }
    assert spec.structured is None


def test_it_constrains_the_judge_to_its_schema_without_stop_strings() -> None:
    schema = {"type": "object"}
    spec = sampling_spec(
        CONFIG, LLMRequest(key="j", prompt="p", max_tokens=64, stop=("}",), json_schema=schema)
    )
    assert spec.structured == {"json": schema}
    assert "stop" not in spec.kwargs


def test_it_passes_a_grammar_as_a_structured_output() -> None:
    spec = sampling_spec(CONFIG, LLMRequest(key="g", prompt="p", max_tokens=64, grammar='root ::= "1. x"'))
    assert spec.structured == {"grammar": 'root ::= "1. x"'}
