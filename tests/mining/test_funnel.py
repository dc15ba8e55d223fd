"""The funnel (selector, staff page, API) equals the stored outcomes; the drill-down lists rejections."""

from __future__ import annotations

from collections import defaultdict

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from mining.config import run_config_from_mapping
from mining.models import STAGE_ORDER, MiningRun, StageOutcome
from mining.runs import mine_job_run, mining_run_create
from mining.selectors import run_funnel
from tests.factories import make_user
from tests.llm_server import LoopbackLLM
from tests.mining.canned import canned_responder, loopback_config, make_document

pytestmark = pytest.mark.django_db

MARKERS = ["", "NOPROC", "GARBLE", "FEWSTEPS", "REPEAT", "BRAND", "FINALNO", ""]


@pytest.fixture
def run(llm_server: LoopbackLLM) -> MiningRun:
    for i, marker in enumerate(MARKERS):
        make_document(f"f-{i}", marker, topic="Health" if i % 2 else "Food & Dining")
    make_document("f-none", "", topic=None)
    llm_server.responder = canned_responder
    config = run_config_from_mapping(loopback_config(llm_server.base_url))
    run = mining_run_create(config=config, enqueue=False)
    mine_job_run(job_id=run.job_id or 0)
    return run


def expected_from_outcomes(run: MiningRun) -> dict[tuple[str, str], tuple[int, int, int, float]]:
    table: dict[tuple[str, str], list] = defaultdict(lambda: [0, 0, 0, 0.0])
    for outcome in StageOutcome.objects.filter(run=run).select_related("document__topic"):
        topic = outcome.document.topic.name if outcome.document.topic else "(no topic)"
        for key in ((topic, outcome.stage), ("All topics", outcome.stage)):
            cell = table[key]
            cell[0] += 1
            cell[1] += outcome.passed
            cell[2] += (outcome.prompt_tokens or 0) + (outcome.completion_tokens or 0)
            cell[3] += outcome.cost
    return {key: tuple(value) for key, value in table.items()}


def test_it_counts_the_funnel_from_the_stored_outcomes(run: MiningRun) -> None:
    funnel = run_funnel(run)
    expected = expected_from_outcomes(run)
    assert [row.topic for row in funnel.rows] == ["(no topic)", "Food & Dining", "Health"]
    assert [row.inputs for row in funnel.rows] == [1, 4, 4]
    for row in [*funnel.rows, funnel.total]:
        for cell in row.cells:
            processed, passed, tokens, cost = expected.get((row.topic, cell.stage), (0, 0, 0, 0.0))
            assert (cell.processed, cell.passed) == (processed, passed), (row.topic, cell.stage)
            assert cell.prompt_tokens + cell.completion_tokens == tokens
            assert cell.cost == pytest.approx(cost)
            assert cell.yield_percent == pytest.approx(100 * passed / row.inputs)
    total = {cell.stage: (cell.processed, cell.passed) for cell in funnel.total.cells}
    assert total["extraction"] == (9, 7)
    assert total["final_filter"] == (4, 3)
    assert funnel.total.cells[STAGE_ORDER.index("extraction")].errors == 1


