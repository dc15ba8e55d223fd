"""JSON out of model outputs: the whole text, a code fence, or an object embedded in prose (after a
</think>), for the judge and the How2Mine stages alike."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


def find_json_object(text: str, *, required_key: str | None = None) -> dict[str, Any] | None:
    """The JSON object in a model output: the whole text, else inside a code fence, else the outermost
    balanced object in the text. After a </think>, only what follows it counts. An object carrying
    `required_key` is preferred over one that does not."""
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    found: list[dict[str, Any]] = []
    for candidate in candidates:
        whole = _loads_object(candidate)
        if whole is not None:
            found.append(whole)
    found.extend(_embedded_objects(text))
    if required_key is not None:
        for obj in found:
            if required_key in obj:
                return obj
    return found[0] if found else None


def _loads_object(text: str) -> dict[str, Any] | None:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _embedded_objects(text: str) -> list[dict[str, Any]]:
    """Every outermost JSON object in free text, left to right (an object nested in another is skipped)."""
    decoder = json.JSONDecoder()
    objects: list[dict[str, Any]] = []
    position = text.find("{")
    while position != -1:
        try:
            obj, end = decoder.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(obj, dict):
            objects.append(obj)
        position = text.find("{", end)
    return objects
