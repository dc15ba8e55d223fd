"""Session-wide checks and helpers shared by every test package.

When CI is set, the suite must run against real PostgreSQL and Redis: if either is missing or unreachable the
session stops at once with a non-zero status instead of skipping the tests that need them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest
from django.test import Client

CI_EXIT_STATUS = 3


def _postgres_problem(url: str) -> str | None:
    if urlparse(url).scheme not in {"postgres", "postgresql", "pgsql"}:
        return f"DATABASE_URL must point at PostgreSQL in CI, got {url or '(unset)'!r}"
    import psycopg

    parsed = urlparse(url)
    conninfo = url.replace(f"{parsed.scheme}://", "postgresql://", 1)
    try:
        with psycopg.connect(conninfo, connect_timeout=5) as connection:
            connection.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"PostgreSQL at DATABASE_URL={url} is unreachable: {exc}"
    return None


def _redis_problem(url: str) -> str | None:
    if not url:
        return "REDIS_URL must be set in CI (e.g. redis://127.0.0.1:6379/0)"
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5).ping()
    except redis.RedisError as exc:
        return f"Redis at REDIS_URL={url} is unreachable: {exc}"
    return None


def pytest_sessionstart(session: pytest.Session) -> None:
    if not os.environ.get("CI"):
        return
    problems = [
        problem
        for problem in (
            _postgres_problem(os.environ.get("DATABASE_URL", "")),
            _redis_problem(os.environ.get("REDIS_URL", "")),
        )
        if problem
    ]
    if problems:
        pytest.exit("CI needs real services:\n  " + "\n  ".join(problems), returncode=CI_EXIT_STATUS)


# --- logged-in clients: each a fresh Client (its own cookies), so a test may also use `client` anonymously
# (a visitor). Define no other copies in test modules: tests/test_suite_structure.py fails if one comes back.


@pytest.fixture
def staff() -> Client:
    """A staff user without the run permission: reads every staff page, cannot start, cancel or retry jobs."""
    from tests.factories import logged_in, make_user

    return logged_in(make_user(is_staff=True))


@pytest.fixture
def runner() -> Client:
    """A staff user with the run permission (jobs.add_job), not a superuser."""
    from tests.factories import logged_in, make_runner

    return logged_in(make_runner())


@pytest.fixture
def boss() -> Client:
    """A superuser: every admin page and action."""
    from django.contrib.auth import get_user_model

    from tests.factories import logged_in

    return logged_in(get_user_model().objects.create_superuser("boss", "boss@example.com", "pw"))


@pytest.fixture
def user_client() -> Client:
    """A logged-in user who is not staff (a teammate without the researcher pages)."""
    from tests.factories import logged_in, make_user

    return logged_in(make_user(is_staff=False))


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium through Playwright's sync API: one for the whole session, shared by every
    test package (tests/browser/conftest.py has the launch options and the page fixtures)."""
    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The fuzz test's count of generated requests, when it ran (tests/test_fuzz.py)."""
    import sys

    fuzz = sys.modules.get("tests.test_fuzz")
    if fuzz is not None and fuzz.SENT:
        terminalreporter.write_line(fuzz.fuzz_report())
