"""Write stored generations and judgments back as an `h2e bench run` out_root, in the reference format.

Layout, record key order, manifests (indent=2 + newline) and aggregates (summary.json, by_topic.csv) are
those the reference CLI writes, so `h2e bench leaderboard --generations-root OUT_ROOT` reads our export and
prints the scores this app shows. Aggregates come from judging.selectors (SQL), not from the files.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.db.models import QuerySet

from . import ids
from .h2e_store import OVERRIDES_KEY
from .models import Generation, Generator, Judge, Judgment
from .selectors import how2score_for, how2score_topics_for

GENERATION_SCHEMA = "how2bench.generation.v1"
JUDGMENT_SCHEMA = "how2bench.judgment.v1"
BY_TOPIC_FIELDS = [
    "topic",
    "n_judged",
    "n_with_failures",
    "how2score",
    "how2score_percent",
    "failure_rate",
    "avg_failures_per_example",
]
_CHUNK = 2000


class ExportProgress:
    """Receives one call per record written; the base does nothing."""

    def records(self, n: int) -> None:
        """n records written since the last call."""


@dataclass
class ExportReport:
    run_dirs: list[Path] = field(default_factory=list)
    n_generations: int = 0
    n_judgments: int = 0


def h2e_export(
    *,
    out_root: Path,
    generator_ids: Iterable[str] | None = None,
    judge_ids: Iterable[str] | None = None,
    progress: ExportProgress | None = None,
) -> ExportReport:
    """Write every (selected) generator as a run directory with its (selected) judges under out_root."""
    progress = progress or ExportProgress()
    generators = Generator.objects.order_by("generator_id")
    if generator_ids:
        generators = generators.filter(generator_id__in=list(generator_ids))
    judges = Judge.objects.order_by("judge_id")
    if judge_ids:
        judges = judges.filter(judge_id__in=list(judge_ids))
    report = ExportReport()
    for generator in generators:
        run_dir = out_root / ids.run_dir_name(
            run_name=generator.run_name, model=generator.model, generator_id=generator.generator_id
        )
        run_dir.mkdir(parents=True, exist_ok=True)
        report.run_dirs.append(run_dir)
        _write_json(run_dir / "generation_manifest.json", generation_manifest(generator))
        report.n_generations += _write_jsonl(
            run_dir / "generations.jsonl", generation_records(generator), progress
        )
        for judge in judges.filter(judgments__generator=generator).distinct():
            report.n_judgments += _export_judge(run_dir, generator, judge, progress)
    return report


def _export_judge(run_dir: Path, generator: Generator, judge: Judge, progress: ExportProgress) -> int:
    judge_dir = run_dir / "judgments" / ids.judge_dir_name(model=judge.model, judge_id=judge.judge_id)
    judge_dir.mkdir(parents=True, exist_ok=True)
    _write_json(judge_dir / "judge_manifest.json", judge_manifest(judge))
    n = _write_jsonl(judge_dir / "judgments.jsonl", judgment_records(generator, judge), progress)
    write_aggregates(judge_dir / "aggregate", generator_pk=generator.pk, judge_pk=judge.pk)
    return n


# --- manifests ------------------------------------------------------------------------------------


def _in_order(data: dict[str, Any], like: dict[str, Any]) -> dict[str, Any]:
    """`data` with the keys of `like` first, in its order (nested too), then any others.

    PostgreSQL's jsonb does not keep key order, so a stored manifest is put back in the reference's order.
    """
    ordered: dict[str, Any] = {}
    for key, template in like.items():
        if key in data:
            value = data[key]
            if isinstance(value, dict) and isinstance(template, dict) and template:
                value = _in_order(value, template)
            ordered[key] = value
    ordered.update((k, v) for k, v in data.items() if k not in ordered)
    return ordered


def generation_manifest(generator: Generator) -> dict[str, Any]:
    """The imported manifest (keys in the reference's order), else one built from the generator's fields."""
    built = _built_generation_manifest(generator)
    return _in_order(generator.manifest, built) if generator.manifest else built


def _built_generation_manifest(generator: Generator) -> dict[str, Any]:
    return {
        "generator_id": generator.generator_id,
        "generation_prompt_sha256": generator.prompt_sha256,
        "generation_prompt_path": generator.prompt_path,
        "generation": {"model_type": generator.prompt_style},
        "generator": {
            "backend": generator.backend,
            "provider": generator.provider,
            "model": generator.model,
            "temperature": generator.temperature,
            "max_new_tokens": generator.max_new_tokens,
            "max_requests_per_minute": generator.max_requests_per_minute,
            "max_tokens_per_minute": generator.max_tokens_per_minute,
            "reasoning_effort": generator.reasoning_effort,
            "vllm_overrides": generator.vllm_overrides or {},
        },
    }


def judge_manifest(judge: Judge) -> dict[str, Any]:
    built = _built_judge_manifest(judge)
    return _in_order(judge.manifest, built) if judge.manifest else built


def _built_judge_manifest(judge: Judge) -> dict[str, Any]:
    return {
        "judge_id": judge.judge_id,
        "judge_prompt_sha256": judge.prompt_sha256,
        "judge_prompt_path": judge.prompt_path,
        "judge": {
            "backend": judge.backend,
            "provider": judge.provider,
            "model": judge.model,
            "temperature": judge.temperature,
            "max_new_tokens": judge.max_new_tokens,
            "reasoning_effort": judge.reasoning_effort,
            "vllm_overrides": judge.vllm_overrides or {},
        },
    }


# --- records --------------------------------------------------------------------------------------


def _split_extra(extra: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(record copies that differ from the stored L1/L2, the other extra keys)."""
    rest = dict(extra or {})
    overrides = rest.pop(OVERRIDES_KEY, {}) or {}
    return overrides, rest


def _l1(procedure: Any, overrides: dict[str, Any]) -> dict[str, Any]:
    return {
        "topic": overrides.get("topic", procedure.topic.name if procedure.topic else ""),
        "goal": overrides.get("goal", procedure.goal),
        "steps": overrides.get("steps", procedure.steps),
        "resources": overrides.get("resources", procedure.resources),
    }


def generation_records(generator: Generator) -> Iterator[dict[str, Any]]:
    """generations.jsonl records, key for key as the reference's GenerationRecord, by example id."""
    block = {"backend": generator.backend, "provider": generator.provider, "model": generator.model}
    rows = (
        Generation.objects.filter(generator=generator)
        .select_related("procedure__topic")
        .order_by("procedure__source_example_id")
    )
    for generation in rows.iterator(chunk_size=_CHUNK):
        overrides, rest = _split_extra(generation.extra)
        procedure = generation.procedure
        yield {
            "schema_version": GENERATION_SCHEMA,
            "generator_id": generator.generator_id,
            "generation_prompt_sha256": generator.prompt_sha256,
            "source_example_id": procedure.source_example_id,
            **_l1(procedure, overrides),
            "model_completion": generation.model_completion,
            "predicted_steps": generation.predicted_steps,
            "prompt": generation.prompt,
            "generator": block,
            **rest,
        }


def _judgments(generator: Generator, judge: Judge) -> QuerySet[Judgment]:
    return (
        Judgment.objects.filter(generator=generator, judge=judge)
        .select_related("generation__procedure__topic")
        .with_failures()
        .order_by("generation__procedure__source_example_id")
    )


def judgment_records(generator: Generator, judge: Judge) -> Iterator[dict[str, Any]]:
    """judgments.jsonl records, key for key as the reference's JudgmentRecord, by example id."""
    block = {"backend": judge.backend, "provider": judge.provider, "model": judge.model}
    for judgment in _judgments(generator, judge).iterator(chunk_size=_CHUNK):
        overrides, rest = _split_extra(judgment.extra)
        generation = judgment.generation
        yield {
            "schema_version": JUDGMENT_SCHEMA,
            "judge_id": judge.judge_id,
            "judge_prompt_sha256": judge.prompt_sha256,
            "source_example_id": generation.procedure.source_example_id,
            **_l1(generation.procedure, overrides),
            "predicted_steps": overrides.get("predicted_steps", generation.predicted_steps),
            "judge": block,
            "reasoning": judgment.reasoning,
            "critical_failures": [
                {"failure": f.description, "L1_steps": f.l1_steps, "L2_steps": f.l2_steps}
                for f in judgment.failures.all()
            ],
            "has_failure": judgment.has_failure,
            "n_failures": judgment.n_failures,
            "parse_failed": judgment.parse_failed,
            **rest,
        }


# --- files ----------------------------------------------------------------------------------------


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def _write_jsonl(path: Path, records: Iterable[dict[str, Any]], progress: ExportProgress) -> int:
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
            if n % 1000 == 0:
                progress.records(1000)
    progress.records(n % 1000)
    return n


def write_aggregates(out_dir: Path, *, generator_pk: int, judge_pk: int) -> None:
    """aggregate/summary.json and aggregate/by_topic.csv as the reference's write_aggregates."""
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_json(
        out_dir / "summary.json", how2score_for(generator_pk=generator_pk, judge_pk=judge_pk).summary_json()
    )
    rows = [
        score.by_topic_row(topic)
        for topic, score in how2score_topics_for(generator_pk=generator_pk, judge_pk=judge_pk)
    ]
    fields = BY_TOPIC_FIELDS + (["n_parse_failed"] if any("n_parse_failed" in r for r in rows) else [])
    with (out_dir / "by_topic.csv").open("w", encoding="utf-8", newline="") as f:
        _write_csv(f, fields, rows)


def _write_csv(f: IO[str], fields: list[str], rows: list[dict[str, Any]]) -> None:
    writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
