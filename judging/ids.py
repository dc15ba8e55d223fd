"""Run identities as the reference `h2e` CLI computes them, and the names of its run folders.

generator_id / judge_id: the first 12 hex characters of SHA-256 over the canonical JSON of a payload
(sorted keys, no spaces, ensure_ascii=False). The reference also hashes the judge prompt's *absolute path*
into judge_id, so one judge gets a different id on every machine; we hash the prompt contents only, and an
imported run keeps the id it was given.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from h2e_site.llm.prompts import prompt_sha256

GENERATOR_ID_VERSION = "how2bench.generator_id.v1"
JUDGE_ID_VERSION = "how2bench.judge_id.v1"


def _short_hash(payload: Mapping[str, Any]) -> str:
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def generator_id(
    *,
    backend: str,
    provider: str,
    model: str,
    temperature: float,
    max_new_tokens: int,
    max_requests_per_minute: int,
    max_tokens_per_minute: int,
    reasoning_effort: str | None,
    vllm_overrides: Mapping[str, Any] | None,
    model_type: str,
    prompt_text: str,
) -> str:
    """The reference's generator_id for this generator configuration and prompt text."""
    return _short_hash(
        {
            "generator_id_version": GENERATOR_ID_VERSION,
            "generator": {
                "backend": backend,
                "provider": provider,
                "model": model,
                "temperature": float(temperature),
                "max_new_tokens": int(max_new_tokens),
                "max_requests_per_minute": int(max_requests_per_minute),
                "max_tokens_per_minute": int(max_tokens_per_minute),
                "reasoning_effort": reasoning_effort,
                "vllm_overrides": dict(vllm_overrides or {}),
            },
            "generation": {"model_type": model_type},
            "generation_prompt_sha256": prompt_sha256(prompt_text),
        }
    )


def judge_id(
    *,
    backend: str,
    provider: str,
    model: str,
    temperature: float,
    max_new_tokens: int,
    reasoning_effort: str | None,
    vllm_overrides: Mapping[str, Any] | None,
    prompt_text: str,
) -> str:
    """judge_id over the judge configuration and the prompt *contents* (no path: see the module doc)."""
    return _short_hash(
        {
            "judge_id_version": JUDGE_ID_VERSION,
            "judge": {
                "backend": backend,
                "provider": provider,
                "model": model,
                "temperature": float(temperature),
                "max_new_tokens": int(max_new_tokens),
                "reasoning_effort": reasoning_effort,
                "vllm_overrides": dict(vllm_overrides or {}),
            },
            "judge_prompt_sha256": prompt_sha256(prompt_text),
        }
    )


def run_name_for_model(model: str) -> str:
    """Default run name: characters outside [A-Za-z0-9._-] become '-', '-' stripped at both ends."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", model.strip()).strip("-")
    return name or "model"


def judge_short_name(model: str) -> str:
    """The judge folder prefix: last piece of the model split on [/_]+, made filesystem-safe."""
    pieces = [p for p in re.split(r"[/_]+", model.strip()) if p]
    short = pieces[-1] if pieces else "judge"
    safe = "".join(ch if (ch.isalnum() or ch in ".-") else "-" for ch in short).strip("-")
    return safe or "judge"


def run_dir_name(*, run_name: str, model: str, generator_id: str) -> str:
    return f"{run_name or run_name_for_model(model)}_{generator_id}"


def judge_dir_name(*, model: str, judge_id: str) -> str:
    return f"{judge_short_name(model)}_{judge_id}"
