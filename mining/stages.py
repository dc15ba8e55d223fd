"""The LLM stages of How2Mine: filling their prompts (paper §H.1), the requests, and reading the answers.

Prompts are `str.format`-ed as the reference does: `{document}` for extraction; `{goal}` and `{steps}`
(numbered `1. step` lines) for the others; the final filter also gets `{resources}` as `- resource` lines.
Answers are read robustly (h2e_site.llm.json_output.find_json_object: code fences, prose around the object,
<think> blocks); an answer that still cannot be read is a failed outcome with the reason, never an exception.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from h2e_site.llm.base import LLMRequest
from h2e_site.llm.config import ModelConfig, config_identity
from h2e_site.llm.json_output import find_json_object

from .models import Stage

FINAL_QUESTIONS: tuple[str, ...] = ("correctness", "sequential", "no_specific_entity", "goal_steps_alignment")


@dataclass(frozen=True)
class StageVerdict:
    """What a stage made of one answer. `error` is set when the answer was unusable (then passed is False)."""

    passed: bool
    reason: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    error: str = ""


def numbered(steps: Sequence[str]) -> str:
    return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, start=1))


def bulleted(resources: Sequence[str]) -> str:
    return "\n".join(f"- {resource}" for resource in resources)


def stage_prompt(template: str, stage: str, inputs: dict[str, Any]) -> str:
    """The filled prompt of `stage` for one document's inputs (document text, or goal/steps/resources)."""
    if stage == Stage.EXTRACTION:
        return template.format(document=inputs["document"])
    fields = {"goal": inputs["goal"], "steps": numbered(inputs["steps"])}
    if stage == Stage.FINAL_FILTER:
        fields["resources"] = bulleted(inputs.get("resources", []))
    return template.format(**fields)


