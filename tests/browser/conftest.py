"""Playwright fixtures: headless Debian Chromium against pytest-django's live_server. The one `browser`
(a session fixture) lives in tests/conftest.py: a second sync Playwright in the same session would fail.

The sync Playwright API runs an event loop in the test thread, so Django's async-safety check must be relaxed
(DJANGO_ALLOW_ASYNC_UNSAFE) for the test's own database calls. Data is created with transactional_db so the
live server thread sees it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
STAFF_PASSWORD = "browser-pass-123"


@pytest.fixture
def requested_urls() -> list[str]:
    return []


@pytest.fixture
def page(browser: Any, live_server: Any, transactional_db: None, requested_urls: list[str]) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
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


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
