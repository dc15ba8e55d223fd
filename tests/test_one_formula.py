"""One formula each (issue #33 item 3): the project's code defines one `Share` (k of n with its Wilson
interval), one Wilson interval, one Krippendorff's nominal alpha and one Cohen's kappa, all in h2e_site/stats
(the statistics below every app); everything else calls them. Read from the source with ast: a class or
function of that name anywhere else, or a second call of the `krippendorff` package's nominal alpha, fails."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("h2e_site", "mining", "judging", "goal_step", "annotation", "demo", "examples", "clients")
Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Definition:
    path: str  # relative to the repository
    name: str
    node: ast.AST
    top_level: bool

    @property
    def where(self) -> str:
        return f"{self.path}:{self.name}"


def _sources() -> Iterator[Path]:
    for source in SOURCES:
        for path in sorted((ROOT / source).rglob("*.py")):
            if "migrations" not in path.parts and ".venv" not in path.parts:
                yield path


def _definitions() -> list[Definition]:
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                found.append(Definition(str(path.relative_to(ROOT)), node.name, node, id(node) in top))
    return found


DEFINITIONS = _definitions()


def test_there_is_one_share() -> None:
    shares = [d.where for d in DEFINITIONS if isinstance(d.node, ast.ClassDef) and d.name == "Share"]
    assert shares == ["h2e_site/stats/__init__.py:Share"]


def test_there_is_one_wilson_interval() -> None:
    wilsons = [d.where for d in DEFINITIONS if isinstance(d.node, Function) and "wilson" in d.name.lower()]
    assert wilsons == ["h2e_site/stats/__init__.py:wilson_interval"]


def _nominal_krippendorff_calls(node: ast.AST) -> int:
    """Calls of krippendorff.alpha(..., level_of_measurement="nominal") in node."""
    return sum(
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "alpha"
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "krippendorff"
        and any(
            k.arg == "level_of_measurement"
            and isinstance(k.value, ast.Constant)
            and k.value.value == "nominal"
            for k in call.keywords
        )
        for call in ast.walk(node)
    )


def test_there_is_one_nominal_alpha() -> None:
    alphas = [d.where for d in DEFINITIONS if isinstance(d.node, Function) and d.name == "nominal_alpha"]
    assert alphas == ["h2e_site/stats/agreement.py:nominal_alpha"]
    callers = [d.where for d in DEFINITIONS if d.top_level and _nominal_krippendorff_calls(d.node)]
    assert callers == ["h2e_site/stats/agreement.py:nominal_alpha"]


def _refers_to_a_kappa(node: Function) -> bool:
    """Whether the function's body names another kappa (a name or attribute with "kappa" in it)."""
    for child in ast.walk(node):
        name = (
            child.id
            if isinstance(child, ast.Name)
            else child.attr
            if isinstance(child, ast.Attribute)
            else ""
        )
        if "kappa" in name.lower():
            return True
    return False


def test_there_is_one_cohen_kappa() -> None:
    functions = [d for d in DEFINITIONS if isinstance(d.node, Function) and "kappa" in d.name.lower()]
    formulas = [d.where for d in functions if d.top_level and d.name == "kappa"]
    assert formulas == ["h2e_site/stats/agreement.py:kappa"]
    # Every other function named after kappa (its value, a mean over rater pairs, a property) is built on it.
    assert [d.where for d in functions if d.where not in formulas and not _refers_to_a_kappa(d.node)] == []
