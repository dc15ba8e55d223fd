"""Playwright helpers: headless Debian Chromium against pytest-django's live_server. The fixtures (`browser`,
`page`, `staff_page`, `new_tab`) live in tests/conftest.py, so every test package has them (a second sync
Playwright in the same session would fail); the launch options, window sizes and `screenshot` live here.

The sync Playwright API runs an event loop in the test thread, so Django's async-safety check must be relaxed
(DJANGO_ALLOW_ASYNC_UNSAFE) for the test's own database calls. Data is created with transactional_db so the
live server thread sees it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
PROLIFIC = "https://app.prolific.com/"  # the completion redirect's host, answered locally by `new_tab`
DESKTOP = {"width": 1440, "height": 900}
LAPTOP = {"width": 1366, "height": 800}
PHONE = {"width": 390, "height": 844}
# How far the page scrolls sideways: 0 when it fits the window.
PAGE_OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
# How far a scroll box (a table's or a chart's) scrolls sideways: 0 when its content fits.
BOX_OVERFLOW = (
    "(selector) => { const el = document.querySelector(selector); return el.scrollWidth - el.clientWidth; }"
)


def screenshot(page: Any, name: str) -> Path:
    """A full-page PNG at test-artifacts/screenshots/<name>.png (`name` may name a folder: "annotation/x")."""
    path = SCREENSHOTS / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path


def both_widths(page: Any, name: str) -> None:
    """Screenshots of the page at 1440 and 390 px (`name`-desktop, `name`-phone); it must not scroll sideways
    at either. The window is left at 1440 px."""
    for size, label in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(size)
        screenshot(page, f"{name}-{label}")
        overflow = page.evaluate(PAGE_OVERFLOW)
        assert overflow <= 0, f"{name}: the page scrolls sideways by {overflow} px at {size['width']} px"
    page.set_viewport_size(DESKTOP)
