"""Where the benchmarks write their figures: docs/benchmarks.md, one `## ` section per benchmark."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def insert_into_section(heading: str, text: str, *, path: Path = DOC) -> None:
    """Add `text` at the end of the section whose heading line starts with `heading` (before the next `## `
    heading), so a new run lands under its own benchmark whatever sections follow it."""
    doc = path.read_text(encoding="utf-8")
    start = doc.index(heading)
    end = doc.find("\n## ", start + len(heading))
    end = len(doc) if end == -1 else end + 1
    path.write_text(doc[:end].rstrip("\n") + "\n\n" + text.strip("\n") + "\n\n" + doc[end:], encoding="utf-8")
    if end == len(doc):  # the last section: no blank line at the end of the file
        path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n", encoding="utf-8")
