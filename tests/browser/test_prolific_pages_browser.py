"""The study page's Prolific section and its pages in Chromium at 1440 and 390 px, against the fake
Prolific: the draft form, the section once the study is on Prolific, the confirmation before publishing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.annotation.conftest import make_study
from tests.browser.conftest import both_widths
from tests.prolific_server import FakeProlific

pytestmark = pytest.mark.browser


def test_the_prolific_pages(staff_page: Any, live_server: Any, settings: Any) -> None:
    with FakeProlific(token="browser-token") as prolific:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = prolific.base_url, "browser-token"
        study = make_study(n_items=4, k=2, items_per_participant=2)
        page = staff_page
        page.goto(f"{live_server.url}/studies/{study.slug}/prolific/draft/")
        page.get_by_text("Create the study on Prolific").first.wait_for()
        both_widths(page, "prolific/draft")
        page.fill("#id_description", "Read a goal and a procedure; list its critical failures.")
        page.fill("#id_reward", "250")
        page.click("button[type=submit].btn-primary")
        page.get_by_text("Draft study").first.wait_for()
        assert len(prolific.state.studies) == 1
        both_widths(page, "prolific/study-section")
        page.get_by_role("link", name="Publish", exact=True).click()
        page.get_by_text("What will happen on Prolific").wait_for()
        both_widths(page, "prolific/confirm-publish")
        page.click("button[type=submit].btn-primary")
        page.get_by_text("the study is now ACTIVE").wait_for()
        prolific.submit(next(iter(prolific.state.studies)), participant_id="a" * 24)
        page.get_by_role("link", name="Review submissions").click()
        page.get_by_text("Review submissions on Prolific").wait_for()
        both_widths(page, "prolific/review")
