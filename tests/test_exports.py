"""CSV exports for people (OWASP CSV injection neutralised, floats rounded), the leaderboard API's whole
table, and the favicon every browser asks for."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.templatetags.static import static
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from h2e_site.web import CSV_FORMULA_STARTS, SafeDictWriter, csv_value
from judging.models import Generator
from tests.annotation.conftest import make_study
from tests.annotation.test_hardening import failure_post, ready_item
from tests.annotation.test_views import url
from tests.factories import make_generation, make_judge, make_judgment, make_procedure, make_scored_world

pytestmark = pytest.mark.django_db
PAYLOADS = ['=HYPERLINK("http://x","y")', "+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "  =1+1"]


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def _is_safe(cell: str) -> bool:
    return not cell.lstrip(" ").startswith(CSV_FORMULA_STARTS)


@given(st.text(max_size=30))
def test_it_writes_no_text_cell_a_spreadsheet_would_run(text: str) -> None:
    out = io.StringIO()
    writer = SafeDictWriter(out, fieldnames=["cell"])
    writer.writerow({"cell": text})
    rows = _cells(out.getvalue())
    (cell,) = rows[0] if rows else [""]
    assert _is_safe(cell)
    expected = text.replace("\r\n", "\n").replace("\r", "\n")
    assert cell in (expected, "'" + expected)


def test_it_keeps_numbers_as_numbers_and_rounds_floats() -> None:
    assert csv_value(-3) == -3 and csv_value(42.00000000000001) == 42.0 and csv_value(1 / 3) == 0.3333
    assert csv_value("-3") == "'-3" and csv_value(None) is None and csv_value(True) is True


def test_it_neutralises_a_participants_comment_and_failure_in_the_study_csv(client: Client) -> None:
    study = make_study(n_items=1)
    assignment = ready_item(client, study)
    data = failure_post(**{"failure-0-description": PAYLOADS[0], "comments": "@SUM(A1)"})
    assert client.post(url("submit", study, assignment), data).status_code == 302
    staff = Client()
    staff.force_login(_staff())
    rows = _cells(staff.get(reverse("annotation:study_export_csv", args=[study.slug])).content.decode())
    header, row = rows[0], rows[1]
    record = dict(zip(header, row, strict=True))
    assert record["comments"] == "'@SUM(A1)"
    assert all(_is_safe(cell) for cell in row)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_it_neutralises_a_model_name_in_the_leaderboard_csvs(admin_client: Client, payload: str) -> None:
    generation = make_generation(procedure=make_procedure(topic="Health"))
    Generator.objects.filter(pk=generation.generator_id).update(model=payload)
    judge = make_judge(model=payload)
    make_judgment(generation=generation, judge=judge)
    for name in ("judging:leaderboard_csv", "judging:topic_heatmap_csv"):
        response = admin_client.get(reverse(name), {"judge": judge.judge_id})
        cells = [cell for row in _cells(response.content.decode()) for cell in row]
        assert any(cell == "'" + payload.replace("\r", "\n") for cell in cells), (name, cells)
        assert all(_is_safe(cell) for cell in cells)
    out = io.StringIO()
    call_command("leaderboard", format="csv", stdout=out)
    assert all(_is_safe(cell) for row in _cells(out.getvalue()) for cell in row)


def test_it_rounds_the_leaderboard_csv(admin_client: Client) -> None:
    make_scored_world()
    text = admin_client.get(reverse("judging:leaderboard_csv")).content.decode()
    numbers = [cell for row in _cells(text)[1:] for cell in row if cell.replace(".", "", 1).isdigit()]
    assert numbers and all(len(cell.split(".")[1]) <= 4 for cell in numbers if "." in cell)


def test_it_returns_the_whole_by_topic_table_in_one_page(admin_client: Client) -> None:
    judge = make_judge()
    for i in range(60):  # 60 topics x 1 generator: more than one default page of 50
        make_judgment(
            generation=make_generation(procedure=make_procedure(topic=f"Topic {i:02d}")), judge=judge
        )
    body: dict[str, Any] = admin_client.get("/api/leaderboard/by-topic/").json()
    assert body["count"] == len(body["results"]) >= 60 and body["next"] is None


def test_it_answers_the_browsers_favicon_request(client: Client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == static("favicon.svg")
    icon = finders.find("favicon.svg")
    assert icon and b"<svg" in Path(icon).read_bytes()
    page = client.get(reverse("login")).content.decode()
    assert 'rel="icon"' in page


def _staff() -> Any:
    from tests.factories import make_user

    user = make_user(is_staff=True)
    return user
