"""Bad h2e input: the promised file:line: field errors, nothing stored from a bad file, nothing lost."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from judging.h2e_import import h2e_import
from judging.models import CriticalFailure, Generation, Generator, Judge, Judgment
from mining.models import Procedure, Topic
from tests.h2e_trees import (
    EXAMPLES,
    JUDGE_A,
    Example,
    GeneratorSpec,
    build_standard_tree,
    completion_for,
    failure,
    generation_record,
    judgment_record,
    write_jsonl,
    write_lines,
    write_run,
)

pytestmark = pytest.mark.django_db

NEW_GEN = GeneratorSpec("mistral/Mistral-7B", "d4d4d4d4d4d4", backend="vllm", provider="local")
NEW_EXAMPLE = Example("ex-new", "Travel & Tourism", "Pack a carry-on bag.", ["List items.", "Roll clothes."])


def _state() -> dict[str, Any]:
    """Every row count, and the stored judgments in full: must not move when a bad file is refused."""
    counts = {
        m.__name__: m.objects.count()
        for m in (Topic, Procedure, Generator, Generation, Judge, Judgment, CriticalFailure)
    }
    judgments = list(
        Judgment.objects.order_by("pk").values_list("pk", "reasoning", "has_failure", "n_failures", "extra")
    )
    failures = list(CriticalFailure.objects.order_by("pk").values_list("pk", "description", "l1_steps"))
    return {"counts": counts, "judgments": judgments, "failures": failures}


@pytest.fixture
def stored(tmp_path: Path) -> dict[str, Any]:
    """The standard tree imported: data stored before the bad file arrives."""
    call_command("import_h2e", str(build_standard_tree(tmp_path / "good")), verbosity=0)
    return _state()


def _new_run(root: Path, *, generations: list[dict[str, Any]] | None = None, judgments=None) -> Path:
    examples = [*EXAMPLES[:2], NEW_EXAMPLE]
    preds = {ex.source_example_id: completion_for(ex, "mistral") for ex in examples}
    gens = generations or [
        generation_record(
            NEW_GEN, ex, completion=preds[ex.source_example_id][0], predicted=preds[ex.source_example_id][1]
        )
        for ex in examples
    ]
    judged = judgments or [
        judgment_record(
            JUDGE_A, ex, preds[ex.source_example_id][1], failures=[failure("Too vague.", [1], [2])]
        )
        for ex in examples
    ]
    return write_run(root, NEW_GEN, gens, {JUDGE_A: judged})


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _import_fails(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(CommandError, match=r"rejected"):
        call_command("import_h2e", str(root), verbosity=0)
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_it_rejects_a_malformed_json_line_naming_file_and_line(
    tmp_path: Path, stored: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    run = _new_run(tmp_path / "bad")
    gens = run / "generations.jsonl"
    lines = _lines(gens)
    write_lines(gens, [lines[0], '{"source_example_id": "ex-002", "goal": ', *lines[2:]])
    out = _import_fails(tmp_path / "bad", capsys)
    assert f"{gens}:2: malformed JSON" in out
    assert f"{gens}: REJECTED, nothing imported (1 bad record(s))" in out
    assert _state() == stored


def test_it_rejects_a_record_without_goal(
    tmp_path: Path, stored: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    run = _new_run(tmp_path / "bad")
    gens = run / "generations.jsonl"
    records = [json.loads(line) for line in _lines(gens)]
    del records[2]["goal"]
    write_jsonl(gens, records)
    out = _import_fails(tmp_path / "bad", capsys)
    assert f"{gens}:3: goal: missing or empty" in out
    assert _state() == stored
    assert not Procedure.objects.filter(source_example_id="ex-new").exists()


def test_it_rejects_steps_that_are_not_a_list(
    tmp_path: Path, stored: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    run = _new_run(tmp_path / "bad")
    gens = run / "generations.jsonl"
    records = [json.loads(line) for line in _lines(gens)]
    records[0]["steps"] = "1. Heat the cream. 2. Whisk."
    write_jsonl(gens, records)
    out = _import_fails(tmp_path / "bad", capsys)
    assert f"{gens}:1: steps: expected a list of strings, got str" in out
    assert _state() == stored


def test_it_rejects_string_step_numbers_in_a_failure(
    tmp_path: Path, stored: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    run = _new_run(tmp_path / "bad")
    judgments = run / "judgments" / JUDGE_A.dir_name() / "judgments.jsonl"
    records = [json.loads(line) for line in _lines(judgments)]
    records[1]["critical_failures"][0]["L1_steps"] = ["3"]
    write_jsonl(judgments, records)
    before_generations = Generation.objects.count()
    out = _import_fails(tmp_path / "bad", capsys)
    assert f"{judgments}:2: critical_failures[0].L1_steps: step number '3' is not an integer" in out
    # The run's generations file is valid and is imported; the judgments file stores nothing.
    assert Generation.objects.count() == before_generations + 3
    assert not Judgment.objects.filter(generator__generator_id=NEW_GEN.generator_id).exists()
    assert Judgment.objects.count() == stored["counts"]["Judgment"]


def test_it_rejects_a_judgment_whose_example_has_no_generation_in_the_run(
    tmp_path: Path, stored: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    run = _new_run(tmp_path / "bad")
    judgments = run / "judgments" / JUDGE_A.dir_name() / "judgments.jsonl"
    records = [json.loads(line) for line in _lines(judgments)]
    records.append({**records[0], "source_example_id": "ex-999"})
    write_jsonl(judgments, records)
    out = _import_fails(tmp_path / "bad", capsys)
    assert f"{judgments}:4: source_example_id: no generation for 'ex-999' in this run" in out
    assert not Judgment.objects.filter(generator__generator_id=NEW_GEN.generator_id).exists()


def test_it_reports_an_unreadable_compressed_file(
    tmp_path: Path, stored: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    run = _new_run(tmp_path / "bad")
    (run / "generations.jsonl").unlink()
    broken = run / "generations.jsonl.gz"
    good = gzip.compress(b'{"source_example_id": "ex-001"}\n' * 50)
    broken.write_bytes(good[: len(good) // 2])  # truncated gzip stream
    out = _import_fails(tmp_path / "bad", capsys)
    assert f"{broken}:" in out and "cannot read or decompress the file" in out
    assert _state()["counts"] == stored["counts"]


def test_it_imports_the_valid_rest_with_skip_invalid(
    tmp_path: Path, stored: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    run = _new_run(tmp_path / "bad")
    judgments = run / "judgments" / JUDGE_A.dir_name() / "judgments.jsonl"
    records = [json.loads(line) for line in _lines(judgments)]
    records[0]["critical_failures"][0]["L2_steps"] = [1.5]
    records.append({**records[1], "source_example_id": "ex-999"})
    write_jsonl(judgments, records)
    call_command("import_h2e", str(tmp_path / "bad"), "--skip-invalid", verbosity=0)
    captured = capsys.readouterr()
    assert "2 bad record(s) skipped" in captured.out
    assert f"{judgments}:1: critical_failures[0].L2_steps: step number 1.5 is not an integer" in captured.err
    imported = Judgment.objects.filter(generator__generator_id=NEW_GEN.generator_id)
    assert sorted(imported.values_list("generation__procedure__source_example_id", flat=True)) == [
        "ex-002",
        "ex-new",
    ]
    assert Judgment.objects.count() == stored["counts"]["Judgment"] + 2


def test_it_reports_a_conflicting_record_without_overwriting(
    tmp_path: Path, stored: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    changed = build_standard_tree(tmp_path / "changed")
    path = next(changed.glob("gpt-4.1_*/judgments/how2judge_*/judgments.jsonl"))
    records = [json.loads(line) for line in _lines(path)]
    records[0]["reasoning"] = "A different verdict."
    write_jsonl(path, records)
    call_command("import_h2e", str(changed), verbosity=0)
    captured = capsys.readouterr()
    assert "1 conflict(s) with stored data, not overwritten" in captured.out
    assert f"{path}:1: source_example_id: judgment of 'ex-001' is already stored" in captured.err
    assert _state() == stored


def test_it_applies_the_same_rules_on_the_orm_path(tmp_path: Path, stored: dict[str, Any]) -> None:
    run = _new_run(tmp_path / "bad")
    judgments = run / "judgments" / JUDGE_A.dir_name() / "judgments.jsonl"
    records = [json.loads(line) for line in _lines(judgments)]
    records[2]["n_failures"] = -1
    records.append({**records[0], "source_example_id": "ex-999"})
    write_jsonl(judgments, records)
    report = h2e_import(out_root=tmp_path / "bad", use_copy=False)
    generations_report, judgments_report = report.files
    assert generations_report.imported and generations_report.created == 3
    assert not judgments_report.imported
    assert judgments_report.errors == [
        f"{judgments}:3: n_failures: expected a non-negative integer, got -1",
        f"{judgments}:4: source_example_id: no generation for 'ex-999' in this run "
        f"({NEW_GEN.dir_name()}/generations.jsonl)",
    ]
    assert Judgment.objects.count() == stored["counts"]["Judgment"]
