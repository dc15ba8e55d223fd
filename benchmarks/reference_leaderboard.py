"""The reference CLI's way to a leaderboard, as a whole process: `h2e bench leaderboard --generations-root R`
when the runs carry no aggregate/summary.json, i.e. every judgments.jsonl read and aggregated again.

    python benchmarks/reference_leaderboard.py OUT_ROOT

Written here from the reference's behaviour (lilakk/how2everything, bench/leaderboard.py and
bench/aggregate.py: per run, the generator model from the first generations.jsonl record; per judge folder,
its judge_manifest.json and a pass over judgments.jsonl with json.loads per line, parse failures left out of
How2Score), with nothing of this project imported, so that benchmarks/import_scale.py can time it against
`manage.py leaderboard` as two whole processes. Prints one CSV row per run x judge, best first per judge.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any


def _records(path: Path) -> Any:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                try:
                    yield json.loads(line)
                except ValueError:
                    continue


def _generator_model(run: Path) -> str:
    for record in _records(run / "generations.jsonl"):
        generator = record.get("generator") if isinstance(record, dict) else None
        return str(generator.get("model", "")) if isinstance(generator, dict) else ""
    return ""


def _score(judgments: Path) -> tuple[float, int, int]:
    total = parse_failed = with_failures = 0
    for record in _records(judgments):
        if not isinstance(record, dict):
            continue
        total += 1
        if record.get("parse_failed"):
            parse_failed += 1
        elif record.get("has_failure"):
            with_failures += 1
    scored = total - parse_failed
    return (100.0 * (1 - with_failures / scored) if scored else 0.0), scored, parse_failed


def _judge_model(folder: Path) -> tuple[str, str]:
    try:
        manifest = json.loads((folder / "judge_manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "", ""
    judge = manifest.get("judge") if isinstance(manifest.get("judge"), dict) else {}
    return str(manifest.get("judge_id", "")), str(judge.get("model", ""))


def leaderboard(root: Path) -> list[dict[str, Any]]:
    rows = []
    for run in sorted(p for p in root.iterdir() if p.is_dir()):
        model = _generator_model(run) if (run / "generations.jsonl").exists() else ""
        for folder in sorted(p for p in (run / "judgments").iterdir() if p.is_dir()):
            score, n, n_parse_failed = _score(folder / "judgments.jsonl")
            judge_id, judge_model = _judge_model(folder)
            rows.append(
                {
                    "gen_run": run.name,
                    "generator_model": model,
                    "judge_id": judge_id,
                    "judge_model": judge_model,
                    "how2score": f"{score:.1f}",
                    "n_examples": n,
                    "n_parse_failed": n_parse_failed,
                }
            )
    return sorted(rows, key=lambda r: (r["judge_id"], -float(r["how2score"])))


def main() -> None:
    rows = leaderboard(Path(sys.argv[1]))
    writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["gen_run"])
    writer.writeheader()
    writer.writerows(rows)


if __name__ == "__main__":
    main()