def request_sha256(config: ModelConfig, stage: str, request: LLMRequest) -> str:
    """The identity of a stage request: the stage, the model's identity (backend, provider, model,
    temperature, max_new_tokens, reasoning effort, vLLM overrides, chat or raw completion) and what is sent
    (the filled prompt, so the prompt file's text and the stage's inputs, and the JSON schema). Two requests
    with the same identity get the answer stored for the first: it is reused, not sent again. URLs, rate
    limits and concurrency are not identity."""
    payload = {
        "version": "h2e-studio.mine_request.v1",
        "stage": stage,
        "model": config_identity(config, output=f"mine:{stage}"),
        "mode": config.mode,
        "prompt": request.prompt,
        "max_tokens": request.max_tokens,
        "temperature": float(request.temperature),
        "json_schema": request.json_schema,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def stage_request(config: ModelConfig, stage: str, *, key: str, prompt: str) -> LLMRequest:
    """One stage request; the embedded model always gets a bounded schema (it cannot keep JSON otherwise),
    other backends the stage's schema when their config sets json_schema."""
    schema = None
    if config.backend == "local":
        schema = bounded_schema(stage)
    elif config.json_schema:
        schema = STAGE_SCHEMAS[stage]
    return LLMRequest(
        key=key,
        prompt=prompt,
        max_tokens=config.max_new_tokens,
        temperature=config.temperature,
        json_schema=schema,
    )


# --- schemas -----------------------------------------------------------------------------------------------


def _obj(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _strings(max_items: int | None = None, max_chars: int | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "string"}
    if max_chars:
        item |= {"minLength": 1, "maxLength": max_chars}
    schema: dict[str, Any] = {"type": "array", "items": item}
    return schema | ({"maxItems": max_items} if max_items else {})


def _answer(reason_chars: int | None = None) -> dict[str, Any]:
    reason: dict[str, Any] = {"type": "string"} | ({"maxLength": reason_chars} if reason_chars else {})
    return _obj({"answer": {"type": "string", "enum": ["yes", "no"]}, "reason": reason})


def _schemas(text: int | None, items: int | None, item_chars: int | None) -> dict[str, dict[str, Any]]:
    string: dict[str, Any] = {"type": "string"} | ({"maxLength": text} if text else {})
    return {
        Stage.EXTRACTION: _obj(
            {"has_valid_process": {"type": "boolean"}, "goal": string, "steps": _strings(items, item_chars)}
        ),
        Stage.FILTER: _obj({"judgment": {"type": "boolean"}, "reason": string}),
        Stage.POSTPROCESS: _obj({"rewritten_goal": string, "rewritten_steps": _strings(items, item_chars)}),
        Stage.RESOURCES: _obj({"resources": _strings(items, item_chars)}),
        Stage.FINAL_FILTER: _obj({question: _answer(text) for question in FINAL_QUESTIONS}),
    }


STAGE_SCHEMAS: dict[str, dict[str, Any]] = _schemas(None, None, None)
_BOUNDED_SCHEMAS: dict[str, dict[str, Any]] = _schemas(160, 15, 120)


def bounded_schema(stage: str) -> dict[str, Any]:
    """The stage's schema with every string and list bounded, for the embedded model."""
    return _BOUNDED_SCHEMAS[stage]


# --- reading answers ---------------------------------------------------------------------------------------


def parse_stage_output(stage: str, text: str | None) -> StageVerdict:
    """The verdict of `stage` on a raw answer."""
    key: str = {
        Stage.EXTRACTION: "has_valid_process",
        Stage.FILTER: "judgment",
        Stage.POSTPROCESS: "rewritten_steps",
        Stage.RESOURCES: "resources",
        Stage.FINAL_FILTER: "correctness",
    }[Stage(stage)]
    obj = find_json_object(text or "", required_key=key)
    if obj is None:
        return _unusable("no JSON object in the answer")
    if key not in obj:
        return _unusable(f"the JSON object has no {key!r}")
    return _PARSERS[Stage(stage)](obj)


def _unusable(problem: str) -> StageVerdict:
    return StageVerdict(False, f"unparsable output: {problem}", error=f"unparsable output: {problem}")


def _boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
        return value.strip().lower() == "true"
    return None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _steps(value: Any) -> list[str] | None:
    """Non-empty stripped strings; None when the value is not a list."""
    if not isinstance(value, list):
        return None
    return [item.strip() for item in value if isinstance(item, str) and item.strip()]


def _extraction(obj: dict[str, Any]) -> StageVerdict:
    valid = _boolean(obj["has_valid_process"])
    if valid is None:
        return _unusable("has_valid_process is not a boolean")
    goal, steps = _text(obj.get("goal")), _steps(obj.get("steps")) or []
    payload = {"has_valid_process": valid, "goal": goal, "steps": steps}
    if not valid:
        return StageVerdict(False, "no valid process in the document", payload)
    if not steps:
        return StageVerdict(False, "has_valid_process is true but there are no steps", payload)
    return StageVerdict(True, "", payload)  # an empty goal passes, as in the reference: the filter drops it


def _filter(obj: dict[str, Any]) -> StageVerdict:
    judgment = _boolean(obj["judgment"])
    if judgment is None:
        return _unusable("judgment is not a boolean")
    reason = _text(obj.get("reason"))
    payload = {"judgment": judgment, "reason": reason}
    if judgment:
        return StageVerdict(False, reason or "falls in an excluded category", payload)
    return StageVerdict(True, "", payload)


def _postprocess(obj: dict[str, Any]) -> StageVerdict:
    goal, steps = _text(obj.get("rewritten_goal")), _steps(obj["rewritten_steps"])
    if steps is None:
        return _unusable("rewritten_steps is not a list")
    payload = {"goal": goal, "steps": steps}
    if not goal or not steps:
        return StageVerdict(False, "the rewrite has an empty goal or no steps", payload)
    return StageVerdict(True, "", payload)


def _resources(obj: dict[str, Any]) -> StageVerdict:
    resources = _steps(obj["resources"])
    if resources is None:
        return _unusable("resources is not a list")
    return StageVerdict(True, "", {"resources": resources})  # as answered, repeats too (as the reference)


def _final_filter(obj: dict[str, Any]) -> StageVerdict:
    answers: dict[str, dict[str, str]] = {}
    for question in FINAL_QUESTIONS:
        value = obj.get(question)
        answer = value.get("answer") if isinstance(value, dict) else value
        if not isinstance(answer, str) or answer.strip().lower() not in {"yes", "no"}:
            return _unusable(f"{question} has no yes/no answer")
        reason = _text(value.get("reason")) if isinstance(value, dict) else ""
        answers[question] = {"answer": answer.strip().lower(), "reason": reason}
    noes = [
        f"{q}: no" + (f" ({a['reason']})" if a["reason"] else "")
        for q, a in answers.items()
        if a["answer"] == "no"
    ]
    return StageVerdict(not noes, "; ".join(noes), answers)


_PARSERS = {
    Stage.EXTRACTION: _extraction,
    Stage.FILTER: _filter,
    Stage.POSTPROCESS: _postprocess,
    Stage.RESOURCES: _resources,
    Stage.FINAL_FILTER: _final_filter,
}
