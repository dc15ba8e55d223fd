"""Filling the generation and judge prompts, and turning them into LLM requests (h2e-compat.md rules).

Generation: `str.format(goal=, resources=, n=)` with resources as a JSON list ("[]" when empty) and n the
number of L1 steps; chat models get one user message (the backend's chat mode), base models a raw completion
that stops at a blank line. Judging: goal, L1 and L2 as numbered lines, then "\n\nReturn only valid json."
as the reference appends; the judge never sees the resources.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from h2e_site.llm.base import LLMRequest
from h2e_site.llm.config import ModelConfig, decoding_request
from h2e_site.llm.local import bounded_judge_schema, numbered_steps_grammar

JUDGE_PROMPT_SUFFIX = "\n\nReturn only valid json."

# The judge output format of paper §H.3 as a JSON schema (OpenAI / vLLM when a config sets json_schema).
JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "critical_failures": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "failure": {"type": "string"},
                    "L1_steps": {"type": "array", "items": {"type": "integer"}},
                    "L2_steps": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["failure", "L1_steps", "L2_steps"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["reasoning", "critical_failures"],
    "additionalProperties": False,
}


def resources_text(resources: Sequence[str]) -> str:
    return json.dumps(list(resources), ensure_ascii=False) if resources else "[]"


def numbered(steps: Sequence[str]) -> str:
    """`1. s` lines, as the judge prompt shows L1 and L2."""
    return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, start=1))


def generation_prompt(template: str, *, goal: str, resources: Sequence[str], n: int) -> str:
    return template.format(goal=goal, resources=resources_text(resources), n=n)


def clean_steps(steps: Sequence[Any]) -> list[str]:
    """Steps as the reference's judge sees them: stripped strings, empty ones dropped."""
    return [str(step).strip() for step in steps if str(step).strip()]


def judge_prompt(template: str, *, goal: str, reference_steps: Sequence[str], steps: Sequence[str]) -> str:
    filled = template.format(
        goal=goal.strip(), reference_steps=numbered(reference_steps), steps=numbered(steps)
    )
    return filled + JUDGE_PROMPT_SUFFIX


def generation_request(config: ModelConfig, *, key: str, prompt: str, n_steps: int) -> LLMRequest:
    """The request for one L2. The local (llama.cpp) backend gets a grammar for exactly n numbered steps."""
    grammar = None
    if config.backend == "local":
        grammar = numbered_steps_grammar(n_steps)
    return decoding_request(config, key=key, prompt=prompt, grammar=grammar)


def judge_request(config: ModelConfig, *, key: str, prompt: str, n_l1: int, n_l2: int) -> LLMRequest:
    """The request for one judgment: the local backend always gets the bounded judge schema (small models
    need it to produce JSON at all); other backends the judge schema when the config sets json_schema."""
    schema: dict[str, Any] | None = None
    if config.backend == "local":
        schema = bounded_judge_schema(n_l1, n_l2)
    elif config.json_schema:
        schema = JUDGE_SCHEMA
    return decoding_request(config, key=key, prompt=prompt, json_schema=schema)
