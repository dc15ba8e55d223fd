"""Import at scale (issue #2): 20 generators x 7,000 examples x 2 judges into a fresh PostgreSQL database.

    .venv/bin/python benchmarks/import_scale.py [--out /tmp/h2e_scale] [--db h2e_bench] [--append-doc]

1. writes an h2e out_root (reference format, realistic text lengths, ~2% parse failures) unless --out
   already holds one from an earlier run (same size parameters);
2. drops and re-creates the database, migrates it;
3. runs `manage.py import_h2e` in a subprocess: wall time and peak RSS (getrusage RUSAGE_CHILDREN);
4. times the full leaderboard query (median of several runs) and a file-based recomputation of the same
   leaderboard the way the reference CLI does it (read every judgments.jsonl and aggregate);
5. checks both leaderboards agree, prints the figures, and with --append-doc adds them to
   docs/benchmarks.md. Targets: import <= 60 s, peak RSS <= 1.5 GB, leaderboard <= 0.3 s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import fresh_database as new_database  # noqa: E402
from benchmarks.results_doc import insert_into_section  # noqa: E402

DOC = ROOT / "docs" / "benchmarks.md"  # written through results_doc.insert_into_section
PROMPT = (ROOT / "prompts" / "inference_inst.txt").read_text(encoding="utf-8")
TOPICS = [
    "Art & Design", "Crime & Law", "Education & Jobs", "Electronics & Hardware", "Fashion & Beauty",
    "Food & Dining", "Health", "Home & Hobbies", "Industrial", "Religion", "Science, Math & Technology",
    "Sports & Fitness", "Transportation", "Travel & Tourism",
]  # fmt: skip
_WORD_TEXT = (
    "the a to of and in with for on your it then until each before after remove place add check set "
    "water heat cut mix apply open close turn press hold wait clean dry measure attach secure gently "
    "slowly carefully board screw bolt panel cable tray sand bowl pan oven minutes seconds inches "
    "surface edge corner side top bottom front back left right small large new old warm cold even "
    "repeat ensure verify adjust tighten loosen connect disconnect fill empty pour stir fold wrap "
    "résumé café naïve H₂O 中文 step tool part piece layer coat mark line hole"
)
WORDS = _WORD_TEXT.split(" ")


def words(rng: random.Random, n: int) -> str:
    text = " ".join(rng.choices(WORDS, k=n))
    return text[0].upper() + text[1:] + "."


def steps(rng: random.Random, n: int, low: int = 11, high: int = 19) -> list[str]:
    return [words(rng, rng.randint(low, high)) for _ in range(n)]


# --- tree generation ------------------------------------------------------------------------------


def make_examples(n: int, rng: random.Random, shape: Shape | None = None) -> list[dict[str, Any]]:
    low, high = shape.step_words if shape else (11, 19)
    return [
        {
            "source_example_id": f"bench-{i:05d}",
            "topic": TOPICS[i % len(TOPICS)],
            "goal": words(rng, rng.randint(18, 32)),
            "steps": steps(rng, rng.randint(5, 15), low, high),
            "resources": [words(rng, 2)[:-1] for _ in range(rng.randint(0, 6))],
        }
        for i in range(n)
    ]


@dataclass(frozen=True)
class Shape:
    """How a tree's records look. "bench": the reference's full generation prompt (~3 KB) in every
    generation, L1/L2 copies equal to the generation file's, judgments sorted by example. "short": what a
    tree written elsewhere can look like (short or no prompts, shorter reasoning, longer steps, more
    failures, records in the generator's own order, the judge's cleaned L2 copy differing from the
    generation's steps). "drift": like "short" but every run's L1 copies differ a little from the first
    run's (resources in another order, a goal with a trailing space), so no copy matches what is stored."""

    name: str
    full_prompt: bool = True
    reasoning_words: tuple[int, int] = (120, 180)
    step_words: tuple[int, int] = (11, 19)
    failures: tuple[int, ...] = (0, 0, 1, 1, 2, 3)
    sorted_judgments: bool = True
    cleaned_l2: bool = False
    drift: bool = False


SHAPES = {
    "bench": Shape("bench"),
    "short": Shape("short", full_prompt=False, reasoning_words=(30, 90), step_words=(14, 30),
                   failures=(0, 1, 1, 2, 3, 4, 5), sorted_judgments=False, cleaned_l2=True),
    "drift": Shape("drift", full_prompt=False, reasoning_words=(30, 90), step_words=(14, 30),
                   failures=(0, 1, 1, 2, 3, 4, 5), sorted_judgments=False, cleaned_l2=True, drift=True),
}  # fmt: skip


def write_tree(
    out: Path,
    *,
    n_generators: int,
    n_examples: int,
    n_judges: int,
    shape: Shape = SHAPES["bench"],
    seed: int = 7,
) -> None:
    rng = random.Random(seed)
    examples = make_examples(n_examples, rng, shape)
    judges = [(f"judge-org/judge-model-{j}", f"j{j + 1:011d}") for j in range(n_judges)]
    for g in range(n_generators):
        model = f"org/generator-model-{g:02d}"
        generator_id = f"{g + 1:012d}"
        run_dir = out / f"generator-model-{g:02d}_{generator_id}"
        run_examples = _drifted(examples, rng) if shape.drift and g else examples
        if not shape.sorted_judgments:
            run_examples = rng.sample(run_examples, len(run_examples))
        preds = _write_generations(run_dir, model, generator_id, run_examples, rng, shape)
        for judge_model, judge_id in judges:
            _write_judgments(run_dir, judge_model, judge_id, run_examples, preds, rng, shape)
        print(f"  wrote run {g + 1}/{n_generators}", file=sys.stderr, flush=True)


def _drifted(examples: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """The same examples as another run copied them: resources reordered, some goals with a trailing space."""
    return [
        {
            **ex,
            "resources": list(reversed(ex["resources"])),
            "goal": ex["goal"] + (" " if rng.random() < 0.5 else ""),
        }
        for ex in examples
    ]


def _manifest(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def _write_generations(
    run_dir: Path,
    model: str,
    generator_id: str,
    examples: list[dict[str, Any]],
    rng: random.Random,
    shape: Shape,
) -> dict[str, list[str]]:
    sha = "f" * 64
    _manifest(
        run_dir / "generation_manifest.json",
        {
            "generator_id": generator_id,
            "generation_prompt_sha256": sha,
            "generation_prompt_path": "prompts/inference_inst.txt",
            "generation": {"model_type": "inst"},
            "generator": {
                "backend": "deluge", "provider": "openai", "model": model, "temperature": 0.0,
                "max_new_tokens": 4096, "max_requests_per_minute": 1000, "max_tokens_per_minute": 100000,
                "reasoning_effort": None, "vllm_overrides": {},
            },
        },
    )  # fmt: skip
    preds: dict[str, list[str]] = {}
    with (run_dir / "generations.jsonl").open("w", encoding="utf-8") as f:
        for ex in examples:
            n = len(ex["steps"])
            predicted = steps(rng, n, *shape.step_words)
            if shape.cleaned_l2:  # the model's raw steps: a trailing space the judge's copy strips
                predicted = [f"{step} " if i % 3 == 0 else step for i, step in enumerate(predicted)]
            preds[ex["source_example_id"]] = predicted
            resources = json.dumps(ex["resources"], ensure_ascii=False) if ex["resources"] else "[]"
            record = {
                "schema_version": "how2bench.generation.v1",
                "generator_id": generator_id,
                "generation_prompt_sha256": sha,
                "source_example_id": ex["source_example_id"],
                "topic": ex["topic"],
                "goal": ex["goal"],
                "steps": ex["steps"],
                "resources": ex["resources"],
                "model_completion": "\n".join(f"{i}. {s}" for i, s in enumerate(predicted, 1)),
                "predicted_steps": predicted,
                "prompt": PROMPT.format(goal=ex["goal"], resources=resources, n=n)
                if shape.full_prompt
                else f"Write {n} steps for: {ex['goal']}",
                "generator": {"backend": "deluge", "provider": "openai", "model": model},
            }
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return preds


def _write_judgments(
    run_dir: Path,
    judge_model: str,
    judge_id: str,
    examples: list[dict[str, Any]],
    preds: dict[str, list[str]],
    rng: random.Random,
    shape: Shape,
) -> None:
    short = judge_model.split("/")[-1]
    judge_dir = run_dir / "judgments" / f"{short}_{judge_id}"
    sha = "e" * 64
    judge_block = {"backend": "vllm", "provider": "local", "model": judge_model}
    _manifest(
        judge_dir / "judge_manifest.json",
        {
            "judge_id": judge_id,
            "judge_prompt_sha256": sha,
            "judge_prompt_path": "/abs/prompts/judge.txt",
            "judge": {**judge_block, "temperature": 0.0, "max_new_tokens": 4096, "reasoning_effort": None,
                      "vllm_overrides": {}},
        },
    )  # fmt: skip
    with (judge_dir / "judgments.jsonl").open("w", encoding="utf-8") as f:
        ordered = (
            sorted(examples, key=lambda e: e["source_example_id"]) if shape.sorted_judgments else examples
        )
        for ex in ordered:
            parse_failed = rng.random() < 0.02
            n_l1, n_l2 = len(ex["steps"]), len(preds[ex["source_example_id"]])
            failures = [] if parse_failed else [
                {"failure": words(rng, rng.randint(18, 32)),
                 "L1_steps": sorted(rng.sample(range(1, n_l1 + 1), rng.randint(0, 2))),
                 "L2_steps": sorted(rng.sample(range(1, n_l2 + 1), rng.randint(0, 2)))}
                for _ in range(rng.choice(shape.failures))
            ]  # fmt: skip
            record = {
                "schema_version": "how2bench.judgment.v1",
                "judge_id": judge_id,
                "judge_prompt_sha256": sha,
                "source_example_id": ex["source_example_id"],
                "topic": ex["topic"],
                "goal": ex["goal"],
                "steps": ex["steps"],
                "resources": ex["resources"],
                "predicted_steps": [s.strip() for s in preds[ex["source_example_id"]]]
                if shape.cleaned_l2
                else preds[ex["source_example_id"]],
                "judge": judge_block,
                "reasoning": "" if parse_failed else words(rng, rng.randint(*shape.reasoning_words)),
                "critical_failures": failures,
                "has_failure": bool(failures) or parse_failed,
                "n_failures": len(failures),
                "parse_failed": parse_failed,
            }
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


# --- measurements ---------------------------------------------------------------------------------


def tree_size(out: Path) -> int:
    return sum(p.stat().st_size for p in out.rglob("*.jsonl"))


def run(cmd: list[str], env: dict[str, str], *, quiet: bool = False) -> None:
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL if quiet else None)


def fresh_database(db: str, env: dict[str, str]) -> None:
    if new_database(db):
        run([sys.executable, "manage.py", "migrate", "-v0"], env)


def timed_import(out: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB of the import process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    run([sys.executable, "manage.py", "import_h2e", str(out), "-v0"], env, quiet=True)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak <= before:
        print("  note: the import's peak RSS did not exceed an earlier child's", file=sys.stderr)
    return wall, peak / 1024


_LEADERBOARD_SCRIPT = """
import json, statistics, sys, time
import django
django.setup()
from judging.models import Judgment
from judging.selectors import how2score_leaderboard
n = Judgment.objects.count()
times = []
for _ in range(int(sys.argv[1])):
    start = time.perf_counter()
    rows = how2score_leaderboard()
    times.append(time.perf_counter() - start)
print(json.dumps({"n_judgments": n, "times": times,
                  "rows": {f"{r.generator_id}|{r.judge_id}": r.score.how2score_percent for r in rows}}))
"""


def timed_leaderboard(env: dict[str, str], runs: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _LEADERBOARD_SCRIPT, str(runs)],
        cwd=ROOT, env={**env, "DJANGO_SETTINGS_MODULE": "h2e_site.settings"}, check=True,
        capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def file_leaderboard(out: Path) -> dict[str, float]:
    """How2Score per run x judge recomputed from every judgments.jsonl, as the reference leaderboard does."""
    scores: dict[str, float] = {}
    for run_dir in sorted(p for p in out.iterdir() if p.is_dir()):
        generator_id = run_dir.name.rsplit("_", 1)[-1]
        for judge_dir in sorted((run_dir / "judgments").iterdir()):
            counts: dict[str, int] = defaultdict(int)
            with (judge_dir / "judgments.jsonl").open(encoding="utf-8") as f:
                for line in f:
                    if not line.strip():
                        continue
                    rec = json.loads(line)
                    counts["total"] += 1
                    if rec.get("parse_failed"):
                        counts["parse_failed"] += 1
                    elif rec.get("has_failure"):
                        counts["with_failures"] += 1
            n = counts["total"] - counts["parse_failed"]
            judge_id = judge_dir.name.rsplit("_", 1)[-1]
            scores[f"{generator_id}|{judge_id}"] = 100.0 * (1.0 - counts["with_failures"] / n) if n else 0.0
    return scores


def whole_process(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one run of `argv` as a separate process (start-up included), its output discarded."""
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def whole_process_leaderboards(out: Path, env: dict[str, str], runs: int) -> dict[str, Any]:
    """`manage.py leaderboard` (A) against the reference's recomputation from the files (B), each as a whole
    process, alternated A B A B after one warm-up of each; the ratio A/B is taken pair by pair, so a drift
    of the machine's speed during the run affects both sides of a pair alike. Also `manage.py check` alone
    (the start-up every command, web worker and Celery worker pays)."""
    app = [sys.executable, "manage.py", "leaderboard", "--format", "csv"]
    reference = [sys.executable, str(ROOT / "benchmarks" / "reference_leaderboard.py"), str(out)]
    check = [sys.executable, "manage.py", "check"]
    whole_process(app, env), whole_process(reference, env), whole_process(check, env)
    pairs = [(whole_process(app, env), whole_process(reference, env)) for _ in range(runs)]
    checks = [whole_process(check, env) for _ in range(runs)]
    ratios = [a / b for a, b in pairs]
    return {
        "app_leaderboard_seconds": statistics.median(a for a, _ in pairs),
        "reference_leaderboard_seconds": statistics.median(b for _, b in pairs),
        "ratio_median": statistics.median(ratios),
        "ratio_range": [min(ratios), max(ratios)],
        "check_seconds": statistics.median(checks),
        "runs": runs,
    }


def machine_info() -> dict[str, str]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    pg = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-tAc", "show server_version"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "ram": f"{mem_kb / 1024 / 1024:.1f} GiB",
        "python": platform.python_version(),
        "postgresql": pg or "unknown",
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/h2e_scale"))
    parser.add_argument("--db", default="h2e_bench")
    parser.add_argument("--generators", type=int, default=20)
    parser.add_argument("--examples", type=int, default=7000)
    parser.add_argument("--judges", type=int, default=2)
    parser.add_argument("--leaderboard-runs", type=int, default=7)
    parser.add_argument("--process-runs", type=int, default=5, help="A/B pairs of whole-process leaderboards")
    parser.add_argument(
        "--only-processes", action="store_true", help="the database is already imported: time the processes"
    )
    parser.add_argument("--regenerate", action="store_true", help="rewrite the tree even if present")
    parser.add_argument(
        "--shape", choices=sorted(SHAPES), default="bench", help="how the records look (Shape)"
    )
    parser.add_argument("--append-doc", action="store_true", help=f"append the figures to {DOC}")
    parser.add_argument("--note", default="", help="a remark recorded with the figures")
    args = parser.parse_args()

    shape = {
        "generators": args.generators,
        "examples": args.examples,
        "judges": args.judges,
        "shape": args.shape,
    }
    marker = args.out / ".shape.json"
    if args.regenerate or not marker.is_file() or json.loads(marker.read_text()) != shape:
        shutil.rmtree(args.out, ignore_errors=True)
        print(f"writing the tree to {args.out} ...", file=sys.stderr)
        start = time.perf_counter()
        write_tree(
            args.out,
            n_generators=args.generators,
            n_examples=args.examples,
            n_judges=args.judges,
            shape=SHAPES[args.shape],
        )
        marker.write_text(json.dumps(shape))
        print(f"  done in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    size = tree_size(args.out)

    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{args.db}", "DEBUG": "1"}
    if args.only_processes:
        processes = (
            whole_process_leaderboards(args.out, env, args.process_runs) if args.process_runs else None
        )
        print(json.dumps(processes, indent=2))
        if args.append_doc:
            append_process_doc(processes, machine_info(), load_before, args.note)
        return
    fresh_database(args.db, env)
    wall, rss = timed_import(args.out, env)
    board = timed_leaderboard(env, args.leaderboard_runs)
    start = time.perf_counter()
    from_files = file_leaderboard(args.out)
    files_seconds = time.perf_counter() - start
    mismatches = {k for k, v in from_files.items() if abs(board["rows"].get(k, -1.0) - v) > 1e-9}
    processes = whole_process_leaderboards(args.out, env, args.process_runs) if args.process_runs else None

    result = {
        "shape": shape,
        "judgments": board["n_judgments"],
        "tree_bytes": size,
        "import_seconds": wall,
        "import_peak_rss_mib": rss,
        "leaderboard_median_seconds": statistics.median(board["times"]),
        "leaderboard_runs": [round(t, 4) for t in board["times"]],
        "file_recompute_seconds": files_seconds,
        "leaderboards_agree": not mismatches and len(from_files) == len(board["rows"]),
        "whole_processes": processes,
        "load_before": load_before,
    }
    print(json.dumps(result, indent=2))
    if args.append_doc:
        append_doc(result, machine_info(), args.note)


def process_lines(p: dict[str, Any]) -> list[str]:
    met = "met" if p["ratio_median"] <= 0.25 else "MISSED"
    return [
        f"| `manage.py leaderboard`, whole process (median of {p['runs']}) | "
        f"{p['app_leaderboard_seconds']:.2f} s | |",
        f"| the reference's recomputation from the files, whole process (median of {p['runs']}) | "
        f"{p['reference_leaderboard_seconds']:.2f} s | |",
        f"| ratio app / reference, pair by pair (median; min-max) | {p['ratio_median']:.2f} "
        f"({p['ratio_range'][0]:.2f}-{p['ratio_range'][1]:.2f}) | <= 0.25 ({met}) |",
        f"| `manage.py check` (start-up of every command and worker; median of {p['runs']}) | "
        f"{p['check_seconds']:.2f} s | (depends on the load: see the load average) |",
    ]


def append_process_doc(p: dict[str, Any], machine: dict[str, str], load_before: str, note: str) -> None:
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    lines = [
        f"### Whole-process leaderboard, run of {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"Machine: {machine['nproc']} cores ({machine['cpu']}), {machine['ram']} RAM, "
        f"Python {machine['python']}, PostgreSQL {machine['postgresql']}. The database imported from the "
        "tree above (280,000 judgments).",
        "",
        "| measure | figure | target |",
        "| --- | --- | --- |",
        *process_lines(p),
        "",
        f"Load average (1, 5, 15 min) before: {load_before}; after: {load}.",
    ]
    if note:
        lines += ["", f"Note: {note}"]
    insert_into_section("## Import at scale (issue #2)", "\n".join(lines))


def append_doc(result: dict[str, Any], machine: dict[str, str], note: str) -> None:
    s = result["shape"]
    ok = {
        "import": result["import_seconds"] <= 60,
        "rss": result["import_peak_rss_mib"] <= 1536,
        "board": result["leaderboard_median_seconds"] <= 0.3,
    }
    mark = {True: "met", False: "MISSED"}
    lines = [
        f"### Run of {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"Machine: {machine['nproc']} cores ({machine['cpu']}), {machine['ram']} RAM, "
        f"Python {machine['python']}, PostgreSQL {machine['postgresql']}.",
        "",
        "| measure | figure | target |",
        "| --- | --- | --- |",
        f"| tree ({s.get('shape', 'bench')} shape) | {s['generators']} generators x {s['examples']} "
        f"examples x {s['judges']} judges, "
        f"{result['judgments']:,} judgments, {result['tree_bytes'] / 1e9:.2f} GB of JSONL | |",
        f"| import_h2e wall time | {result['import_seconds']:.1f} s | <= 60 s ({mark[ok['import']]}) |",
        f"| import_h2e peak RSS | {result['import_peak_rss_mib']:.0f} MiB | <= 1.5 GB ({mark[ok['rss']]}) |",
        f"| full leaderboard query (median of {len(result['leaderboard_runs'])}) | "
        f"{result['leaderboard_median_seconds'] * 1000:.0f} ms | <= 300 ms ({mark[ok['board']]}) |",
        f"| same leaderboard recomputed from the files | {result['file_recompute_seconds']:.1f} s "
        "| (the reference's way) |",
        f"| leaderboards agree | {'yes' if result['leaderboards_agree'] else 'NO'} | |",
        *(process_lines(result["whole_processes"]) if result["whole_processes"] else []),
    ]
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    lines += [
        "",
        f"Load average (1, 5, 15 min) before the import: {result['load_before']}; after the run: {load}.",
    ]
    if note:
        lines += ["", f"Note: {note}"]
    insert_into_section("## Import at scale (issue #2)", "\n".join(lines))


if __name__ == "__main__":
    main()
