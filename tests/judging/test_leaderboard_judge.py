"""The leaderboard one judge at a time (#19 item 15): which judge the page opens on, ?judge=all for every
judge with demo models last, the CSV link that follows what is shown, the API and CSV defaults unchanged;
and the forest plot: every row's point and 95 % Wilson interval on one shared axis."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from judging import charts, selectors
from judging.models import Judge
from tests.factories import make_generation, make_generator, make_judge, make_judgment, make_procedure

FAIL = [("Skips a step", [1], [1])]


def judged(judge: Judge, n: int, *, model: str = "model-a", failing: int = 0) -> None:
    """n judgments by `judge` of one generator's generations, the first `failing` with a failure."""
    generator = make_generator(model=model)
    for i in range(n):
        generation = make_generation(generator=generator, procedure=make_procedure())
        make_judgment(generation=generation, judge=judge, failures=FAIL if i < failing else ())


def default_of() -> Judge | None:
    return selectors.default_judge(list(Judge.objects.by_model()))


# --- the default judge ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_opens_on_the_papers_how2judge_over_a_judge_with_more_judgments() -> None:
    busy, paper = make_judge(model="openai/gpt-4.1"), make_judge(model="how2judge (as printed in the paper)")
    judged(busy, 3)
    judged(paper, 1)
    assert default_of() == paper


@pytest.mark.django_db
def test_it_takes_the_real_judge_with_most_judgments_without_how2judge() -> None:
    few, many = make_judge(model="a-judge"), make_judge(model="b-judge")
    demo = make_judge(model="HuggingFaceTB/SmolLM2-135M-Instruct", is_demo=True)
    judged(few, 1)
    judged(many, 2)
    judged(demo, 4)
    assert default_of() == many


@pytest.mark.django_db
def test_it_takes_a_demo_model_only_when_no_real_judge_has_judged() -> None:
    make_judge(model="how2everything/how2judge")  # configured, never run
    demo = make_judge(model="HuggingFaceTB/SmolLM2-135M-Instruct", is_demo=True)
    judged(demo, 1)
    assert default_of() == demo


@pytest.mark.django_db
def test_it_has_no_default_without_judgments() -> None:
    make_judge(model="how2everything/how2judge")
    assert default_of() is None


# --- the page -------------------------------------------------------------------------------------------


@pytest.fixture
def board() -> dict[str, Any]:
    """How2Judge and a demo model over two generators (model-a 2 of 4 failing, model-b none of 4)."""
    paper = make_judge(model="how2everything/how2judge", judge_id="how2judge")
    demo = make_judge(model="HuggingFaceTB/SmolLM2-135M-Instruct", judge_id="aa-smollm", is_demo=True)
    for judge in (demo, paper):
        generators = [make_generator(model="model-a"), make_generator(model="model-b")]
        for generator, failing in zip(generators, (2, 0), strict=True):
            for i in range(4):
                generation = make_generation(generator=generator, procedure=make_procedure())
                make_judgment(generation=generation, judge=judge, failures=FAIL if i < failing else ())
    return {"paper": paper, "demo": demo}


def _table(html: str) -> str:
    return html.split('<div id="leaderboard">', 1)[1]


def _csv_link(html: str) -> str:
    found = re.search(r'href="([^"]*leaderboard\.csv[^"]*)"', html)
    assert found is not None
    return found.group(1)


@pytest.mark.django_db
def test_the_page_shows_the_default_judge_alone_and_its_csv_link_follows(
    admin_client: Client, board: dict
) -> None:
    html = admin_client.get(reverse("judging:leaderboard")).content.decode()
    assert "Judged by <strong>how2everything/how2judge</strong>" in html
    assert board["demo"].judge_id not in _table(html)
    assert '<option value="how2judge" selected>' in html
    assert _csv_link(html) == reverse("judging:leaderboard_csv") + "?judge=how2judge"
    assert 'href="?sort=-how2score"' in html  # sorting keeps the default (no judge pinned in the link)


@pytest.mark.django_db
def test_all_judges_puts_the_demo_model_last_and_the_csv_link_takes_every_judge(
    admin_client: Client, board: dict
) -> None:
    response = admin_client.get(reverse("judging:leaderboard"), {"judge": "all"})
    html = response.content.decode()
    judges = [line.row.judge_id for line in response.context["lines"]]
    assert judges == [
        "how2judge",
        "how2judge",
        "aa-smollm",
        "aa-smollm",
    ]  # by model, the demo model sorts first
    assert '<option value="all" selected>' in html
    assert _csv_link(html) == reverse("judging:leaderboard_csv")
    assert 'href="?judge=all&amp;sort=-how2score"' in html
    assert "ranks are per judge" in html


