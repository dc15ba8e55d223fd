"""Prompt files (the repo's prompts/, paper §H) and their hashes.

A Generator or Judge keeps the text of its prompt from the moment it is made, and its id hashes that text:
jobs send the stored text, never whatever the file says at run time (check_prompt guards rows made before
the text was stored).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"  # the repo's prompts/ (settings.BASE_DIR)
GENERATION_PROMPTS = {"base": "inference_base.txt", "inst": "inference_inst.txt"}
JUDGE_PROMPT = "judge.txt"


class PromptChanged(ValueError):
    """The prompt about to be sent is not the one the row's id was hashed from."""


def prompt_sha256(prompt_text: str) -> str:
    """SHA-256 of a prompt's text (UTF-8), as the h2e manifests record it."""
    return hashlib.sha256(prompt_text.encode("utf-8")).hexdigest()


def read_prompt(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def check_prompt(prompt_text: str, *, expected_sha256: str, label: str, path: str = "") -> str:
    """`prompt_text` if it hashes to `expected_sha256`; else PromptChanged naming the row and the file."""
    actual = prompt_sha256(prompt_text)
    if expected_sha256 and actual != expected_sha256:
        where = f" ({path})" if path else ""
        raise PromptChanged(
            f"{label}: the prompt file{where} has changed since it was created "
            f"(sha256 {expected_sha256[:12]} recorded, {actual[:12]} now): its id no longer describes this "
            "prompt. Restore the file, or "
            "create a new one from the config (it gets a new id)."
        )
    return prompt_text
