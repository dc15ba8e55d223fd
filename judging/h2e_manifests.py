"""The manifests of an h2e tree (generation_manifest.json, judge_manifest.json) read into Generator / Judge
fields; a run without one is built from its first record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from mining.services import FileReport


def read_manifest(path: Path, report: FileReport) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        manifest = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        report.errors.append(f"{path}:1: manifest: malformed JSON ({exc})")
        return None
    if not isinstance(manifest, dict):
        report.errors.append(f"{path}:1: manifest: expected a JSON object")
        return None
    return manifest


def _block(data: Any) -> dict[str, Any]:
    return data if isinstance(data, dict) else {}


def generator_fields(manifest: dict[str, Any] | None, first: dict[str, Any]) -> dict[str, Any]:
    if manifest:
        gen = _block(manifest.get("generator"))
        return {
            "model": str(gen.get("model") or ""),
            "backend": str(gen.get("backend") or ""),
            "provider": gen.get("provider"),
            "prompt_style": str(_block(manifest.get("generation")).get("model_type") or ""),
            "temperature": gen.get("temperature"),
            "max_new_tokens": gen.get("max_new_tokens"),
            "max_requests_per_minute": gen.get("max_requests_per_minute"),
            "max_tokens_per_minute": gen.get("max_tokens_per_minute"),
            "reasoning_effort": gen.get("reasoning_effort"),
            "vllm_overrides": gen.get("vllm_overrides") or {},
            "prompt_sha256": str(manifest.get("generation_prompt_sha256") or ""),
            "prompt_path": str(manifest.get("generation_prompt_path") or ""),
            "manifest": manifest,
        }
    gen = _block(first.get("generator"))
    return {
        "model": str(gen.get("model") or ""),
        "backend": str(gen.get("backend") or ""),
        "provider": gen.get("provider"),
        "prompt_sha256": str(first.get("generation_prompt_sha256") or ""),
    }


def judge_fields(manifest: dict[str, Any] | None, first: dict[str, Any]) -> dict[str, Any]:
    if manifest:
        judge = _block(manifest.get("judge"))
        return {
            "model": str(judge.get("model") or ""),
            "backend": str(judge.get("backend") or ""),
            "provider": judge.get("provider"),
            "temperature": judge.get("temperature"),
            "max_new_tokens": judge.get("max_new_tokens"),
            "reasoning_effort": judge.get("reasoning_effort"),
            "vllm_overrides": judge.get("vllm_overrides") or {},
            "prompt_sha256": str(manifest.get("judge_prompt_sha256") or ""),
            "prompt_path": str(manifest.get("judge_prompt_path") or ""),
            "manifest": manifest,
        }
    judge = _block(first.get("judge"))
    return {
        "model": str(judge.get("model") or ""),
        "backend": str(judge.get("backend") or ""),
        "provider": judge.get("provider"),
        "prompt_sha256": str(first.get("judge_prompt_sha256") or ""),
    }
