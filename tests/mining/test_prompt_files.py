"""The prompt files the reference h2e CLI ships are kept byte for byte: each file's SHA-256 is pinned in
prompts/README.md ("The bytes"), and this test reads the table, so the README and the files cannot drift."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from django.conf import settings

PROMPTS = Path(settings.BASE_DIR) / "prompts"
ROW = re.compile(r"^\| `(?P<file>[\w.]+\.txt)` \| `[\w.]+\.txt` \| `(?P<sha>[0-9a-f]{64})` \|$", re.M)


def pinned() -> dict[str, str]:
    return {m["file"]: m["sha"] for m in ROW.finditer((PROMPTS / "README.md").read_text(encoding="utf-8"))}


def test_it_pins_every_prompt_file_the_reference_ships() -> None:
    assert set(pinned()) == {
        "inference_base.txt",
        "inference_inst.txt",
        "judge.txt",
        "mine_extraction.txt",
        "mine_filter.txt",
        "mine_postprocess.txt",
        "mine_resources.txt",
        "mine_final_filter.txt",
    }


def test_it_keeps_each_prompt_file_byte_identical_to_the_pinned_sha256() -> None:
    actual = {name: hashlib.sha256((PROMPTS / name).read_bytes()).hexdigest() for name in pinned()}
    assert actual == pinned()


def test_it_keeps_the_no_break_space_of_the_filter_prompts_output_heading() -> None:
    text = (PROMPTS / "mine_filter.txt").read_text(encoding="utf-8")
    assert "##\u00a0Output Format" in text and "## Output Format" not in text
