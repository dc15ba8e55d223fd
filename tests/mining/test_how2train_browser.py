"""The Mining page's How2Bench / How2Train section in headless Chromium at 1440 and 390 px, and its
download link answering the same rows export_how2train writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mining.models import Split
from tests.browser.conftest import both_widths
from tests.factories import make_procedure

pytestmark = pytest.mark.browser


def test_it_shows_the_splits_and_downloads_how2train(staff_page: Any, live_server: Any) -> None:
    make_procedure(goal="A bench goal", split=Split.BENCH)
    train = make_procedure(goal='Fold a "crane" 🏔', split=Split.TRAIN)
    staff_page.goto(f"{live_server.url}/mining/")
    section = staff_page.locator("#how2train")
    assert "1 procedure in bench, 1 in train, 0 in the pool." in section.inner_text()
    both_widths(staff_page, "mining-how2train")
    with staff_page.expect_download() as download:
        section.get_by_role("link", name="How2Train, open-instruct JSONL").click()
    lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    assert [json.loads(json.loads(line)["ground_truth"]) for line in lines] == [
        {
            "procedure_id": train.pk,
            "goal": 'Fold a "crane" 🏔',
            "resources": train.resources,
            "steps": train.steps,
        }
    ]
