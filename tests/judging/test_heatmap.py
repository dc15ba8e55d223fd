"""How2Score by topic as a heatmap: numbers from the by-topic selector, empty cells, strict toggle, CSV."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from judging import charts, selectors
from tests.factories import (
    make_generation,
    make_generator,
    make_judgment,
    make_procedure,
    make_scored_world,
    make_user,
)

pytestmark = pytest.mark.django_db

X = "\u00d7"  # the multiplication sign of the cell titles


@pytest.fixture
def world() -> dict[str, Any]:
    world = make_scored_world()
    # A third generator judged by judge-x in "Health" only: its "Religion" cell stays empty.
    lonely = make_generator(model="model-c")
    make_judgment(
        generation=make_generation(generator=lonely, procedure=make_procedure(goal="Lonely", topic="Health")),
        judge=world["judges"][0],
        failures=[("<script>alert(1)</script>", [1], [1])],
    )
    world["lonely"] = lonely
    return world


def test_it_puts_the_by_topic_selector_numbers_in_the_cells(world: dict) -> None:
    judge_x = world["judges"][0]
    rows = selectors.how2score_by_topic(judge_ids=[judge_x.judge_id])
    for strict in (False, True):
        grid = charts.heatmap(rows, judge_id=judge_x.judge_id, strict=strict)
        assert grid.topics == ["Health", "Religion"]
        cells = {(c.generator_id, c.topic): c for row in grid.rows for c in row.cells}
        assert len(cells) == 3 * 2
        for r in rows:
            cell = cells[(r.generator_id, r.topic)]
            expected = r.score.strict_how2score_percent if strict else r.score.how2score_percent
            n = r.score.total if strict else r.score.n_examples
            assert cell.n(strict) == n
            assert cell.percent(strict) == (pytest.approx(expected) if n else None)
        empty = cells[(world["lonely"].generator_id, "Religion")]
        assert empty.score is None and empty.percent(strict) is None and empty.n(strict) == 0


def test_it_orders_generators_best_overall_first(world: dict) -> None:
    judge_x = world["judges"][0]
    grid = charts.heatmap(
        selectors.how2score_by_topic(judge_ids=[judge_x.judge_id]), judge_id=judge_x.judge_id
    )
    overall = {
        r.generator_id: r.score.how2score
        for r in selectors.how2score_leaderboard(judge_ids=[judge_x.judge_id])
    }
    assert [r.generator_id for r in grid.rows] == sorted(overall, key=lambda g: -overall[g])
    assert [r.overall.how2score for r in grid.rows] == [overall[r.generator_id] for r in grid.rows]


def test_it_draws_the_heatmap_as_svg_with_n_in_each_title(admin_client: Client, world: dict) -> None:
    judge_x = world["judges"][0]
    response = admin_client.get(reverse("judging:topic_heatmap"), {"judge": judge_x.judge_id})
    html = response.content.decode()
    assert response.status_code == 200 and "<svg" in html and 'role="img"' in html
    assert "How2Score by topic, judged by org/judge-x" in html
    # model-a by judge-x, Health: two scored examples, one with a failure.
    # 1 of 2 without a failure: the 95 % Wilson interval is 9.45-90.55 % (scipy's binomtest agrees)
    assert f"model-a {X} Health: How2Score 50.0% (95 % CI 9.5-90.5, n = 2)" in html
    # model-a by judge-x, Religion: its only example is a parse failure, so there is no h2e score.
    assert f"model-a {X} Religion: no scored examples (n = 0)" in html
    assert f"model-c {X} Religion: no scored examples (n = 0)" in html
    assert "<script" not in html.split("<main", 1)[1].split("</main>", 1)[0]


def test_it_switches_to_the_strict_score(admin_client: Client, world: dict) -> None:
    judge_x = world["judges"][0]
    html = admin_client.get(
        reverse("judging:topic_heatmap"), {"judge": judge_x.judge_id, "score": "strict"}
    ).content.decode()
    assert f"model-a {X} Religion: strict How2Score 0.0% (95 % CI 0.0-79.3, n = 1)" in html
    assert 'value="strict" checked' in html


def test_it_picks_a_judge_that_is_not_a_demo_model_by_default(admin_client: Client, world: dict) -> None:
    html = admin_client.get(reverse("judging:topic_heatmap")).content.decode()
    assert "judged by org/judge-x" in html


def test_it_renders_only_the_heatmap_fragment_for_htmx(admin_client: Client, world: dict) -> None:
    judge_y = world["judges"][1]
    response = admin_client.get(
        reverse("judging:topic_heatmap"), {"judge": judge_y.judge_id}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="heatmap">') and "<html" not in html
    assert "judged by judge-y" in html and "demo model" in html
    assert "HX-Request" in response["Vary"]


def test_it_says_so_for_an_unknown_judge(admin_client: Client, world: dict) -> None:
    html = admin_client.get(reverse("judging:topic_heatmap"), {"judge": "<b>nope</b>"}).content.decode()
    assert "No judge “&lt;b&gt;nope&lt;/b&gt;”" in html


def test_it_shows_an_empty_state_without_judgments(admin_client: Client) -> None:
    assert "No judgments yet" in admin_client.get(reverse("judging:topic_heatmap")).content.decode()


def test_it_downloads_the_heatmap_as_csv(admin_client: Client, world: dict) -> None:
    judge_x = world["judges"][0]
    response = admin_client.get(reverse("judging:topic_heatmap_csv"), {"judge": judge_x.judge_id})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 6 and {r["judge_id"] for r in rows} == {judge_x.judge_id}
    by_key = {(r["generator_id"], r["topic"]): r for r in rows}
    for r in selectors.how2score_by_topic(judge_ids=[judge_x.judge_id]):
        row = by_key[(r.generator_id, r.topic)]
        assert int(row["n"]) == r.score.n_examples
        if r.score.n_examples:
            assert float(row["how2score_percent"]) == pytest.approx(r.score.how2score_percent)
    assert by_key[(world["lonely"].generator_id, "Religion")]["how2score_percent"] == ""


def test_it_keeps_the_heatmap_to_staff(client: Client, world: dict) -> None:
    for url in (reverse("judging:topic_heatmap"), reverse("judging:topic_heatmap_csv")):
        assert client.get(url).status_code == 302
    client.force_login(make_user(is_staff=False))
    for url in (reverse("judging:topic_heatmap"), reverse("judging:topic_heatmap_csv")):
        assert client.get(url).status_code == 403


def test_it_refuses_posts_to_the_heatmap(admin_client: Client) -> None:
    assert admin_client.post(reverse("judging:topic_heatmap")).status_code == 405
    assert admin_client.post(reverse("judging:topic_heatmap_csv")).status_code == 405


def test_it_draws_the_heatmap_in_few_queries(
    admin_client: Client, world: dict, django_assert_num_queries: Any
) -> None:
    # session, user, judges, which have judgments (the default judge), the by-topic aggregate, generator
    # names, judge names
    with django_assert_num_queries(7):
        admin_client.get(reverse("judging:topic_heatmap"))


def test_it_colours_low_scores_red_and_high_scores_blue() -> None:
    assert charts.score_colour(0.0) == "#b2182b" and charts.score_colour(1.0) == "#2166ac"
    assert charts.score_colour(0.5) == "#f7f7f7" and charts.score_colour(2.0) == "#2166ac"
    assert charts.text_colour("#b2182b") == "#ffffff" and charts.text_colour("#f7f7f7") == "#111111"


def test_each_cell_opens_the_failures_of_that_generator_topic_and_judge(
    admin_client: Client, world: dict
) -> None:
    judge = world["judges"][0]
    response = admin_client.get(reverse("judging:topic_heatmap"), {"judge": judge.judge_id})
    html = response.content.decode()
    gen_a = world["generators"][0]
    link = (
        reverse("failures:failure_list")
        + f"?topic=Health&amp;generator={gen_a.generator_id}&amp;judge={judge.judge_id}&amp;source=judge"
    )
    assert f'href="{link}"' in html
    # The link opens a browser that lists exactly that cell's judge failures.
    target = admin_client.get(
        reverse("failures:failure_list"),
        {"topic": "Health", "generator": gen_a.generator_id, "judge": judge.judge_id, "source": "judge"},
    )
    assert target.status_code == 200 and "Skips removing the plant" in target.content.decode()
    # The empty "Religion" cell of the lonely generator links nowhere.
    lonely = world["lonely"].generator_id
    assert f"topic=Religion&amp;generator={lonely}" not in html
