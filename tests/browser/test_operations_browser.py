"""The admin's judging operations in Chromium (issue #11, 11-14): the Judgments list at 1,400 px filtered on
parse failures, the confirmation before re-judging, attaching a config to an imported judge, the judge
choice without twins. Screenshots in test-artifacts/screenshots/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User

from judging import judge_files
from tests.browser.conftest import screenshot
from tests.factories import make_generation, make_judgment
from tests.judging.runnable import make_runnable_generator, make_runnable_judge
from tests.judging.test_operations import imported_judge

pytestmark = pytest.mark.browser


def _superuser() -> None:
    User.objects.filter(username="researcher").update(is_superuser=True)


def test_it_shows_the_parse_failed_column_at_1400_px(staff_page: Any, live_server: Any) -> None:
    _superuser()
    judge = make_runnable_judge(model="organisation-with-a-long-name/judge-model-with-a-long-name-v2")
    generator = make_runnable_generator(model="organisation-with-a-long-name/generator-with-a-long-name-v3")
    for i in range(3):
        make_judgment(generation=make_generation(generator=generator), judge=judge, parse_failed=i == 0)
    staff_page.set_viewport_size({"width": 1400, "height": 900})
    staff_page.goto(f"{live_server.url}/admin/judging/judgment/?parse_failed__exact=1")
    header = staff_page.locator("th.column-parse_failed")
    header.wait_for()
    box = header.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1400, box
    assert staff_page.evaluate("document.documentElement.scrollWidth") <= 1400
    screenshot(staff_page, "admin-judgments-1400")
    # Re-judge parse failures: first what will happen
    staff_page.locator("#action-toggle").check()
    staff_page.select_option("select[name=action]", "rejudge_parse_failures")
    staff_page.click("button[name=index]")
    staff_page.get_by_role("heading", name="What will happen").wait_for()
    assert "1 request to" in staff_page.locator(".run-summary").inner_text()
    screenshot(staff_page, "admin-rejudge-confirm")


def test_it_attaches_a_config_to_an_imported_judge(
    staff_page: Any, live_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _superuser()
    judge = imported_judge()
    config = {
        "model": "org/judge-x",
        "backend": "openai",
        "provider": "openai",
        "base_url": "http://127.0.0.1:9/v1",
    }
    (tmp_path / "judge-x.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    monkeypatch.setattr(judge_files, "JUDGE_CONFIG_DIR", tmp_path)
    staff_page.goto(f"{live_server.url}/admin/judging/judge/")
    staff_page.locator(f"input[name=_selected_action][value='{judge.pk}']").check()
    staff_page.select_option("select[name=action]", "attach_config")
    staff_page.click("button[name=index]")
    staff_page.get_by_text("was imported: a config lets it judge here").wait_for()
    screenshot(staff_page, "admin-attach-config")
    staff_page.get_by_role("button", name="Attach it").click()
    staff_page.get_by_text("runs with configs/judges/judge-x.yaml from now on").wait_for()
    judge.refresh_from_db()
    assert judge.config["model"] == "org/judge-x"
    screenshot(staff_page, "admin-attach-config-done")
