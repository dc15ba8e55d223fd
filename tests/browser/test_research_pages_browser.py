"""Researcher pages (issue #5) in Chromium: heatmap, judges' rank correlations, failure browser, and the
generation page opened from a failure. Screenshots go to test-artifacts/screenshots/research-*.png."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import SCREENSHOTS, screenshot
from tests.factories import make_generation, make_generator, make_judge, make_judgment, make_procedure
from tests.judging.test_failures import make_annotation, make_study

pytestmark = pytest.mark.browser

TOPICS = ["Food & Dining", "Health", "Home & Hobbies", "Sports & Fitness", "Transportation"]
GENERATORS = [
    "openai/gpt-4.1",
    "allenai/OLMo-3-7B-Instruct",
    "Qwen/Qwen3-8B",
    "meta-llama/Llama-3.1-8B-Instruct",
]


def viewport_screenshot(page: Any, name: str) -> None:
    """The visible part only: long lists are unreadable as one full-page image."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def research_world() -> dict[str, Any]:
    """Four generators x five topics x three procedures; two real judges that mostly agree, one demo judge.

    Judge "how2judge" fails generator i on (i + topic) % 3 of each topic's three procedures; "gpt-5" is a
    little harsher on OLMo; the demo judge judges two generators only. Qwen has no Transportation generation.
    """
    judges = [
        make_judge(model="how2everything/how2judge", judge_id="how2judge"),
        make_judge(model="openai/gpt-5", judge_id="gpt5"),
        make_judge(model="HuggingFaceTB/SmolLM2-135M-Instruct", judge_id="smollm", is_demo=True),
    ]
    procedures = {
        t: [
            make_procedure(
                goal=f"{t}: task {k}",
                topic=t,
                steps=[f"Reference step {s} for {t} task {k}" for s in range(1, 6)],
            )
            for k in range(3)
        ]
        for t in TOPICS
    }
    generators = [make_generator(model=m, generator_id=f"g{i:011d}") for i, m in enumerate(GENERATORS)]
    first_generation = None
    for i, generator in enumerate(generators):
        for j, topic in enumerate(TOPICS):
            if generator.model == "Qwen/Qwen3-8B" and topic == "Transportation":
                continue
            for k, procedure in enumerate(procedures[topic]):
                generation = make_generation(
                    generator=generator,
                    procedure=procedure,
                    predicted_steps=[f"Generated step {s} by {generator.model}" for s in range(1, 6)],
                )
                first_generation = first_generation or generation
                failing = k < (i + j) % 3
                fails = [(f"{generator.model} skips reference step {k + 2} in '{topic}'", [k + 2], [k + 1])]
                make_judgment(generation=generation, judge=judges[0], failures=fails if failing else [])
                harsher = failing or (generator.model.startswith("allenai") and k == 2)
                make_judgment(generation=generation, judge=judges[1], failures=fails * 2 if harsher else [])
                if i < 2:
                    make_judgment(generation=generation, judge=judges[2], failures=fails if k == 0 else [])
    return {"judges": judges, "generators": generators, "first_generation": first_generation}


def test_it_shows_the_by_topic_heatmap_and_switches_judge_and_score(
    staff_page: Any, live_server: Any
) -> None:
    research_world()
    staff_page.goto(f"{live_server.url}/leaderboard/topics/")
    heatmap = staff_page.locator("svg.heatmap-chart")
    assert heatmap.is_visible()
    assert "judged by how2everything/how2judge" in (heatmap.locator("title").first.text_content() or "")
    assert staff_page.locator(".heatmap-cell").count() == 4 * 5
    assert staff_page.locator(".heatmap-cell.is-empty").count() == 1
    assert "no scored examples" in (staff_page.locator(".heatmap-cell.is-empty title").text_content() or "")
    screenshot(staff_page, "research-heatmap")

    staff_page.select_option("#heatmap-judge", "gpt5")
    staff_page.wait_for_url("**/leaderboard/topics/?judge=gpt5*")
    staff_page.wait_for_function(
        "document.querySelector('svg.heatmap-chart title').textContent.includes('openai/gpt-5')"
    )
    staff_page.check("input[name=score][value=strict]")
    staff_page.wait_for_url("**score=strict*")
    staff_page.wait_for_function(
        "document.querySelector('svg.heatmap-chart title').textContent.startsWith('strict How2Score')"
    )
    assert staff_page.locator("#heatmap-judge").count() == 1  # only the fragment was swapped
    screenshot(staff_page, "research-heatmap-strict")


