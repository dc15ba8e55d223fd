"""`manage.py leaderboard` in its three formats."""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from judging.h2e_import import h2e_import
from judging.management.commands.leaderboard import COLUMNS
from tests.h2e_trees import GEN_A, JUDGE_A, JUDGE_B, build_standard_tree

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def imported(tmp_path: Path) -> None:
    assert h2e_import(out_root=build_standard_tree(tmp_path / "tree")).ok


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("leaderboard", *args, stdout=out)
    return out.getvalue()


def test_it_prints_json_objects_with_the_promised_keys() -> None:
    rows = json.loads(_run("--format", "json"))
    assert len(rows) == 6
    assert all(list(row) == COLUMNS for row in rows)
    row = next(
        r for r in rows if r["generator_id"] == GEN_A.generator_id and r["judge_id"] == JUDGE_A.judge_id
    )
    assert row["how2score_percent"] == pytest.approx(25.0)
    assert row["strict_how2score_percent"] == pytest.approx(100.0 / 6)
    assert (row["n_examples"], row["n_with_failures"], row["n_parse_failed"]) == (4, 3, 2)
    assert row["avg_failures_per_example"] == pytest.approx(3 / 4)


def test_it_filters_by_judge() -> None:
    rows = json.loads(_run("--format", "json", "--judge", JUDGE_B.judge_id))
    assert {r["judge_id"] for r in rows} == {JUDGE_B.judge_id} and len(rows) == 3


def test_it_prints_csv_with_a_header() -> None:
    rows = list(csv.DictReader(io.StringIO(_run("--format", "csv"))))
    assert list(rows[0]) == COLUMNS and len(rows) == 6

    # Grouped by judge (scores compare only under one judge), best generator first within each judge.
    judges = [r["judge_id"] for r in rows]
    assert len(set(judges)) == 2
    assert sum(a != b for a, b in itertools.pairwise(judges)) == 1  # each judge's rows contiguous
    for judge_id in set(judges):
        scores = [float(r["how2score_percent"]) for r in rows if r["judge_id"] == judge_id]
        assert scores == sorted(scores, reverse=True)


def test_it_prints_an_aligned_table() -> None:
    lines = _run().splitlines()
    assert lines[0].split() == COLUMNS
    assert len(lines) == 2 + 6
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule have the same width
    assert any("25.0" in line and GEN_A.generator_id in line for line in lines)
