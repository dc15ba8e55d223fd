"""Filling the paper's prompts exactly as the reference does."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from h2e_site.llm.config import config_from_mapping
from judging.prompting import (
    JUDGE_PROMPT_SUFFIX,
    generation_prompt,
    generation_request,
    judge_prompt,
    judge_request,
    numbered,
    resources_text,
)

PROMPTS = Path(settings.BASE_DIR) / "prompts"


def _template(name: str) -> str:
    return (PROMPTS / name).read_text(encoding="utf-8")


def test_it_renders_resources_as_a_json_list() -> None:
    assert resources_text([]) == "[]"
    assert resources_text(["café", 'a "pot"']) == '["café", "a \\"pot\\""]'


def test_it_fills_the_instruct_generation_prompt() -> None:
    prompt = generation_prompt(_template("inference_inst.txt"), goal="Make tea", resources=["kettle"], n=4)
    assert prompt.endswith(
        'Goal:\nMake tea\n\nResources:\n["kettle"]\n\n'
        "4 steps to achieve the goal using the given resources:\n"
    )
    assert "return exactly 4 steps" in prompt
    assert "{" not in prompt.replace('["kettle"]', "")


def test_it_fills_the_base_generation_prompt() -> None:
    prompt = generation_prompt(_template("inference_base.txt"), goal="Make tea", resources=[], n=2)
    assert prompt.endswith(
        "Goal:\nMake tea\n\nResources:\n[]\n\n"
        "Exactly 2 steps to achieve the goal using the given resources:\n"
    )


def test_it_fills_the_judge_prompt_with_numbered_steps_and_no_resources() -> None:
    prompt = judge_prompt(
        _template("judge.txt"), goal=" Make tea ", reference_steps=["Boil", "Pour"], steps=["Pour"]
    )
    assert "Goal:\nMake tea\n\nL1:\n1. Boil\n2. Pour\n\nL2:\n1. Pour\n\n# Output format" in prompt
    assert prompt.endswith('"L2_steps": [<int>]\n    },\n    ...\n  ]\n}' + JUDGE_PROMPT_SUFFIX)
    assert JUDGE_PROMPT_SUFFIX == "\n\nReturn only valid json."
    assert numbered(["a", "b"]) == "1. a\n2. b"


def test_it_constrains_the_local_backend_with_a_grammar_and_a_bounded_schema() -> None:
    generator = config_from_mapping({"model": "m", "backend": "local"}, role="generator")
    request = generation_request(generator, key="1", prompt="p", n_steps=3)
    assert request.grammar is not None and '"3. "' in request.grammar and '"4. "' not in request.grammar
    judge = config_from_mapping({"model": "m", "backend": "local"}, role="judge")
    schema = judge_request(judge, key="1", prompt="p", n_l1=2, n_l2=5).json_schema
    assert schema is not None
    steps = schema["properties"]["critical_failures"]["items"]["properties"]
    assert steps["L1_steps"]["items"]["enum"] == [1, 2]
    assert steps["L2_steps"]["items"]["enum"] == [1, 2, 3, 4, 5]


def test_it_stops_base_models_at_a_blank_line_and_sends_no_schema_unless_configured() -> None:
    base = config_from_mapping({"model": "m", "provider": "p", "prompt_style": "base"}, role="generator")
    request = generation_request(base, key="1", prompt="p", n_steps=3)
    assert request.stop == ("\n\n",) and request.grammar is None
    assert base.backend_config().mode == "generate"
    judge = config_from_mapping({"model": "m", "provider": "p"}, role="judge")
    assert judge_request(judge, key="1", prompt="p", n_l1=1, n_l2=1).json_schema is None
    strict = config_from_mapping({"model": "m", "provider": "p", "json_schema": True}, role="judge")
    assert judge_request(strict, key="1", prompt="p", n_l1=1, n_l2=1).json_schema is not None
