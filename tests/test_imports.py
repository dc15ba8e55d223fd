"""No first-party import inside a function (issue #21 item 4): an import of one of our modules hidden in a
function body is how a cycle between modules gets dodged instead of fixed, and it hides the dependency from
import-linter. Lazy imports remain only for heavy libraries (tests/test_startup.py): a third-party import
inside a function is never flagged, nor is one of our modules that imports a heavy library at its top,
directly or through another of ours (the "module behind a lazy import" of test_startup.py, e.g.
h2e_site/embeddings/encoders.py with numpy, or h2e_site/embeddings/work.py through its store).

What is left is ALLOWED below, each with why; an entry that no longer imports lazily fails the test, so the
list can only shrink."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.test_startup import HEAVY

ROOT = Path(__file__).resolve().parent.parent
FIRST_PARTY = ("h2e_site", "mining", "judging", "goal_step", "annotation", "demo")
# pydantic: the comprehension questions' schema (annotation/base/comprehension_schema.py), not at start-up
HEAVY_LIBRARIES = frozenset({*HEAVY, "sentence_transformers", "tiktoken", "choix", "evalica", "pydantic"})

_APP_LOADING = (
    "Django imports apps.py while it fills the app registry: models, and what imports them, only in ready()"
)
# "module:function" -> why its first-party import stays inside the function.
ALLOWED: dict[str, str] = {
    "h2e_site.embeddings.apps:EmbeddingsConfig.ready": _APP_LOADING,
    "mining.apps:MiningConfig.ready": _APP_LOADING,
    "judging.apps:JudgingConfig.ready": _APP_LOADING,
    "goal_step.apps:GoalStepConfig.ready": _APP_LOADING,
    "annotation.apps:AnnotationConfig.ready": f"{_APP_LOADING}; it also gives the goal-step app (a layer "
    "below) what people said, through its one seam (goal_step/human_labels.py)",
}


@dataclass(frozen=True)
class LazyImport:
    module: str  # the module whose function imports
    function: str  # Class.method or function (outer.inner for a nested one)
    imported: str  # the module imported, absolute
    line: int

    @property
    def where(self) -> str:
        return f"{self.module}:{self.function}"


def _modules() -> Iterator[tuple[str, Path]]:
    for package in FIRST_PARTY:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The modules a `from ... import` names, absolute (a relative one resolved against `module`)."""
    if node.level:
        base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
        prefix = ".".join([*base, node.module] if node.module else base)
    else:
        prefix = node.module or ""
    # `from . import views` imports the module views; `from .models import X` the module models.
    return [f"{prefix}.{alias.name}" for alias in node.names] if not node.module else [prefix]


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return _absolute(node, module, is_package)


def _first_party(name: str) -> bool:
    return name.split(".")[0] in FIRST_PARTY


def _heavy_at_top(path: Path) -> bool:
    """Whether a module imports a heavy library at its top level (so it is itself imported lazily)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        if any(name.split(".")[0] in HEAVY_LIBRARIES for name in names):
            return True
    return False


def _lazy_imports(module: str, path: Path) -> Iterator[LazyImport]:
    is_package = path.name == "__init__.py"

    def walk(node: ast.AST, scope: list[str], in_function: bool) -> Iterator[LazyImport]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from walk(child, [*scope, child.name], True)
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, [*scope, child.name], in_function)
            elif isinstance(child, ast.Import | ast.ImportFrom) and in_function:
                for name in _imported(child, module, is_package):
                    if _first_party(name):
                        yield LazyImport(module, ".".join(scope), name, child.lineno)
            else:
                yield from walk(child, scope, in_function)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), [], False)


def _top_first_party(module: str, path: Path) -> set[str]:
    """The first-party modules a module imports at its top level."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.update(name for name in _imported(node, module, is_package) if _first_party(name))
    return found


def _heavy_modules() -> set[str]:
    """Modules that import a heavy library at their top, or (transitively) such a module of ours: importing
    any of them loads the library."""
    modules = list(_modules())
    heavy = {module for module, path in modules if _heavy_at_top(path)}
    imports = {module: _top_first_party(module, path) for module, path in modules}
    while True:
        more = {
            m for m, names in imports.items() if m not in heavy and any(_heavy_name(n, heavy) for n in names)
        }
        if not more:
            return heavy
        heavy |= more


def _heavy_name(name: str, heavy: set[str]) -> bool:
    """`from .store import StoredEmbed` is recorded as h2e_site.embeddings.store or ...store.StoredEmbed."""
    return name in heavy or name.rpartition(".")[0] in heavy


def lazy_first_party_imports() -> list[LazyImport]:
    """Every first-party import inside a function, except of a module behind a heavy library."""
    heavy = _heavy_modules()
    found = [lazy for module, path in _modules() for lazy in _lazy_imports(module, path)]
    return [lazy for lazy in found if lazy.imported not in heavy]


def test_no_first_party_import_inside_a_function() -> None:
    offending = [lazy for lazy in lazy_first_party_imports() if lazy.where not in ALLOWED]
    assert not offending, (
        "first-party imports inside functions (import at the module's top; if that makes a cycle, move the "
        "shared code below both modules, as annotation/base/types.py does):\n"
        + "\n".join(f"  {lazy.where} (line {lazy.line}) imports {lazy.imported}" for lazy in offending)
    )


def test_the_allowlist_only_shrinks() -> None:
    """An allowed function that no longer imports lazily leaves the list."""
    still = {lazy.where for lazy in lazy_first_party_imports()}
    assert not set(ALLOWED) - still, f"no longer lazy, remove from ALLOWED: {sorted(set(ALLOWED) - still)}"


def test_it_finds_a_lazy_first_party_import(tmp_path: Path) -> None:
    """The check itself can fail: a relative import in a method, resolved against its package, is found;
    a third-party one and a top-level one are not."""
    source = (
        "import json\nfrom .models import Study\n\n\nclass View:\n    def get(self):\n"
        "        import numpy\n        from ..kinds import kind_for\n        from . import services\n"
    )
    path = tmp_path / "views.py"
    path.write_text(source, encoding="utf-8")
    found = [(lazy.where, lazy.imported) for lazy in _lazy_imports("annotation.views.studies", path)]
    assert found == [
        ("annotation.views.studies:View.get", "annotation.kinds"),
        ("annotation.views.studies:View.get", "annotation.views.services"),
    ]


def test_a_module_behind_a_heavy_library_may_be_imported_lazily() -> None:
    heavy = _heavy_modules()
    assert "h2e_site.embeddings.encoders" in heavy  # numpy and scipy at its top
    assert "annotation.flow.services" not in heavy
