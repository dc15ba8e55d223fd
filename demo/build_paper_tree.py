"""Turn the paper's worked examples into an `h2e bench run` output tree.

demo/paper-examples/ holds the examples printed in the How2Everything paper, with every generation under the
single generator_id "paper" and every judgment under the single judge_id "paper". The reference layout keys a
run directory by generator and a judge directory by judge, so this script splits them: one run directory per
generator model, one judge directory per judge model, ids = first 12 hex chars of sha256("paper:" + model).

    python demo/build_paper_tree.py [--examples demo/paper-examples] [--out demo/paper-h2e]

The output is committed; rerunning the script rewrites the same bytes.
Standard library only (plus judging/ids.py, which is too).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import shutil
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from judging.ids import judge_dir_name, run_name_for_model  # noqa: E402  (stdlib-only module)

GENERATION_SCHEMA = "how2bench.generation.v1"
JUDGMENT_SCHEMA = "how2bench.judgment.v1"
Record = dict[str, Any]


def paper_id(model: str) -> str:
    return hashlib.sha256(f"paper:{model}".encode()).hexdigest()[:12]


def read_jsonl(path: Path) -> Iterator[tuple[int, Record]]:
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if line.strip():
                yield line_number, json.loads(line)


def write_jsonl(path: Path, records: list[Record]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def write_json(path: Path, payload: Record) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def generation_record(source: Record, generator_id: str) -> Record:
    return {
        "schema_version": GENERATION_SCHEMA,
        "generator_id": generator_id,
        "generation_prompt_sha256": "",  # the paper prints no prompt file
        "source_example_id": source["source_example_id"],
        "topic": source["topic"],
        "goal": source["goal"],
        "steps": source["steps"],
        "resources": source["resources"],
        "model_completion": source["model_completion"],
        "predicted_steps": source["predicted_steps"],
        "prompt": source["prompt"],
        "generator": source["generator"],
    }


def judgment_record(source: Record, judge_id: str) -> Record:
    return {
        "schema_version": JUDGMENT_SCHEMA,
        "judge_id": judge_id,
        "judge_prompt_sha256": "",
        "source_example_id": source["source_example_id"],
        "topic": source["topic"],
        "goal": source["goal"],
        "steps": source["steps"],
        "resources": source["resources"],
        "predicted_steps": source["predicted_steps"],
        "judge": source["judge"],
        "reasoning": source["reasoning"],
        "critical_failures": source["critical_failures"],
        "has_failure": source["has_failure"],
        "n_failures": source["n_failures"],
        "parse_failed": source["parse_failed"],
        "source": source["source"],  # which table of the paper printed it
    }


def generation_manifest(generator_id: str, generator: Record) -> Record:
    return {
        "generator_id": generator_id,
        "generation_prompt_sha256": "",
        "generation_prompt_path": "",
        "generation": {"model_type": "inst"},
        "generator": {
            "backend": generator["backend"],
            "provider": generator["provider"],
            "model": generator["model"],
            "temperature": None,
            "max_new_tokens": None,
            "max_requests_per_minute": None,
            "max_tokens_per_minute": None,
            "reasoning_effort": None,
            "vllm_overrides": {},
        },
    }


def judge_manifest(judge_id: str, judge: Record) -> Record:
    return {
        "judge_id": judge_id,
        "judge_prompt_sha256": "",
        "judge_prompt_path": "",
        "judge": {
            "backend": judge["backend"],
            "provider": judge["provider"],
            "model": judge["model"],
            "temperature": None,
            "max_new_tokens": None,
            "reasoning_effort": None,
            "vllm_overrides": {},
        },
    }


def aggregate(judgments: list[Record]) -> tuple[Record, list[Record]]:
    """Summary and by-topic rows by the reference formulas (parse failures excluded from scoring)."""
    topics: dict[str, Record] = defaultdict(lambda: {"n": 0, "fail": 0, "sum": 0, "parse": 0})
    for judgment in judgments:
        bucket = topics[judgment["topic"]]
        if judgment["parse_failed"]:
            bucket["parse"] += 1
            continue
        bucket["n"] += 1
        bucket["fail"] += int(bool(judgment["has_failure"]))
        bucket["sum"] += int(judgment["n_failures"])
    total = {key: sum(bucket[key] for bucket in topics.values()) for key in ("n", "fail", "sum", "parse")}
    overall = scores(total)
    summary = {
        "how2score": overall["how2score"],
        "how2score_percent": overall["how2score_percent"],
        "n_examples": total["n"],
        "n_with_failures": total["fail"],
        "failure_rate": overall["failure_rate"],
        "avg_failures_per_example": overall["avg_failures_per_example"],
    }
    if total["parse"]:
        summary["n_parse_failed"] = total["parse"]
    rows = []
    for topic in sorted(topics):
        bucket = topics[topic]
        row = {"topic": topic, "n_judged": bucket["n"], "n_with_failures": bucket["fail"], **scores(bucket)}
        if bucket["parse"]:
            row["n_parse_failed"] = bucket["parse"]
        rows.append(row)
    return summary, rows


def scores(bucket: Record) -> Record:
    n = bucket["n"]
    failure_rate = bucket["fail"] / n if n else 0.0
    how2score = 1.0 - failure_rate if n else 0.0
    return {
        "how2score": how2score,
        "how2score_percent": 100.0 * how2score,
        "failure_rate": failure_rate,
        "avg_failures_per_example": bucket["sum"] / n if n else 0.0,
    }


def write_aggregates(judge_dir: Path, judgments: list[Record]) -> None:
    summary, rows = aggregate(judgments)
    write_json(judge_dir / "aggregate" / "summary.json", summary)
    fields = ["topic", "n_judged", "n_with_failures", "how2score", "how2score_percent", "failure_rate"]
    fields.append("avg_failures_per_example")
    if any("n_parse_failed" in row for row in rows):
        fields.append("n_parse_failed")
    with (judge_dir / "aggregate" / "by_topic.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def match_generation(judgment: Record, generations: list[Record], line_number: int) -> Record:
    matches = [
        generation
        for generation in generations
        if generation["source_example_id"] == judgment["source_example_id"]
        and generation["predicted_steps"] == judgment["predicted_steps"]
    ]
    if len(matches) != 1:
        raise SystemExit(
            f"judgments.jsonl:{line_number}: {len(matches)} generations match (need exactly one)"
        )
    return matches[0]


def build(examples: Path, out: Path) -> None:
    generations = [record for _, record in read_jsonl(examples / "generations.jsonl")]
    runs: dict[str, list[Record]] = defaultdict(list)
    for generation in generations:
        runs[generation["generator"]["model"]].append(generation)
    judged: dict[tuple[str, str], list[Record]] = defaultdict(list)
    judges: dict[str, Record] = {}
    for line_number, judgment in read_jsonl(examples / "judgments.jsonl"):
        generation = match_generation(judgment, generations, line_number)
        judge_model = judgment["judge"]["model"]
        judges[judge_model] = judgment["judge"]
        judged[(generation["generator"]["model"], judge_model)].append(judgment)

    if out.exists():
        shutil.rmtree(out)
    for model, records in runs.items():
        generator_id = paper_id(model)
        run_dir = out / f"{run_name_for_model(model)}_{generator_id}"
        write_jsonl(run_dir / "generations.jsonl", [generation_record(r, generator_id) for r in records])
        write_json(
            run_dir / "generation_manifest.json", generation_manifest(generator_id, records[0]["generator"])
        )
        for judge_model, judge in judges.items():
            judgments = judged.get((model, judge_model))
            if not judgments:
                continue
            judge_id = paper_id(judge_model)
            judge_dir = run_dir / "judgments" / judge_dir_name(model=judge_model, judge_id=judge_id)
            write_jsonl(judge_dir / "judgments.jsonl", [judgment_record(j, judge_id) for j in judgments])
            write_json(judge_dir / "judge_manifest.json", judge_manifest(judge_id, judge))
            write_aggregates(judge_dir, judgments)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=Path, default=HERE / "paper-examples")
    parser.add_argument("--out", type=Path, default=HERE / "paper-h2e")
    args = parser.parse_args()
    build(args.examples, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
