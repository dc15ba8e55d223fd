"""export_procedures: bench JSONL and the How2Mine export form, read back unchanged by import_bench."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from mining.models import Procedure, Split
from mining.services import bench_import
from tests.factories import make_procedure

pytestmark = pytest.mark.django_db


@pytest.fixture
def procedures() -> None:
    make_procedure(
        goal="Make café au lait 🏔",
        steps=["Brew.", "Heat milk."],
        resources=["coffee"],
        split=Split.BENCH,
        source_example_id="p-1",
    )
    make_procedure(
        goal="Fold a crane",
        steps=["Fold.", "Crease."],
        resources=[],
        topic="Art & Design",
        split=Split.TRAIN,
        source_example_id="p-2",
    )


def test_it_writes_bench_jsonl_with_the_dataset_columns(procedures: None, tmp_path: Path) -> None:
    out = tmp_path / "bench.jsonl"
    call_command("export_procedures", str(out), "--split", "bench", stdout=StringIO())
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines == [
        json.dumps(
            {
                "source_example_id": "p-1",
                "topic": "Home & Hobbies",
                "goal": "Make café au lait 🏔",
                "resources": ["coffee"],
                "steps": ["Brew.", "Heat milk."],
            },
            ensure_ascii=False,
        )
    ]


@pytest.mark.parametrize("form", ["bench", "how2mine"])
def test_it_round_trips_through_import_bench(procedures: None, tmp_path: Path, form: str) -> None:
    out = tmp_path / f"all.{form}.jsonl.gz"
    call_command("export_procedures", str(out), "--form", form, stdout=StringIO())
    before = {
        p.source_example_id: (p.topic.name if p.topic else "", p.goal, p.steps, p.resources)
        for p in Procedure.objects.all()
    }
    Procedure.objects.all().delete()
    report = bench_import(paths=[out])
    assert report.ok and report.files[0].created == 2
    after = {
        p.source_example_id: (p.topic.name if p.topic else "", p.goal, p.steps, p.resources)
        for p in Procedure.objects.all()
    }
    assert after == before


def test_it_writes_the_nested_how2mine_form(procedures: None, tmp_path: Path) -> None:
    out = tmp_path / "mine.jsonl"
    call_command("export_procedures", str(out), "--form", "how2mine", "--split", "train", stdout=StringIO())
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["final_procedure"] == {
        "goal": "Fold a crane",
        "steps": ["Fold.", "Crease."],
        "resources": [],
    }
    assert record["source_example"]["id"] == "p-2" and record["source_example"]["topic"] == "Art & Design"
