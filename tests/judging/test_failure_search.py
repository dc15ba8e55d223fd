"""The failure browser's text search (PostgreSQL): the matches come from the GIN index first, so a rare or
absent word never walks the whole ordered index, counts are exact up to SEARCH_COUNT_CAP matches, and a
broader search says its counts are lower bounds ("N+")."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.failures import reads as failures
from judging.models import CriticalFailure
from tests.judging import test_failures as browser
from tests.judging.test_failures import _all, _filters

world = browser.world  # the failure browser's fixture: two generators, three judges, a human study

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="full-text search is PostgreSQL's"),
]


def test_it_counts_a_search_exactly_below_the_cap(world: dict) -> None:
    filters = _filters(q="second")
    assert filters.text_hits is not None and len(filters.text_hits) == 6 and not filters.search_is_broad
    counts = failures.failure_counts_by_topic(filters=filters)
    assert {c.topic: (c.judge, c.human, c.at_least) for c in counts} == {
        "Health": (4, 0, False),
        "Religion": (2, 0, False),
    }
    judge_x = world["judges"][0].judge_id
    only_x = failures.failure_counts_by_topic(filters=_filters(q="second", judge=judge_x, topic="Religion"))
    assert [(c.topic, c.judge) for c in only_x] == [("Religion", 2)]


def test_it_reads_a_rare_word_among_its_matches_without_walking_the_index(world: dict) -> None:
    filters = _filters(q="misses")
    with CaptureQueriesContext(connection) as queries:
        rows = _all(filters)
    judge_sql = [q["sql"] for q in queries if "judging_criticalfailure" in q["sql"]]
    assert judge_sql and all("= ANY(" in sql and "to_tsvector" not in sql for sql in judge_sql)
    assert {r.description for r in rows} == set(
        CriticalFailure.objects.filter(description__contains="misses").values_list("description", flat=True)
    )
    assert _filters(q="absentword").text_hits == () and _all(_filters(q="absentword")) == []


def test_it_flags_the_counts_of_a_search_broader_than_the_cap(
    world: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(failures.search, "SEARCH_COUNT_CAP", 2)
    filters = _filters(q="second")
    assert filters.text_hits is not None and len(filters.text_hits) == 3 and filters.search_is_broad
    counts = failures.failure_counts_by_topic(filters=filters)
    exact = {"Health": 4, "Religion": 2}
    assert all(c.at_least and c.judge <= exact[c.topic] for c in counts)
    assert sum(c.judge for c in counts) == 3  # the 3 matches found, counted where they are
    assert {r.description for r in _all(filters)} == {f"x second on {i}" for i in range(3)}  # rows: all


def test_it_labels_capped_counts_on_the_page(
    admin_client: Client, world: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(failures.search, "SEARCH_COUNT_CAP", 2)
    html = admin_client.get(reverse("failures:failure_list"), {"q": "second"}).content.decode()
    assert "3+ failures match the filters" in html and "More than 2 judge failures match" in html
    assert "Critical failures per topic, at least" in html
    exact = admin_client.get(reverse("failures:failure_list"), {"q": "compost"}).content.decode()
    assert "1 failure matches the filters" in exact and "at least" not in exact


def test_a_text_search_of_human_failures_can_use_their_full_text_index() -> None:
    """annotation migration 0020: the GIN index on the human failures' descriptions has the expression the
    search filters on, so the planner can answer a word from the index (forced here: a test table is too small
    for the planner to prefer it on its own)."""
    from annotation.base.models import AnnotatedFailure
    from annotation.failures.search import _text_match

    query = _text_match(AnnotatedFailure.objects.order_by(), AnnotatedFailure._meta.db_table, "temperature")
    sql, params = query.values("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "annotated_failure_description_fts" in plan, plan