def test_it_shows_the_judges_rank_correlation_matrix(staff_page: Any, live_server: Any) -> None:
    research_world()
    staff_page.goto(f"{live_server.url}/judges/rank-correlation/")
    cells = staff_page.locator(".rank-matrix td.rank-cell")
    assert cells.count() == 9
    assert staff_page.locator(".rank-matrix .rank-self").count() == 3
    text = staff_page.inner_text(".rank-matrix")
    assert "n = 4" in text and "n = 2" in text
    screenshot(staff_page, "research-rank-correlation")
    staff_page.click("text=Strict")
    staff_page.wait_for_url("**/judges/rank-correlation/?score=strict")
    assert "strict How2Score" in staff_page.inner_text(".lede")


def test_it_browses_filters_and_opens_failures(staff_page: Any, live_server: Any) -> None:
    world = research_world()
    generation = world["first_generation"]
    study = make_study("pilot-2026")
    make_annotation(
        generation,
        study=study,
        failures=[("Human: the <script>alert(1)</script> step order is unsafe", [3], [2])],
    )
    make_annotation(generation, study=study)
    staff_page.goto(f"{live_server.url}/failures/")
    assert staff_page.locator(".topic-bars .topic-bar").count() == 5
    assert staff_page.locator(".failure-row").count() == 50
    assert staff_page.locator("a[rel=next]").is_visible()
    viewport_screenshot(staff_page, "research-failures")

    staff_page.select_option("#failure-topic", "Health")
    staff_page.wait_for_url("**/failures/?*topic=Health*")
    staff_page.wait_for_function(
        "[...document.querySelectorAll('.failure-row .topic-tag')].every(t => t.textContent === 'Health')"
    )
    staff_page.select_option("#failure-judge", "gpt5")
    staff_page.wait_for_url("**judge=gpt5*")
    staff_page.wait_for_function(
        "document.querySelectorAll('.failure-row').length > 0 && [...document.querySelectorAll("
        "'.failure-row-head')].every(h => h.textContent.includes('openai/gpt-5'))"
    )
    viewport_screenshot(staff_page, "research-failures-filtered")

    staff_page.goto(f"{live_server.url}/failures/?source=human")
    row = staff_page.locator(".failure-row-human")
    assert row.count() == 1
    assert "<script>alert(1)</script>" in row.locator(".failure-text").inner_text()  # shown as text
    staff_page.fill("#failure-q", "unsafe")
    staff_page.wait_for_url("**q=unsafe*")
    row.locator(".failure-text a").click()
    staff_page.wait_for_url(f"**/generations/{generation.pk}/?failure=human-*")
    selected = staff_page.locator(".failure.is-selected")
    assert selected.count() == 1 and "Human" in staff_page.inner_text(".annotation-card")
    assert "is-linked" in (staff_page.locator("#l1-step-3").get_attribute("class") or "")
    assert "is-linked" in (staff_page.locator("#l2-step-2").get_attribute("class") or "")
    selected.hover()
    staff_page.mouse.move(0, 0)  # hovering away keeps the failure chosen in the URL highlighted
    assert "is-linked" in (staff_page.locator("#l1-step-3").get_attribute("class") or "")
    viewport_screenshot(staff_page, "research-generation-from-failure")
    staff_page.locator("#human-annotations").scroll_into_view_if_needed()
    viewport_screenshot(staff_page, "research-generation-human-annotations")


def test_it_pages_failures_with_the_next_link(staff_page: Any, live_server: Any) -> None:
    research_world()
    staff_page.goto(f"{live_server.url}/failures/?source=judge")
    first = staff_page.locator(".failure-row").first.get_attribute("id")
    staff_page.click("a[rel=next]")
    staff_page.wait_for_url("**cursor=*")
    staff_page.wait_for_function(f"!document.getElementById('{first}')")
    assert staff_page.locator(".failure-row").count() > 0
    viewport_screenshot(staff_page, "research-failures-page-2")
