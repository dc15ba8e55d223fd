"""From what a trainer holds to the reward service's items: the completion's text, the procedure it answers
(a studio id, or the ground truth's goal, resources and reference steps inline) and its group.

The ground truth of the studio's exports (How2Train for open-instruct and verl) is a JSON string:
{"procedure_id": 123 | null, "goal": "...", "resources": [...], "steps": [...]}. An item names the procedure
by its id when the ground truth has one, else carries it inline.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

Completion = str | Sequence[Mapping[str, Any]] | Mapping[str, Any]


def completion_text(completion: Completion) -> str:
    """A completion's text: the string itself, or a conversation's last assistant message (TRL's
    conversational format: a list of {"role", "content"} messages; content may be a list of text parts)."""
    if isinstance(completion, str):
        return completion
    messages = [completion] if isinstance(completion, Mapping) else list(completion)
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role", "assistant") == "assistant":
            return _content_text(message.get("content"))
    raise ValueError(f"the completion has no assistant message: {str(completion)[:200]}")


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": "..."}, ...]
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)


def parse_ground_truth(ground_truth: str | Mapping[str, Any]) -> dict[str, Any]:
    """The contract's ground truth as a dict (from its JSON string, or as given), checked."""
    value: Any = ground_truth
    if isinstance(ground_truth, str):
        try:
            value = json.loads(ground_truth)
        except json.JSONDecodeError as error:
            raise ValueError(f"the ground truth is not JSON ({error}): {ground_truth[:120]!r}") from None
    if not isinstance(value, Mapping):
        raise ValueError(f"the ground truth must be a JSON object, not {str(ground_truth)[:120]!r}")
    if value.get("procedure_id") is None and not (value.get("goal") and value.get("steps")):
        raise ValueError(
            "the ground truth names no procedure: it needs a procedure_id, or a goal and reference steps "
            f"(the studio's How2Train export has both): {str(ground_truth)[:120]!r}"
        )
    return dict(value)


def procedure_ref(*, procedure_id: Any = None, ground_truth: Any = None) -> dict[str, Any]:
    """The item's procedure: {"procedure_id": n} or {"procedure": {"goal", "resources", "steps"}}."""
    if procedure_id is not None:
        return {"procedure_id": int(procedure_id)}
    if ground_truth is None:
        raise ValueError("no procedure: give a procedure_id or a ground truth")
    truth = parse_ground_truth(ground_truth)
    if truth.get("procedure_id") is not None:
        return {"procedure_id": int(truth["procedure_id"])}
    return {
        "procedure": {
            "goal": truth["goal"],
            "resources": list(truth.get("resources") or []),
            "steps": list(truth["steps"]),
        }
    }


def group_id(prompt: Any) -> str:
    """A completion's group (the completions of one prompt): a short hash of the prompt (a string, a
    conversation or a ground truth), the same in every process of a run."""
    text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)
    return "g-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def item(completion: Completion, ref: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """One request item; extra fields (step, group, run) left out when None."""
    fields = {key: value for key, value in extra.items() if value is not None}
    return {**ref, "completion": completion_text(completion), **fields}
