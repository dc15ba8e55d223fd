"""The admin's "Embed the texts without a vector" in Chromium at 1440 and 390 px: the models' list, the
action's form (sources, device) and the job it starts, with screenshots."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from h2e_site.embeddings.job_kinds import EMBED
from h2e_site.embeddings.models import EmbeddingModel
from h2e_site.jobs.models import Job
from tests.browser.conftest import DESKTOP, PAGE_OVERFLOW, PHONE, screenshot

pytestmark = pytest.mark.browser


def test_the_embed_action_from_the_admin(staff_page: Any, live_server: Any) -> None:
    researcher = get_user_model().objects.get(username="researcher")  # staff_page's user
    for codename in ("view_embeddingmodel", "add_job"):
        researcher.user_permissions.add(Permission.objects.get(codename=codename))
    EmbeddingModel.objects.create(name="sentence-transformers/all-MiniLM-L6-v2", revision="r", dimension=384)
    page = staff_page
    page.goto(f"{live_server.url}/admin/embeddings/embeddingmodel/")
    page.check("input.action-select")
    page.select_option("select[name=action]", "embed_missing")
    page.click("button[name=index]")
    page.get_by_text("Embed the texts without a vector").first.wait_for()
    for size, name in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(size)
        screenshot(page, f"embeddings/embed-action-{name}")
        assert page.evaluate(PAGE_OVERFLOW) <= 0, f"the action's form scrolls sideways at {size['width']} px"
    page.set_viewport_size(DESKTOP)
    page.check("input[name=sources][value=procedures]")
    page.click("input[type=submit].default")
    page.wait_for_url(f"{live_server.url}/admin/embeddings/embeddingmodel/")
    assert Job.objects.get(kind=EMBED).parameters["sources"] == ["procedures"]
