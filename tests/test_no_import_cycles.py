"""No file circle in the project (issue #33 item 5): no module imports, directly or through others, a module
that imports it back. Every import counts, wherever it stands: at the top, inside a function (a lazy import
hides a circle from the reader, not from Python) and under `if TYPE_CHECKING:` (a circle of types is a
circle of the code all the same). Migrations are project files too and are read.

An import names one file: `from a.b import c` is a/b/c.py when that is a module of ours, else a/b's own file
(a/b.py or a/b/__init__.py); the packages a module sits in are not counted as imported by it.

CHECKED lists the root packages whose modules are read: every package of the project."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROOT_PACKAGES = ("h2e_site", "mining", "judging", "goal_step", "annotation", "demo")
CHECKED = ("h2e_site", "mining", "judging", "goal_step", "annotation", "demo")

Graph = dict[str, set[str]]


def project_modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted name -> file of every module under the root packages."""
    modules: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    """What an import statement may name, absolute: for `from X import n`, both X.n (a submodule) and X."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:
        parts = module.split(".")
        base = parts[: len(parts) - node.level + (1 if is_package else 0)]
        prefix = ".".join([*base, node.module] if node.module else base)
    else:
        prefix = node.module or ""
    for alias in node.names:
        yield f"{prefix}.{alias.name}"
    yield prefix


def _file_of(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours an imported name is (the longest dotted prefix that is one), if any."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `module` imports, wherever the import stands in it."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        names = list(_imported_names(node, module, is_package))
        if isinstance(node, ast.ImportFrom):
            # `from X import n`: the submodule X.n when there is one, else X itself
            submodules = {name for name in names[:-1] if name in modules}
            targets = submodules if len(submodules) == len(names) - 1 else {*submodules, names[-1]}
        else:
            targets = set(names)
        found.update(target for name in targets if (target := _file_of(name, modules)) is not None)
    found.discard(module)
    return found


def import_graph(root: Path, packages: Iterable[str]) -> Graph:
    modules = project_modules(root, packages)
    return {module: imports_of(module, path, modules) for module, path in modules.items()}


def circles(graph: Graph) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan), each sorted; sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        # iterative depth-first search: (module, its remaining successors)
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, successors = work[-1]
            successor = next(successors, None)
            if successor is not None:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                elif successor in on_stack:
                    low[module] = min(low[module], index[successor])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def a_path_round(group: list[str], graph: Graph) -> list[str]:
    """One circle through the group's first module, for the message: [m, ..., m]."""
    members = set(group)
    start = group[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for successor in sorted(graph[module] & members):
                if successor == start:
                    path = [start]
                    while module != start:
                        path.append(module)
                        module = previous[module]
                    return [start, *reversed(path[1:]), start]
                if successor not in previous:
                    previous[successor] = module
                    following.append(successor)
        frontier = following
    raise AssertionError(f"no circle through {start} in {group}")


def test_no_file_circle() -> None:
    graph = import_graph(ROOT, CHECKED)
    found = circles(graph)
    assert not found, "file circles (move what both need below both):\n" + "\n".join(
        "  " + " -> ".join(a_path_round(group, graph)) for group in found
    )


def test_every_root_package_is_read() -> None:
    """The checked packages are root packages of the project, and each holds modules."""
    assert set(CHECKED) <= set(ROOT_PACKAGES)
    modules = project_modules(ROOT, ROOT_PACKAGES)
    assert all(any(m.split(".")[0] == package for m in modules) for package in ROOT_PACKAGES)


def test_it_sees_a_lazy_import() -> None:
    """A function's import is an edge: goal_step.jobs runs a build through a lazy import of build_work (which
    imports nothing of jobs: what both need, SplitBy, is in selection.py below them)."""
    graph = import_graph(ROOT, CHECKED)
    assert "goal_step.build_work" in graph["goal_step.jobs"]
    assert "goal_step.selection" in graph["goal_step.build_work"] & graph["goal_step.jobs"]


def test_it_finds_a_circle(tmp_path: Path) -> None:
    """The check itself can fail: a circle closed by an import inside a function, one closed by a relative
    `from . import` of a submodule and one under TYPE_CHECKING are each found; a package's __init__ importing
    its own submodule is not a circle with it."""
    files = {
        "app/__init__.py": "from . import views\n",
        "app/views.py": "from .services import run\n",
        "app/services.py": "def run():\n    from app.views import page\n",
        "app/models.py": "import typing\nif typing.TYPE_CHECKING:\n    from .registry import Kind\n",
        "app/registry.py": "from app import models\n",
        "app/alone.py": "import json\nfrom app.models import Job\n",
    }
    for name, source in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(source, encoding="utf-8")
    graph = import_graph(tmp_path, ["app"])
    assert graph["app"] == {"app.views"}
    assert circles(graph) == [["app.models", "app.registry"], ["app.services", "app.views"]]
    assert a_path_round(["app.services", "app.views"], graph) == ["app.services", "app.views", "app.services"]
