"""The study page's Prolific section and its pages in Chromium at 1440 and 390 px, against the fake
Prolific: the draft form, the section once the study is on Prolific, the confirmation before publishing, the
review's preview (a screened-out participant offered by name), and a sync job's live row."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from annotation.base.models import Stage
from annotation.flow import services
from tests.annotation.conftest import make_study, run_prolific_jobs
from tests.browser.conftest import both_widths
from tests.prolific_server import FakeProlific

pytestmark = pytest.mark.browser


def test_the_prolific_pages(staff_page: Any, live_server: Any, settings: Any) -> None:
    with FakeProlific(token="browser-token") as prolific:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = prolific.base_url, "browser-token"
        study = make_study(n_items=4, k=2, items_per_participant=2)
        researcher = User.objects.get(username="researcher")
        for codename in ("run_prolific_study", "pay_prolific_bonuses", "add_job"):
            researcher.user_permissions.add(Permission.objects.get(codename=codename))
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
        screened = services.participant_enter(
            study=study, prolific_pid="a" * 24, prolific_study_id="S", prolific_session_id="X", user_agent="t"
        )
        screened.stage = Stage.SCREENED_OUT
        screened.save(update_fields=["stage"])
        prolific.submit(next(iter(prolific.state.studies)), participant_id="a" * 24)
        page.get_by_role("link", name="Review submissions").click()
        page.get_by_text("Review submissions on Prolific").wait_for()
        both_widths(page, "prolific/review")
        page.check("input[name=submissions]")
        page.select_option("#id_action", "APPROVE")
        page.get_by_role("button", name="Preview").click()
        page.get_by_text("left out of this approval unless you name each").wait_for()
        both_widths(page, "prolific/review-preview")
        page.goto(f"{live_server.url}/studies/{study.slug}/")
        page.get_by_role("button", name="Sync submissions").click()
        page.locator(".job-row.job-queued").wait_for()
        both_widths(page, "prolific/sync-queued")
        run_prolific_jobs()
        page.locator(".job-row.job-succeeded").wait_for()  # the row refreshes itself
        both_widths(page, "prolific/sync-done")
