"""The suite's shared fixtures and helpers live in one place each (issue #21 item 6): a test module that
defines its own logged-in client, runner, browser tab or screenshot helper again fails here, naming the file
and line.

Homes: the logged-in clients, the Chromium pages and the model servers in tests/conftest.py (so every test
package has them), `logged_in` / `make_runner` in tests/factories.py, the window sizes and `screenshot` in
tests/browser/conftest.py.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT_CONFTEST = TESTS / "conftest.py"
# Fixture name -> what to use instead of a new definition (the shared ones are in tests/conftest.py).
SHARED_FIXTURES = {
    "staff": "`staff`, a staff user's client",
    "staff_client": "`staff`, a staff user's client",
    "runner": "`runner`, a staff user with jobs.add_job",
    "boss": "`boss`, a superuser",
    "user_client": "`user_client`, a logged-in user who is not staff",
    "admin_client": "pytest-django's `admin_client` or `boss`",
    "page": "`page`, a Chromium tab on the live server",
    "requested_urls": "`requested_urls`, what `page` requested",
    "staff_page": "`staff_page`, a Chromium tab logged in as staff",
    "new_tab": "`new_tab`, fresh Chromium tabs for participants",
    "browser": "`browser`, the session's Chromium",
    "llm_server": "`llm_server`, a loopback OpenAI-compatible server",
    "local_llm_url": "`local_llm_url`, the embedded model server (one per session)",
}
# Plain helper name -> its one home.
SHARED_HELPERS = {
    "logged_in": TESTS / "factories.py",
    "make_runner": TESTS / "factories.py",
    "make_user": TESTS / "factories.py",
    "screenshot": TESTS / "browser" / "conftest.py",
    "shot": TESTS / "browser" / "conftest.py",  # the old per-module name of `screenshot`: defined nowhere
}


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(TESTS.rglob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def _is_fixture(node: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(decorator) for decorator in node.decorator_list)


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    yield from (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef))


def _where(path: Path, node: ast.FunctionDef) -> str:
    return f"{path.relative_to(TESTS.parent)}:{node.lineno} {node.name}"


def test_the_shared_fixtures_are_defined_only_in_the_root_conftest() -> None:
    copies = [
        f"{_where(path, node)}: use {SHARED_FIXTURES[node.name]}"
        for path, tree in _modules()
        if path != ROOT_CONFTEST
        for node in _functions(tree)
        if _is_fixture(node) and node.name in SHARED_FIXTURES
    ]
    assert not copies, "\n".join(copies)


def test_no_fixture_outside_the_root_conftest_logs_a_client_in() -> None:
    """A logged-in client under another name is a copy too: fixtures take `staff`, `runner`, `boss`,
    `user_client`, or build one with tests.factories.logged_in(user)."""
    copies = [
        _where(path, node)
        for path, tree in _modules()
        if path != ROOT_CONFTEST
        for node in _functions(tree)
        if _is_fixture(node) and "force_login" in ast.unparse(node)
    ]
    assert not copies, "\n".join(copies)


def test_the_shared_helpers_are_defined_only_in_their_home() -> None:
    copies = [
        f"{_where(path, node)}: import it from {home.relative_to(TESTS.parent)}"
        for path, tree in _modules()
        for node in _functions(tree)
        if node.name in SHARED_HELPERS and path != (home := SHARED_HELPERS[node.name])
    ]
    assert not copies, "\n".join(copies)


def test_no_test_module_imports_a_fixture_from_another_module() -> None:
    """Fixtures are shared through conftest.py, not imported (an import shadows the conftest one and needs a
    noqa to pass the linters)."""
    imported = [
        f"{path.relative_to(TESTS.parent)}:{node.lineno} imports {alias.name} from {node.module}"
        for path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests")
        for alias in node.names
        if alias.name in SHARED_FIXTURES
    ]
    assert not imported, "\n".join(imported)


def test_the_root_conftest_defines_every_shared_client_fixture() -> None:
    tree = ast.parse(ROOT_CONFTEST.read_text())
    defined = {node.name for node in _functions(tree) if _is_fixture(node)}
    assert set(SHARED_FIXTURES) - {"staff_client", "admin_client"} <= defined