@pytest.mark.django_db
def test_an_asked_judge_without_judgments_offers_every_judge(admin_client: Client, board: dict) -> None:
    idle = make_judge(model="idle-judge")
    html = admin_client.get(reverse("judging:leaderboard"), {"judge": idle.judge_id}).content.decode()
    assert "No judgments for this judge" in html and "?judge=all" in html


@pytest.mark.django_db
def test_the_csv_and_the_api_still_list_every_judge_by_default(admin_client: Client, board: dict) -> None:
    def csv_judges(**params: str) -> list[str]:
        response = admin_client.get(reverse("judging:leaderboard_csv"), params)
        return [row["judge_id"] for row in csv.DictReader(io.StringIO(response.content.decode()))]

    assert sorted(set(csv_judges())) == ["aa-smollm", "how2judge"]
    assert csv_judges(judge="all") == csv_judges()
    assert set(csv_judges(judge="how2judge")) == {"how2judge"}
    api = admin_client.get(reverse("api:leaderboard")).json()["results"]
    assert sorted({row["judge_id"] for row in api}) == ["aa-smollm", "how2judge"]


@pytest.mark.django_db
def test_the_heatmap_opens_on_the_same_judge(admin_client: Client, board: dict) -> None:
    html = admin_client.get(reverse("judging:topic_heatmap")).content.decode()
    assert "judged by how2everything/how2judge" in html


@pytest.mark.django_db
def test_each_row_draws_its_point_and_interval_on_the_shared_axis(admin_client: Client, board: dict) -> None:
    response = admin_client.get(reverse("judging:leaderboard"))
    html = response.content.decode()
    axis = response.context["axis"]
    assert axis.ticks[0].label == "0%" and axis.ticks[-1].label == "100%"
    # model-a: 2 of 4 pass, Wilson 15.0-85.0; model-b: 4 of 4, 51.0-100.0
    assert "How2Score 50.0% (95 % Wilson interval 15.0-85.0, n = 4)" in html
    assert "How2Score 100.0% (95 % Wilson interval 51.0-100.0, n = 4)" in html
    assert html.count('<svg class="forest"') == 2
    first = response.context["lines"][0].mark
    assert (first.low, first.point, first.high) == (51.01, 100.0, 100.0)


# --- the forest plot's axis -----------------------------------------------------------------------------


def score(passed: int, failed: int) -> selectors.How2Score:
    return selectors.How2Score(
        total=passed + failed, n_parse_failed=0, n_with_failures=failed, sum_failures=failed
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 400)), min_size=1, max_size=12))
def test_the_axis_holds_every_interval_and_every_mark_lies_on_it(counts: list[tuple[int, int]]) -> None:
    scores = [score(p, f) for p, f in counts]
    axis = charts.forest_axis(scores)
    assert 0 <= axis.low < axis.high <= 100 and axis.high - axis.low >= 10
    xs = [t.x for t in axis.ticks]
    assert xs[0] == 0 and xs[-1] == 100 and xs == sorted(set(xs)) and 2 <= len(xs) <= 7
    for s in scores:
        mark = axis.mark(s)
        if s.interval_percent is None:
            assert mark is None
            continue
        low, high = s.interval_percent
        assert axis.low <= low + 1e-9 and high <= axis.high + 1e-9
        assert mark is not None and 0 <= mark.low <= mark.point <= mark.high <= 100


def test_a_narrow_range_is_drawn_on_ten_points() -> None:
    axis = charts.forest_axis([score(4990, 10), score(5000, 0)])  # 99.8 % and 100 %
    assert (axis.low, axis.high) == (90.0, 100.0)
    assert [t.label for t in axis.ticks] == ["90%", "95%", "100%"]
    assert [t.minor for t in axis.ticks] == [False, False, False]  # ends and the middle keep their labels


def test_ticks_between_the_ends_lose_their_labels_on_a_narrow_plot() -> None:
    axis = charts.forest_axis([score(0, 10), score(10, 0)])
    assert [t.label for t in axis.ticks] == ["0%", "20%", "40%", "60%", "80%", "100%"]
    assert [t.minor for t in axis.ticks] == [False, True, True, True, True, False]
