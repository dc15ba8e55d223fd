"""Failures by meaning (issue #22 item 4) at scale: similar failures among 600,000 failure vectors and a
topic's failure patterns.

    .venv/bin/python benchmarks/failure_meaning.py --db h2e_bench_meaning [--failures 600000] [--topics 10]
        [--k 20] [--runs 20] [--keep]

1. Drops, creates and migrates the database; fills it in PostgreSQL itself (INSERT ... SELECT over
   generate_series): --topics topics, 8 generators, 2 judges, --failures / 48 procedures, 3 critical
   failures a judgment, each with a text of its own.
2. Stores a RANDOM unit vector (float16, 384 dimensions) per failure description under the default model's
   identity (all-MiniLM-L6-v2's name and revision), by a binary COPY: the cost of storing, reading, indexing
   and searching vectors does not depend on where they came from, but their neighbours and clusters mean
   nothing, and random vectors are the hardest case for an inverted-file index's recall (no structure).
3. Times, in this process (the figures below do not include a process's start-up):
   - the first build of the failure space (read every vector from the store, index it), and its peak RSS;
   - similar failures of one failure once the space is built, median and p95 over --runs failures drawn with
     a seed: the service (its queries included) and the htmx endpoint through Django's test Client;
   - the index's recall@10 against the exact search on 200 rows, and the search alone at several nprobe;
   - the clustering job of one topic (--failures / --topics failures) as a whole process:
     `manage.py failure_patterns --topic ... --k K --inline`, wall time and peak RSS;
   - the patterns page once computed and the failure browser on one pattern, median and p95.
Targets: similar failures <= 100 ms; the patterns page <= 300 ms. Prints one JSON object; docs/benchmarks.md
quotes the figures by hand.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import fresh_database  # noqa: E402

GENERATORS, JUDGES, PER_JUDGMENT = 8, 2, 3
PER_PROCEDURE = GENERATORS * JUDGES * PER_JUDGMENT  # failures
DIMENSION = 384
COPY_CHUNK = 20_000

_FILL_SQL = """
INSERT INTO mining_topic (name, is_weborganizer)
SELECT 'Bench topic ' || lpad(t::text, 2, '0'), false FROM generate_series(1, {topics}) AS t;

INSERT INTO mining_procedure (source_example_id, goal, resources, steps, url, source_text, split, created_at,
                              topic_id, n_tokens)
SELECT 'bench-' || lpad(i::text, 6, '0'), 'Goal ' || i, '[]', '["a", "b", "c"]', '', '', 'bench', now(),
       t.ids[1 + i % array_length(t.ids, 1)], 100
FROM generate_series(0, {procedures} - 1) AS i,
     (SELECT array_agg(id ORDER BY name) AS ids FROM mining_topic WHERE name LIKE 'Bench topic %') AS t;

INSERT INTO judging_generator (generator_id, model, backend, prompt_style, vllm_overrides, prompt_sha256,
                               prompt_path, prompt_text, run_name, manifest, created_at, config)
SELECT lpad((g + 1)::text, 12, '0'), 'org/generator-model-' || g, 'openai', 'inst', '{{}}', '', '', '', '',
       '{{}}', now(), '{{}}'
FROM generate_series(0, {generators} - 1) AS g;

INSERT INTO judging_judge (judge_id, model, backend, vllm_overrides, prompt_sha256, prompt_path,
                           prompt_text, is_demo_model, manifest, created_at, config)
SELECT 'j' || lpad((j + 1)::text, 11, '0'), 'judge-org/judge-model-' || j, 'vllm', '{{}}', '', '', '', false,
       '{{}}', now(), '{{}}'
FROM generate_series(0, {judges} - 1) AS j;

INSERT INTO judging_generation (prompt, model_completion, predicted_steps, n_tokens, error, extra,
                                created_at, procedure_id, generator_id, attempts, updated_at)
SELECT '', '', '["a", "b"]', 50, '', '{{}}', now(), p.id, g.id, 1, now()
FROM judging_generator AS g CROSS JOIN mining_procedure AS p ORDER BY g.id, p.id;

