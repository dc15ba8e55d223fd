"""BIG-bench round trip through the download and the import command; bad files refused naming the example and
field; the test-set selector's validation seam; the `ordered` field at import and from How2Mine's verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from goal_step import exports
from goal_step.models import TaskSet, TaskSplit
from mining.config import run_config_from_mapping
from mining.models import Procedure
from mining.runs import _sequential, mine_job_run, mining_run_create
from tests.factories import make_user
from tests.goal_step.task_sets import build, make_procedures
from tests.llm_server import LoopbackLLM
from tests.mining.canned import canned_responder, loopback_config, make_document
from tests.mining.conftest import bench_records, write_file

__all__ = ["bench_records"]

pytestmark = pytest.mark.django_db

GOOD = {
    "name": "step_ordering",
    "description": "d",
    "keywords": ["k"],
    "metrics": ["multiple_choice_grade"],
    "examples": [
        {
            "input": "Goal: Bake bread\nWhich of these steps comes first?",
            "target_scores": {"Knead the dough.": 0, "Mix the flour.": 1},
        },
        {
            "input": "Goal: Wash a car\nWhich of these steps comes first?",
            "target_scores": {"Rinse it.": 1, "Dry it.": 0},
        },
    ],
}


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "task.json"
    path.write_text(json.dumps(data))
    return path


def test_it_round_trips_a_built_set_through_bigbench_files(tmp_path: Path) -> None:
    make_procedures()
    built = build("origin")
    client = Client()
    client.force_login(make_user(is_staff=True))
    for task in ("step_inference", "goal_inference", "step_ordering"):
        response = client.get(reverse("goal_step:task_set_bigbench", args=[built.name, task]))
        path = tmp_path / f"{task}.json"
        path.write_bytes(response.content)
        call_command("import_bigbench", str(path), "--name", f"back-{task.replace('_', '-')}", "--task", task)
        imported = TaskSet.objects.get(name=f"back-{task.replace('_', '-')}")
        assert imported.source == "bigbench"
        original = built.examples.filter(task=task, split=TaskSplit.TEST).order_by("position")
        again = imported.examples.order_by("position")
        assert [(e.task, e.prompt, e.candidates, e.answer) for e in original] == [
            (e.task, e.prompt, e.candidates, e.answer) for e in again
        ]
        assert again and {e.split for e in again} == {TaskSplit.TEST}


def test_it_imports_a_bigbench_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    call_command("import_bigbench", str(write(tmp_path, GOOD)), "--name", "pub", "--task", "step_ordering")
    assert "2 step_ordering test example(s)" in capsys.readouterr().out
    examples = list(TaskSet.objects.get(name="pub").examples.order_by("position"))
    assert [(e.prompt, e.answer) for e in examples] == [("Bake bread", 1), ("Wash a car", 0)]


def _with(example: dict, index: int = 1) -> dict:
    rows = [dict(row) for row in GOOD["examples"]]  # type: ignore[union-attr]
    rows[index] = example
    return {**GOOD, "examples": rows}


@pytest.mark.parametrize(
    ("data", "task", "where"),
    [
        (
            _with({"input": "Goal: x\nWhich of these steps comes first?"}),
            "step_ordering",
            "examples[1].target_scores",
        ),
        (_with({"input": 3, "target_scores": {"a": 1, "b": 0}}), "step_ordering", "examples[1].input"),
        (
            _with({"input": "q", "target_scores": {"a": 1, "b": 1}}),
            "step_ordering",
            "examples[1].target_scores",
        ),
        (
            _with({"input": "q", "target_scores": {"a": 1, "b": "x"}}),
            "step_ordering",
            "examples[1].target_scores['b']",
        ),
        (
            _with({"input": "q", "target_scores": {"a": 1, "b": 0, "c": 0}}),
            "step_ordering",
            "examples[1].target_scores",
        ),
        (GOOD, "step_inference", "examples[0].input"),
        ({**GOOD, "examples": []}, "step_ordering", "examples:"),
    ],
)
def test_it_refuses_a_bad_file_naming_the_example_and_field(
    tmp_path: Path, data: dict, task: str, where: str
) -> None:
    with pytest.raises(CommandError) as refused:
        call_command("import_bigbench", str(write(tmp_path, data)), "--name", "bad", "--task", task)
    assert where in str(refused.value)
    assert not TaskSet.objects.exists()


def test_it_refuses_a_taken_name_and_a_missing_file(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    call_command("import_bigbench", str(path), "--name", "pub", "--task", "step_ordering")
    with pytest.raises(CommandError, match="exists already"):
        call_command("import_bigbench", str(path), "--name", "pub", "--task", "step_ordering")
    with pytest.raises(CommandError, match="not a file"):
        call_command("import_bigbench", str(tmp_path / "none.json"), "--name", "x", "--task", "step_ordering")


def test_it_selects_validated_test_examples_when_given_them(tmp_path: Path) -> None:
    call_command("import_bigbench", str(write(tmp_path, GOOD)), "--name", "pub", "--task", "step_ordering")
    task_set = TaskSet.objects.get(name="pub")
    first = task_set.examples.order_by("position")[0]
    assert exports.test_examples(task_set, False).count() == 2
    assert list(exports.test_examples(task_set, True, validated={first.pk})) == [first]
    with pytest.raises(exports.NoValidation):
        exports.test_examples(task_set, True)
    rows = [
        json.loads(line) for line in exports.examples_jsonl(task_set.examples.all(), validated={first.pk})
    ]
    assert [r["validated"] for r in rows] == [True, False]


# --- Procedure.ordered -----------------------------------------------------------------------------------


def test_it_reads_ordered_at_import(tmp_path: Path, bench_records: list[dict]) -> None:
    bench_records[0]["ordered"] = True
    bench_records[1]["ordered"] = False
    call_command("import_bench", str(write_file("jsonl", tmp_path, bench_records)), verbosity=0)
    ordered = dict(Procedure.objects.values_list("source_example_id", "ordered"))
    assert ordered == {"b-001": True, "b-002": False, "b-003": None}


def test_it_reads_ordered_from_csv_cells(tmp_path: Path, bench_records: list[dict]) -> None:
    for record, value in zip(bench_records, ["true", "FALSE", ""], strict=True):
        record["ordered"] = value
    call_command("import_bench", str(write_file("csv", tmp_path, bench_records)), verbosity=0)
    ordered = dict(Procedure.objects.values_list("source_example_id", "ordered"))
    assert ordered == {"b-001": True, "b-002": False, "b-003": None}


def test_it_refuses_another_ordered_value_naming_file_line_and_field(
    tmp_path: Path, bench_records: list[dict]
) -> None:
    bench_records[1]["ordered"] = "sometimes"
    path = write_file("jsonl", tmp_path, bench_records)
    with pytest.raises(CommandError):
        call_command("import_bench", str(path), verbosity=0)
    assert not Procedure.objects.exists()
    call_command("import_bench", str(path), "--skip-invalid", verbosity=0)
    assert Procedure.objects.count() == 2


def test_it_names_ordered_in_the_error(tmp_path: Path, bench_records: list[dict]) -> None:
    from mining.services import bench_import

    bench_records[2]["ordered"] = 1
    path = write_file("jsonl", tmp_path, bench_records)
    report = bench_import(paths=[path], split="bench", skip_invalid=False)
    assert report.error_lines() == [f"{path}:3: ordered: expected true or false, got 1"]


def test_it_reads_ordered_on_how2mine_export_records(tmp_path: Path) -> None:
    record = {
        "ordered": False,
        "source_example": {"id": "m-1", "topic": "Health", "url": "", "text": "t"},
        "final_procedure": {"goal": "Stretch", "steps": ["Stand up.", "Reach up."], "resources": []},
    }
    call_command("import_bench", str(write_file("jsonl", tmp_path, [record])), verbosity=0)
    assert Procedure.objects.get().ordered is False


def test_it_reads_the_final_filters_sequential_verdict() -> None:
    assert _sequential({"sequential": {"answer": "yes", "reason": ""}}) is True
    assert _sequential({"sequential": {"answer": "no", "reason": "branches"}}) is False
    assert _sequential({"correctness": {"answer": "yes"}}) is None


def test_it_marks_procedures_from_a_mining_run_ordered(llm_server: LoopbackLLM) -> None:
    make_document("seq-1", "", topic="Health")
    llm_server.responder = canned_responder
    run = mining_run_create(
        config=run_config_from_mapping(loopback_config(llm_server.base_url)), enqueue=False
    )
    mine_job_run(job_id=run.job_id or 0)
    procedure = Procedure.objects.get(mining_run=run)
    assert procedure.ordered is True
