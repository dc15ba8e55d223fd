"""Sortable leaderboard columns (#12 item 6): ?sort=<column> ascending, ?sort=-<column> descending, headers
that link to the next order with their aria-sort state, and a 400 naming an unknown column."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import make_generation, make_generator, make_judge, make_judgment, make_procedure

pytestmark = pytest.mark.django_db

FAIL = [("Misses a step.", [1], [1])]


@pytest.fixture
def board() -> dict[str, Any]:
    """One judge, three generators over four examples: How2Scores 75 %, 25 % and 50 % (in model order)."""
    judge = make_judge(model="org/judge")
    procedures = [make_procedure(goal=f"Goal {i}") for i in range(4)]
    passes = {"alpha": 3, "bravo": 1, "charlie": 2}
    for model, n_pass in passes.items():
        generator = make_generator(model=model)
        for i, procedure in enumerate(procedures):
            make_judgment(
                generation=make_generation(generator=generator, procedure=procedure),
                judge=judge,
                failures=() if i < n_pass else FAIL,
            )
    return {"judge": judge}


def _models(client: Client, **params: str) -> list[str]:
    html = client.get(reverse("judging:leaderboard"), params).content.decode()
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.findall(r">(alpha|bravo|charlie)</a>", body)


def test_the_default_order_is_the_ranking(admin_client: Client, board: dict) -> None:
    assert _models(admin_client) == ["alpha", "charlie", "bravo"]


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("how2score", ["bravo", "charlie", "alpha"]),
        ("-how2score", ["alpha", "charlie", "bravo"]),
        ("generator", ["alpha", "bravo", "charlie"]),
        ("-generator", ["charlie", "bravo", "alpha"]),
        ("with_failures", ["alpha", "charlie", "bravo"]),
        ("-rank", ["bravo", "charlie", "alpha"]),
    ],
)
def test_it_sorts_by_the_column_asked(
    admin_client: Client, board: dict, sort: str, expected: list[str]
) -> None:
    assert _models(admin_client, sort=sort) == expected


def test_headers_link_to_the_next_order_and_say_the_current_one(admin_client: Client, board: dict) -> None:
    html = admin_client.get(reverse("judging:leaderboard"), {"sort": "-how2score"}).content.decode()
    header = re.search(r'<th[^>]*aria-sort="descending"[^>]*>.*?</th>', html, re.S)
    assert header is not None and "How2Score" in header.group(0)
    assert 'href="?sort=how2score"' in header.group(0)  # a second click reverses
    assert 'href="?sort=generator"' in html and 'href="?sort=-strict"' in html  # names up, figures down
    assert html.count('aria-sort="descending"') == 1


def test_sorting_keeps_the_judge_filter(admin_client: Client, board: dict) -> None:
    judge_id = board["judge"].judge_id
    html = admin_client.get(reverse("judging:leaderboard"), {"judge": judge_id}).content.decode()
    assert f'href="?judge={judge_id}&amp;sort=-how2score"' in html


def test_an_unknown_column_is_refused_by_name(admin_client: Client, board: dict) -> None:
    response = admin_client.get(reverse("judging:leaderboard"), {"sort": "-price"})
    assert response.status_code == 400 and b"'-price' is not a column" in response.content