INSERT INTO judging_judgment (reasoning, raw_output, parse_failed, has_failure, n_failures, extra,
                              created_at, generation_id, generator_id, procedure_id, judge_id, topic_id,
                              attempts, updated_at)
SELECT '', '', false, true, {per_judgment}, '{{}}', now(), gn.id, gn.generator_id, p.id, j.id, p.topic_id, 1,
       now()
FROM judging_generation AS gn JOIN mining_procedure AS p ON p.id = gn.procedure_id
CROSS JOIN judging_judge AS j
ORDER BY gn.id, j.id;

INSERT INTO judging_criticalfailure ("order", description, l1_steps, l2_steps, judgment_id,
                                     steps_out_of_range)
SELECT k, 'Failure ' || jm.id || '.' || k || ': the generated steps leave out what the reference needs',
       '[1]', '[1]', jm.id, false
FROM judging_judgment AS jm CROSS JOIN generate_series(0, {per_judgment} - 1) AS k
ORDER BY jm.id, k;
"""


def psql(db: str, sql: str) -> str:
    out = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-qtA", "-d", db, "-c", sql],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return out.stdout.strip()


def connect(db: str, *, autocommit: bool = True) -> Any:
    import psycopg

    return psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{db}", autocommit=autocommit)


def fill(db: str, *, failures: int, topics: int) -> dict[str, Any]:
    procedures = max(1, -(-failures // PER_PROCEDURE))
    sql = _FILL_SQL.format(
        topics=topics, procedures=procedures, generators=GENERATORS, judges=JUDGES, per_judgment=PER_JUDGMENT
    )
    start = time.perf_counter()
    with connect(db) as connection:
        for statement in sql.strip().split(";\n"):
            if statement.strip():
                connection.execute(statement)
    return {"failures": procedures * PER_PROCEDURE, "fill_s": round(time.perf_counter() - start, 1)}


def store_random_vectors(db: str, model_id: int, *, seed: int) -> dict[str, Any]:
    """A random unit float16 vector per failure description, stored by its text hash (binary COPY)."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    n = 0
    with connect(db, autocommit=False) as reader, connect(db) as writer:
        rows = reader.cursor(name="descriptions")
        rows.execute("SELECT description FROM judging_criticalfailure ORDER BY id")
        with writer.cursor().copy(
            "COPY embeddings_textvector (model_id, text_hash, vector) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["bigint", "varchar", "bytea"])
            while chunk := rows.fetchmany(COPY_CHUNK):
                vectors = rng.standard_normal((len(chunk), DIMENSION)).astype(np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                half = vectors.astype("<f2")
                for (text,), vector in zip(chunk, half, strict=True):
                    copy.write_row((model_id, hashlib.sha256(text.encode()).hexdigest(), vector.tobytes()))
                n += len(chunk)
    return {"vectors": n, "store_s": round(time.perf_counter() - start, 1), "how": "random unit vectors"}


def environment(db: str) -> None:
    """This process's and its children's: the database, DEBUG (no SECRET_KEY needed; switched off in this
    process before the pages are timed), no embed job after imports."""
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{db}"
    os.environ.setdefault("DEBUG", "1")
    os.environ["DJANGO_SETTINGS_MODULE"] = "h2e_site.settings"
    os.environ["H2E_EMBED_AFTER_IMPORTS"] = "0"
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")


def setup_django() -> None:
    import django

    django.setup()


def timed(call: Callable[[], Any], runs: int) -> dict[str, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": round(1000 * statistics.median(times), 1), "p95_ms": round(1000 * p95, 1)}


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def space_figures(runs: int, seed: int) -> tuple[dict[str, Any], Any]:
    from annotation.failures.meaning.space import default_model, failure_seen, failure_space, similar_failures
    from judging.models import CriticalFailure

    model = default_model()
    assert model is not None
    rss_before = peak_rss_mb()
    start = time.perf_counter()
    space = failure_space(model)
    build_s = time.perf_counter() - start
    pks = list(CriticalFailure.objects.order_by("pk").values_list("pk", flat=True))
    chosen = np.random.default_rng(seed).choice(len(pks), size=min(runs, len(pks)), replace=False)
    asked = [failure_seen("judge", pks[i]) for i in chosen]
    similar_failures(asked[0])  # warm: the key's queries, the first search
    queue = iter(asked * 2)
    service = timed(lambda: similar_failures(next(queue)), len(asked))
    found = similar_failures(asked[0])
    return {
        **_after_adding_one(),
        "space_rows": space.n,
        "index": "exact (IndexFlatIP)"
        if space.index.exact
        else f"IVF fp16, nprobe {space.index.index.nprobe}",
        "first_build_s": round(build_s, 1),
        "peak_rss_mb_before_build": rss_before,
        "peak_rss_mb_after_build": peak_rss_mb(),
        "similar_service": service,
        "similar_neighbours": len(found.neighbours),
    }, space


def _after_adding_one() -> dict[str, Any]:
    """A failure added and its vector stored, then similar failures of it: the request that grows the
    space (in place) and finds it."""
    from annotation.failures.meaning.space import default_model, failure_seen, similar_failures
    from h2e_site.embeddings.store import text_hash, vectors_save
    from judging.models import CriticalFailure

    model = default_model()
    assert model is not None
    last = CriticalFailure.objects.order_by("-pk").first()
    assert last is not None
    added = CriticalFailure.objects.create(
        judgment_id=last.judgment_id, order=last.order + 100, description="A failure added after the build"
    )
    vector = np.random.default_rng(99).standard_normal((1, DIMENSION)).astype(np.float32)
    vectors_save(model, [text_hash(added.description)], vector / np.linalg.norm(vector))
    failure = failure_seen("judge", added.pk)
    assert failure is not None
    start = time.perf_counter()
    similar_failures(failure)
    return {"similar_after_adding_a_failure_ms": round(1000 * (time.perf_counter() - start), 1)}


def recall_figures(space: Any, db: str, seed: int) -> dict[str, Any]:
    """recall@10 of the space's index against the exact search on 200 rows, and the search alone at several
    nprobe (the stored vectors read again, in the space's order)."""
    from annotation.failures.meaning.space import default_model, failure_descriptions
    from h2e_site.embeddings.search import recall_at_k, unit_rows
    from h2e_site.embeddings.store import text_hash, vectors_read

    if space.index.exact:
        return {"exact": True}
    model = default_model()
    texts = [text for _, _, text in failure_descriptions()]
    vectors, _ = vectors_read(model, [text_hash(t) for t in texts])
    vectors = unit_rows(vectors, np.float16)
    queries = vectors[np.random.default_rng(seed + 1).choice(len(vectors), size=50, replace=False)]
    sweep = {}
    for nprobe in (64, 256, 512, 1024):
        space.index.index.nprobe = nprobe
        search = timed(_searches(space.index, queries), len(queries))
        sweep[nprobe] = {
            "search_only": search,
            "recall_at_10": round(recall_at_k(space.index, vectors, k=10, sample=200, seed=seed), 3),
        }
    from annotation.failures.meaning.space import SPACE_NPROBE

    space.index.index.nprobe = SPACE_NPROBE
    return {"nprobe_sweep": sweep, "used_nprobe": SPACE_NPROBE}


def _searches(index: Any, queries: np.ndarray) -> Callable[[], Any]:
    """One search of the next query at each call (a batch of one: what a page asks)."""
    block = iter(queries)
    return lambda: index.search(next(block)[None, :], 18)


def manage(db: str, *args: str) -> dict[str, Any]:
    """`manage.py ARGS` as a whole process: wall seconds and, where GNU time is installed, its peak RSS
    (measured by /usr/bin/time, its parent: a child forked from this large process would report this
    process's size as its own peak)."""
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db}"}
    gnu_time = Path("/usr/bin/time").exists()
    with tempfile.TemporaryDirectory() as folder:
        peak = Path(folder) / "peak"
        prefix = ["/usr/bin/time", "-f", "%M", "-o", str(peak)] if gnu_time else []
        start = time.perf_counter()
        done = subprocess.run(
            [*prefix, sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
        )
        wall = time.perf_counter() - start
        if done.returncode:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{(done.stdout + done.stderr)[-3000:]}")
        rss = round(int(peak.read_text().split()[-1]) / 1024, 1) if gnu_time else None
    return {"wall_s": round(wall, 2), "peak_rss_mb": rss}


def pattern_figures(db: str, *, k: int, runs: int) -> dict[str, Any]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from annotation.failures.meaning.models import FailurePatternRun
    from mining.models import Topic

    topic = Topic.objects.filter(name__startswith="Bench topic ").order_by("name").first()
    assert topic is not None
    job = manage(db, "failure_patterns", "--topic", topic.name, "--k", str(k), "--inline", "-v", "0")
    run = FailurePatternRun.objects.select_related("job").get(topic=topic)
    assert run.job is not None and run.job.started_at and run.job.finished_at
    job["job_s"] = round((run.job.finished_at - run.job.started_at).total_seconds(), 2)
    settings.DEBUG = False
    user, _ = get_user_model().objects.get_or_create(username="bench-staff", defaults={"is_staff": True})
    client = Client()
    client.force_login(user)
    page_url = reverse("failures:failure_patterns", args=[topic.pk])
    largest = run.patterns.order_by("rank").first()
    assert largest is not None
    browser_url = reverse("failures:failure_list") + f"?pattern={largest.pk}"
    pages = {}
    for name, url in (("patterns_page", page_url), ("browser_on_a_pattern", browser_url)):
        for _ in range(2):
            assert client.get(url).status_code == 200
        pages[name] = timed(lambda url=url: client.get(url), runs)  # type: ignore[misc]
        pages[name]["bytes"] = len(client.get(url).content)
    return {
        "topic_failures": run.n_failures,
        "k": k,
        "largest_pattern": largest.size,
        "clustering_job_whole_process": job,
        **pages,
    }


def similar_http(runs: int, seed: int) -> dict[str, float]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from judging.models import CriticalFailure

    settings.DEBUG = False
    user, _ = get_user_model().objects.get_or_create(username="bench-staff", defaults={"is_staff": True})
    client = Client()
    client.force_login(user)
    pks = list(CriticalFailure.objects.order_by("pk").values_list("pk", flat=True))
    chosen = np.random.default_rng(seed + 2).choice(len(pks), size=min(runs, len(pks)), replace=False)
    urls = iter([reverse("failures:similar_failures", args=[f"judge-{pks[i]}"]) for i in chosen])
    client.get(reverse("failures:similar_failures", args=[f"judge-{pks[0]}"]), HTTP_HX_REQUEST="true")
    return timed(lambda: client.get(next(urls), HTTP_HX_REQUEST="true"), len(chosen))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True)
    parser.add_argument("--failures", type=int, default=600_000)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load_before": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
        "vectors": "random unit vectors (float16, 384 dims) under the default model's identity",
    }
    environment(args.db)
    if fresh_database(args.db):
        manage(args.db, "migrate", "-v", "0")
    setup_django()
    from h2e_site.embeddings.specs import minilm_spec
    from h2e_site.embeddings.store import model_row

    result["fill"] = fill(args.db, failures=args.failures, topics=args.topics)
    result["store"] = store_random_vectors(args.db, model_row(minilm_spec()).pk, seed=args.seed)
    psql(args.db, "VACUUM ANALYZE")
    space, index = space_figures(args.runs, args.seed)
    result["space"] = space
    result["similar_http"] = similar_http(args.runs, args.seed)
    result["recall"] = recall_figures(index, args.db, args.seed)
    del index
    result["patterns"] = pattern_figures(args.db, k=min(args.k, args.failures // args.topics), runs=args.runs)
    result["load_after"] = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(json.dumps(result, indent=1))
    if not args.keep:
        from django.db import connections

        connections.close_all()
        subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", args.db], check=True)


if __name__ == "__main__":
    main()
