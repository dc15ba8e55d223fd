"""The manual is a MkDocs site (mkdocs.yml, docs/): it builds with --strict (no broken link, missing page
or anchor), and the README stays a front page (at most 250 lines) whose links all reach a repository file."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# [text](target) and [text]: target; a target ends at a space (a title may follow) or a parenthesis.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)[^)]*\)|^\[[^\]]+\]:\s*(\S+)", re.M)


def readme_targets() -> list[str]:
    return [inline or reference for inline, reference in LINK.findall(README.read_text(encoding="utf-8"))]


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "index.html").is_file()


def test_the_readme_is_a_front_page() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_every_readme_link_reaches_a_file() -> None:
    local = [t for t in readme_targets() if not t.startswith(("http://", "https://", "mailto:"))]
    assert local, "the README links to the docs"
    missing = [t for t in local if t.startswith("#") or not (ROOT / t.split("#", 1)[0]).exists()]
    assert missing == []
