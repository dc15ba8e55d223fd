"""Import an h2e tree in the reference format, export it back, compare record by record and aggregates."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import zstandard
from django.core.management import call_command

from judging.h2e_import import h2e_import
from judging.models import CriticalFailure, Generation, Generator, Judge, Judgment
from mining.models import Procedure, Topic
from tests.h2e_trees import GEN_A, GEN_B, GEN_C, JUDGE_A, JUDGE_B, build_standard_tree

from .oracle import reference_aggregate

pytestmark = pytest.mark.django_db


def _records(path: Path) -> dict[str, dict[str, Any]]:
    """Records by source_example_id; a duplicated line collapses (the last one wins)."""
    out: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            out[record["source_example_id"]] = record
    return out


def _snapshot() -> list[tuple[Any, ...]]:
    return list(
        Judgment.objects.order_by("pk").values_list(
            "pk",
            "reasoning",
            "parse_failed",
            "has_failure",
            "n_failures",
            "extra",
            "topic_id",
            "generator_id",
        )
    )


def _counts() -> dict[str, int]:
    return {
        m.__name__: m.objects.count()
        for m in (Topic, Procedure, Generator, Generation, Judge, Judgment, CriticalFailure)
    }


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return build_standard_tree(tmp_path / "in")


@pytest.fixture(params=[True, False], ids=["copy", "orm"])
def use_copy(request: pytest.FixtureRequest) -> bool:
    """Both storage paths: COPY + SQL (PostgreSQL) and the portable ORM path (SQLite laptops)."""
    return request.param


@pytest.fixture
def exported(tree: Path, tmp_path: Path, use_copy: bool) -> Path:
    assert h2e_import(out_root=tree, use_copy=use_copy).ok
    out = tmp_path / "out"
    call_command("export_h2e", str(out), verbosity=0)
    return out


def _pairs(tree: Path, exported: Path) -> list[tuple[Path, Path]]:
    pairs = []
    for gen in (GEN_A, GEN_B, GEN_C):
        run_in, run_out = tree / gen.dir_name(), exported / gen.dir_name()
        pairs.append((run_in / "generations.jsonl", run_out / "generations.jsonl"))
        for judge in (JUDGE_A, JUDGE_B):
            rel = Path("judgments") / judge.dir_name() / "judgments.jsonl"
            pairs.append((run_in / rel, run_out / rel))
    return pairs


def test_it_exports_every_record_as_it_was_imported(tree: Path, exported: Path) -> None:
    for source, written in _pairs(tree, exported):
        assert written.is_file(), written
        assert _records(written) == _records(source), written


def test_it_keeps_the_reference_key_order_and_non_ascii_text(tree: Path, exported: Path) -> None:
    source = (tree / GEN_A.dir_name() / "judgments" / JUDGE_A.dir_name() / "judgments.jsonl").read_text(
        "utf-8"
    )
    written = (exported / GEN_A.dir_name() / "judgments" / JUDGE_A.dir_name() / "judgments.jsonl").read_text(
        "utf-8"
    )
    first_in = next(line for line in source.splitlines() if '"ex-001"' in line)
    first_out = next(line for line in written.splitlines() if '"ex-001"' in line)
    assert first_out == first_in  # byte for byte: key order, ensure_ascii=False, the extra key at the end
    assert "crème brûlée 🍮" in first_out and '"source": "test é"' in first_out


def test_it_writes_manifests_verbatim_and_builds_missing_ones(tree: Path, exported: Path) -> None:
    manifest = tree / GEN_A.dir_name() / "generation_manifest.json"
    assert (exported / GEN_A.dir_name() / "generation_manifest.json").read_text() == manifest.read_text()
    judge_manifest = tree / GEN_A.dir_name() / "judgments" / JUDGE_B.dir_name() / "judge_manifest.json"
    out_judge = exported / GEN_A.dir_name() / "judgments" / JUDGE_B.dir_name() / "judge_manifest.json"
    assert out_judge.read_text() == judge_manifest.read_text()
    built = json.loads((exported / GEN_C.dir_name() / "generation_manifest.json").read_text())
    assert built["generator_id"] == GEN_C.generator_id
    assert built["generator"]["model"] == GEN_C.model


def test_it_writes_aggregates_equal_to_the_reference_on_the_deduplicated_files(
    tree: Path, exported: Path
) -> None:
    for source, written in _pairs(tree, exported):
        if source.name != "judgments.jsonl":
            continue
        expected_summary, expected_rows = reference_aggregate(list(_records(source).values()))
        aggregate = written.parent / "aggregate"
        assert json.loads((aggregate / "summary.json").read_text()) == expected_summary
        assert (aggregate / "summary.json").read_text().endswith("}\n")
        with (aggregate / "by_topic.csv").open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        assert rows == [{k: str(v) for k, v in row.items()} for row in expected_rows], written
        assert list(rows[0]) == list(expected_rows[0])  # same columns, same order


def test_it_imports_the_same_tree_twice_without_change(tree: Path, use_copy: bool) -> None:
    h2e_import(out_root=tree, use_copy=use_copy)
    first = _counts()
    exported_once = _snapshot()
    second = h2e_import(out_root=tree, use_copy=use_copy)
    assert _counts() == first
    assert _snapshot() == exported_once
    assert all(f.created == 0 and not f.conflicts for f in second.files)
    assert first["Judgment"] == 3 * 2 * 6 and first["Generation"] == 3 * 6


def test_it_collapses_duplicated_lines_and_says_so(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    call_command("import_h2e", str(tree), verbosity=0)
    out = capsys.readouterr().out
    assert f"{GEN_A.dir_name()}/generations.jsonl: 6 created, 0 already present, 1 duplicate line(s)" in out
    judgments = Judgment.objects.filter(
        judge__judge_id=JUDGE_A.judge_id, generator__generator_id=GEN_A.generator_id
    )
    assert judgments.count() == 6


def test_it_keeps_ids_run_names_and_denormalised_columns(tree: Path, use_copy: bool) -> None:
    h2e_import(out_root=tree, use_copy=use_copy)
    qwen = Generator.objects.get(generator_id=GEN_B.generator_id)
    assert qwen.run_name == "qwen3-8b" and qwen.backend == "vllm" and qwen.prompt_style == "inst"
    assert Generator.objects.get(generator_id=GEN_C.generator_id).manifest == {}
    for judgment in Judgment.objects.select_related("generation__procedure"):
        assert judgment.generator_id == judgment.generation.generator_id
        assert judgment.topic_id == judgment.generation.procedure.topic_id
    assert Topic.objects.get(name="茶道 Tea").is_weborganizer is False
    assert Generation.objects.filter(n_tokens__isnull=False).count() == 0


def test_it_reports_a_missing_manifest(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    call_command("import_h2e", str(tree), verbosity=0)
    assert f"no generation_manifest.json; generator {GEN_C.generator_id} built from the records" in (
        capsys.readouterr().out
    )


def test_it_exports_only_the_selected_generators_and_judges(tree: Path, tmp_path: Path) -> None:
    h2e_import(out_root=tree)
    out = tmp_path / "some"
    call_command(
        "export_h2e", str(out), "--generator", GEN_B.generator_id, "--judge", JUDGE_B.judge_id, verbosity=0
    )
    assert [p.name for p in out.iterdir()] == [GEN_B.dir_name()]
    assert [p.name for p in (out / GEN_B.dir_name() / "judgments").iterdir()] == [JUDGE_B.dir_name()]


def test_it_reads_compressed_run_files(tree: Path) -> None:
    for path in tree.glob("*/generations.jsonl"):
        path.with_name("generations.jsonl.zst").write_bytes(
            zstandard.ZstdCompressor().compress(path.read_bytes())
        )
        path.unlink()
    report = h2e_import(out_root=tree)
    assert report.ok and Generation.objects.count() == 18 and Judgment.objects.count() == 36


def _stored() -> dict[str, Any]:
    """Everything an import stores, without row ids (two imports into fresh tables give other ids)."""
    return {
        "judgments": sorted(
            Judgment.objects.values_list(
                "judge__judge_id", "generation__procedure__source_example_id", "generator__generator_id",
                "reasoning", "parse_failed", "has_failure", "n_failures", "extra", "topic__name",
            )
        ),
        "failures": sorted(
            CriticalFailure.objects.values_list(
                "judgment__judge__judge_id", "judgment__generation__procedure__source_example_id",
                "judgment__generator__generator_id", "order", "description", "l1_steps", "l2_steps",
            )
        ),
        "counts": _counts(),
    }  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_it_stores_the_same_whether_judgments_files_go_side_by_side_or_one_by_one(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a transaction a run's judgments files are imported on two connections at once; the result,
    the report and a rejected file's rollback are those of one file after the other."""
    bad = tree / GEN_B.dir_name() / "judgments" / JUDGE_B.dir_name() / "judgments.jsonl"
    bad.write_text(bad.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    runs = []
    for workers in ("2", "1"):
        monkeypatch.setenv("H2E_IMPORT_WORKERS", workers)
        report = h2e_import(out_root=tree)
        runs.append((_stored(), [(f.path, f.imported, f.created, f.errors) for f in report.files]))
        for model in (CriticalFailure, Judgment, Generation, Judge, Generator, Procedure):
            model.objects.all().delete()
    (side_by_side, report_2), (one_by_one, report_1) = runs
    assert side_by_side == one_by_one and report_2 == report_1
    assert side_by_side["counts"]["Judgment"] == 3 * 2 * 6 - 6  # the bad file stored nothing
    assert any(not imported and errors for _, imported, _, errors in report_2)
