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


def test_it_keeps_the_no_break_space_of_the_filter_prompts_heading_where_the_reference_has_it() -> None:
    """The reference's filter.txt line 65 is `## Output` U+00A0 `Format` (not `##` U+00A0 `Output Format`):
    every filter prompt sent differs by it, and so does the request's identity."""
    lines = (PROMPTS / "mine_filter.txt").read_bytes().split(b"\n")
    assert lines[64] == b"## Output\xc2\xa0Format"
    assert [n for n, line in enumerate(lines, start=1) if b"\xc2\xa0" in line] == [65]