def test_it_shows_the_funnel_page_to_staff(run: MiningRun, staff: Client) -> None:
    response = staff.get(reverse("admin:mining_miningrun_funnel", args=[run.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "How2Mine funnel" in html and "<html" in html
    assert "After LLM filter" in html and "Food &amp; Dining" in html
    assert "77.78%" in html  # 7 of 9 documents kept after extraction


def test_it_renders_only_the_table_for_htmx(run: MiningRun, staff: Client) -> None:
    response = staff.get(reverse("admin:mining_miningrun_funnel", args=[run.pk]), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="funnel"') and "<html" not in html
    assert "hx-trigger" not in html  # the run is finished: no polling


def test_it_refuses_outsiders_and_sends_anonymous_users_to_log_in(run: MiningRun) -> None:
    url = reverse("admin:mining_miningrun_funnel", args=[run.pk])
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    outsider = Client()
    outsider.force_login(make_user(is_staff=False))
    assert outsider.get(url).status_code == 403
    rejected = reverse("admin:mining_miningrun_rejections", args=[run.pk, "filter"])
    assert outsider.get(rejected).status_code == 403
    assert outsider.get(f"/api/mining/runs/{run.pk}/funnel/").status_code == 403


def test_it_refuses_other_methods(run: MiningRun, staff: Client) -> None:
    assert staff.post(reverse("admin:mining_miningrun_funnel", args=[run.pk])).status_code == 405
    assert (
        staff.post(reverse("admin:mining_miningrun_rejections", args=[run.pk, "filter"])).status_code == 405
    )


def test_it_lists_what_a_stage_rejected_with_the_reason(run: MiningRun, staff: Client) -> None:
    url = reverse("admin:mining_miningrun_rejections", args=[run.pk, "prefilter"])
    with CaptureQueriesContext(connection) as queries:
        response = staff.get(url)
    html = response.content.decode()
    assert response.status_code == 200
    assert "2 documents rejected" in html
    assert "f-3" in html and "3 steps, outside 5-15" in html
    assert "f-4" in html and "2-gram repetition 0.833 &gt;= 0.40" in html
    assert len(queries) <= 6
    health = staff.get(url, {"topic": "Health"}, HTTP_HX_REQUEST="true").content.decode()
    assert health.lstrip().startswith('<div id="rejections"')
    assert "f-3" in health and "f-4" not in health


def test_it_marks_failed_outcomes_in_the_drill_down(run: MiningRun, staff: Client) -> None:
    html = staff.get(
        reverse("admin:mining_miningrun_rejections", args=[run.pk, "extraction"])
    ).content.decode()
    assert "badge-error" in html and "unparsable output" in html
    assert staff.get(reverse("admin:mining_miningrun_rejections", args=[run.pk, "nope"])).status_code == 404


def test_it_serves_the_funnel_and_rejections_in_the_api(run: MiningRun, staff: Client) -> None:
    funnel = staff.get(f"/api/mining/runs/{run.pk}/funnel/").json()
    assert funnel["stages"] == list(STAGE_ORDER)
    total = {cell["stage"]: cell for cell in funnel["total"]["stages"]}
    assert (total["extraction"]["processed"], total["extraction"]["passed"]) == (9, 7)
    assert total["extraction"]["yield_percent"] == pytest.approx(77.7778)
    assert funnel["total"]["cost"] > 0
    rejected = staff.get(f"/api/mining/runs/{run.pk}/rejections/", {"stage": "filter"}).json()
    assert rejected["count"] == 1
    assert rejected["results"][0]["reason"] == "Named-entity focused: a branded product."
    assert staff.get(f"/api/mining/runs/{run.pk}/rejections/", {"stage": "x"}).status_code == 400
    runs = staff.get("/api/mining/runs/").json()
    assert runs["results"][0]["documents"] == 9


def test_it_polls_the_funnel_while_the_run_is_running(run: MiningRun, staff: Client) -> None:
    MiningRun.objects.filter(pk=run.pk).update(status="running")
    url = reverse("admin:mining_miningrun_funnel", args=[run.pk])
    html = staff.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert f'hx-get="{url}"' in html and 'hx-trigger="every 3s"' in html


def test_it_reads_the_funnel_in_a_fixed_number_of_queries(run: MiningRun, staff: Client) -> None:
    url = reverse("admin:mining_miningrun_funnel", args=[run.pk])
    staff.get(url)
    with CaptureQueriesContext(connection) as queries:
        assert staff.get(url).status_code == 200
    assert (
        len(queries) <= 7
    )  # session, user, run + job, inputs per topic, outcomes per topic/stage, per stage, procedures kept


def test_it_refuses_writes_in_the_api(run: MiningRun, staff: Client) -> None:
    assert staff.post("/api/mining/runs/").status_code == 405
    assert staff.post(f"/api/mining/runs/{run.pk}/funnel/").status_code == 405
    assert staff.delete(f"/api/mining/runs/{run.pk}/").status_code == 405


def test_it_shows_tokens_and_cost_by_stage(run: MiningRun, staff: Client) -> None:
    html = staff.get(reverse("admin:mining_miningrun_funnel", args=[run.pk])).content.decode()
    funnel = run_funnel(run)
    extraction = funnel.total.cells[0]
    assert f"${extraction.cost:.4f}" in html
    assert "Tokens (in / out) and cost by stage" in html
