"""The layout's limits (issue #33): the annotation app has at most 10 top-level entries, no package's own
modules hold more than a quarter of the app's lines (a package's sub-packages are counted as packages of their
own: annotation/kinds/ holds the kinds, each its own package), no Python module of the project, tests and
benchmarks included, is over 600 lines, and no judging module is imported by the annotation app alone (what
only annotation uses lives in annotation)."""

from __future__ import annotations

from pathlib import Path

from tests.test_no_import_cycles import CHECKED, import_graph

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "annotation"
MAX_ENTRIES = 10
MAX_SHARE = 0.25
MAX_LINES = 600
TREES = (
    "h2e_site",
    "mining",
    "judging",
    "goal_step",
    "annotation",
    "demo",
    "tests",
    "benchmarks",
    "clients",
    "examples",
)


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _python(tree: Path) -> list[Path]:
    return [path for path in tree.rglob("*.py") if "__pycache__" not in path.parts]


def test_the_annotation_app_has_at_most_ten_top_level_entries() -> None:
    entries = sorted(entry.name for entry in APP.iterdir() if entry.name != "__pycache__")
    assert len(entries) <= MAX_ENTRIES, entries


def test_no_package_holds_more_than_a_quarter_of_the_apps_lines() -> None:
    total = sum(_lines(path) for path in _python(APP))
    packages = [APP, *(path.parent for path in APP.rglob("__init__.py"))]
    shares = {
        str(package.relative_to(ROOT)): sum(_lines(path) for path in package.glob("*.py")) / total
        for package in packages
    }
    assert {name: round(share, 3) for name, share in shares.items() if share > MAX_SHARE} == {}


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): _lines(path)
        for tree in TREES
        for path in _python(ROOT / tree)
        if _lines(path) > MAX_LINES and "migrations" not in path.parts
    }
    assert long == {}


def imported_by_annotation_alone(graph: dict[str, set[str]]) -> list[str]:
    """The judging modules that some module imports and every importer of which is in annotation."""
    importers: dict[str, set[str]] = {module: set() for module in graph if module.split(".")[0] == "judging"}
    for module, imported in graph.items():
        for target in imported & importers.keys():
            importers[target].add(module.split(".")[0])
    return sorted(module for module, apps in importers.items() if apps == {"annotation"})


def test_no_judging_module_is_imported_by_annotation_alone() -> None:
    assert imported_by_annotation_alone(import_graph(ROOT, CHECKED)) == []


def test_it_sees_a_judging_module_that_annotation_alone_imports() -> None:
    """The check itself can fail: a judging module imported by annotation alone is named; one judging also
    imports, or one nobody imports (a module Django loads by name: models, tasks, commands), is not."""
    graph = {
        "judging.figures": set(),
        "judging.models": set(),
        "judging.shared": set(),
        "judging.views": {"judging.shared", "judging.models"},
        "annotation.report": {"judging.figures", "judging.shared"},
    }
    assert imported_by_annotation_alone(graph) == ["judging.figures"]
