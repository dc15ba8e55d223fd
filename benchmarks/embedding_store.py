"""Embeddings as stored data (issue #22): a goal-step build from procedures whose vectors are stored, as a
whole process, and what embedding costs the first time and when procedures are added.

    .venv/bin/python benchmarks/embedding_store.py --db h2e_bench_embed [--procedures 10000]
        [--vectors minilm|random] [--add 1000] [--first-time 1000] [--keep]

1. Drops, creates and migrates the database; stores --procedures synthetic procedures (benchmarks/
   goal_step_build.py's: English-like, 4-12 steps, 14 topics, half ordered).
2. Their vectors: --vectors minilm runs `manage.py embed --source procedures --inline` (the real model, a
   whole process); --vectors random stores random unit vectors under the default model's identity (the cost
   of storing, reading and searching vectors does not depend on where they came from; the database is dropped
   afterwards).
3. The build, as a whole process: `manage.py build_tasks bench --inline`, its wall time and peak RSS (the
   child's own rusage, os.wait4), and how many texts it embedded (0: the model never loaded).
4. --add more procedures, then the texts an embed job finds to embed, against the new distinct texts
   counted here: equal, or the script fails.
5. --first-time N: a fresh model row's worth of embedding for N procedures' texts with the real model (one
   `manage.py embed --inline` on a second database), texts per second beside the two-core float32 bound:
   the model's multiply-adds per token (config.json) times the tokens of the texts, at the GFLOP/s numpy's
   float32 matrix product reaches on this machine.
Prints one JSON object. --append-doc writes nothing here: docs/benchmarks.md quotes the figures by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import fresh_database  # noqa: E402
from benchmarks.goal_step_build import synthetic_procedures  # noqa: E402

CHUNK = 5_000


def setup_django(db: str, *, migrate: bool) -> None:
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{db}"
    os.environ.setdefault("DEBUG", "1")
    os.environ["DJANGO_SETTINGS_MODULE"] = "h2e_site.settings"
    os.environ["H2E_EMBED_AFTER_IMPORTS"] = "0"
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def store_procedures(n: int, *, seed: int, prefix: str) -> set[str]:
    """n synthetic procedures in the bench split; their distinct texts (goals and steps)."""
    from mining.models import Procedure, Split, Topic

    procedures = synthetic_procedures(n, seed)
    topics = {t: Topic.objects.get_or_create(name=t)[0] for t in {p.topic for p in procedures if p.topic}}
    texts: set[str] = set()
    for start in range(0, n, CHUNK):
        rows = []
        for p in procedures[start : start + CHUNK]:
            rows.append(
                Procedure(
                    source_example_id=f"{prefix}-{p.pk}",
                    topic=topics.get(p.topic) if p.topic else None,
                    goal=p.goal,
                    steps=list(p.steps),
                    split=Split.BENCH,
                    ordered=p.ordered,
                )
            )
            texts.update((p.goal, *p.steps))
        Procedure.objects.bulk_create(rows)
    return texts


class RandomUnit:
    """Random unit vectors under the default model's identity (see the module's docstring)."""

    def __init__(self, seed: int) -> None:
        from h2e_site.embeddings.specs import minilm_spec

        self.spec = minilm_spec()
        self.rng = np.random.default_rng(seed)

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = self.rng.standard_normal((len(texts), self.spec.dimension)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def manage(db: str, *args: str) -> dict[str, Any]:
    """`manage.py ARGS` as a whole process: wall seconds, its own peak RSS (os.wait4), its output."""
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db}"}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode() + err.read().decode()
    if process.returncode:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{text}")
    return {"wall_s": round(wall, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "out": text}


def fill(vectors: str, texts: set[str], db: str, seed: int) -> dict[str, Any]:
    from h2e_site.embeddings.store import StoredEmbed

    if vectors == "minilm":
        run = manage(db, "embed", "--source", "procedures", "--inline", "-v", "0")
        return {"how": "manage.py embed --inline (all-MiniLM-L6-v2)", **_without_out(run)}
    start = time.perf_counter()
    embed = StoredEmbed(encoder=RandomUnit(seed))
    embed.fill(embed.missing(texts))
    return {
        "how": "random unit vectors, stored",
        "texts": embed.embedded,
        "s": round(time.perf_counter() - start, 1),
    }


def _without_out(run: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in run.items() if key != "out"}


def build(db: str) -> dict[str, Any]:
    from goal_step.models import TaskSet

    run = manage(db, "build_tasks", "bench", "--inline", "--seed", "1", "-v", "0")
    task_set = TaskSet.objects.get(name="bench")
    return {
        **_without_out(run),
        "examples": task_set.examples.count(),
        "texts": task_set.settings["texts"],
        "texts_embedded": task_set.settings["texts_embedded"],
    }


def add(n: int, seed: int, known: set[str]) -> dict[str, Any]:
    from h2e_site.embeddings.store import StoredEmbed
    from mining.embedding import procedure_texts

    texts = store_procedures(n, seed=seed + 1, prefix="added")
    new = texts - known
    missing = StoredEmbed(encoder=RandomUnit(seed)).missing(procedure_texts())
    if set(missing) != new:
        raise SystemExit(f"after adding {n} procedures: {len(missing)} texts to embed, {len(new)} are new")
    return {"procedures_added": n, "new_texts": len(new), "texts_to_embed": len(missing)}


def float32_gflops(seconds: float = 2.0) -> float:
    """What numpy's float32 matrix product reaches here (BLAS on every core), in GFLOP/s: the best of a
    product the shape of the encoder's feed-forward layer, repeated for `seconds`."""
    a = np.random.default_rng(0).standard_normal((8192, 384)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((384, 1536)).astype(np.float32)
    a @ b
    best = 0.0
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        start = time.perf_counter()
        a @ b
        best = max(best, 2 * 8192 * 384 * 1536 / (time.perf_counter() - start) / 1e9)
    return best


def first_time(n: int, db: str, seed: int) -> dict[str, Any]:
    """The real model over n procedures' texts, on a database of its own; the bound beside it."""
    from tokenizers import Tokenizer

    from h2e_site.embeddings.specs import packaged_model_dir

    fresh_database(db)
    manage(db, "migrate", "-v", "0")
    script = (
        f"import django; django.setup(); from benchmarks.embedding_store import store_procedures; "
        f"store_procedures({n}, seed={seed + 2}, prefix='first')"
    )
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db}", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True)
    run = manage(db, "embed", "--source", "procedures", "--inline", "-v", "1")
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", db], check=True)
    done = re.search(r"succeeded: (\d+) done", run["out"])
    if done is None:
        raise SystemExit(f"the embed job did not succeed:\n{run['out']}")
    texts = sorted({t for p in synthetic_procedures(n, seed + 2) for t in (p.goal, *p.steps)})
    tokenizer = Tokenizer.from_file(str(packaged_model_dir() / "tokenizer.json"))
    tokenizer.no_padding()  # tokenizer.json pads to 128: the tokens the model reads, not the padding
    tokens = sum(len(e.ids) for e in tokenizer.encode_batch(texts))
    config = json.loads((packaged_model_dir() / "config.json").read_text())
    width, inner, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    flop_per_token = (
        2 * layers * (4 * width * width + 2 * width * inner)
    )  # the dense layers; attention is small
    gflops = float32_gflops()
    return {
        "procedures": n,
        "texts": int(done.group(1)),
        "tokens_per_text": round(tokens / len(texts), 1),
        "wall_s": run["wall_s"],
        "texts_per_s": round(int(done.group(1)) / run["wall_s"], 1),
        "note": "whole process: start-up, model load and storing included",
        "float32_gflops": round(gflops, 1),
        "bound_texts_per_s": round(gflops * 1e9 * len(texts) / (flop_per_token * tokens), 1),
        "peak_rss_mb": run["peak_rss_mb"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True)
    parser.add_argument("--procedures", type=int, default=10_000)
    parser.add_argument("--vectors", choices=["minilm", "random"], default="minilm")
    parser.add_argument("--add", type=int, default=1_000)
    parser.add_argument("--first-time", type=int, default=0, help="procedures for the first-time figure")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    migrate = fresh_database(args.db)
    setup_django(args.db, migrate=migrate)
    random.seed(args.seed)
    result: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load_before": round(os.getloadavg()[0], 2),
        "procedures": args.procedures,
        "vectors": args.vectors,
    }
    start = time.perf_counter()
    texts = store_procedures(args.procedures, seed=args.seed, prefix="bench")
    result["store_procedures_s"] = round(time.perf_counter() - start, 1)
    result["texts"] = len(texts)
    result["fill"] = fill(args.vectors, texts, args.db, args.seed)
    result["build"] = build(args.db)
    if result["build"]["texts_embedded"]:
        raise SystemExit(f"the build embedded {result['build']['texts_embedded']} texts: vectors were stored")
    if args.add:
        result["add"] = add(args.add, args.seed, texts)
    if args.first_time:
        result["first_time"] = first_time(args.first_time, f"{args.db}_first", args.seed)
    result["load_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result, indent=1))
    if not args.keep:
        from django.db import connections

        connections.close_all()
        subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", args.db], check=True)


if __name__ == "__main__":
    main()
