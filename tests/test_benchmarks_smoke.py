"""Every script in benchmarks/ runs: each one at a tiny size, as a whole process, the way docs/benchmarks.md
tells a reader to run it (issue #19 item 23: judge_throughput.py had stopped on a field that moved, and the
figures it wrote could no longer be reproduced). A new script without a smoke run here fails
test_it_has_a_smoke_run_for_every_benchmark_script.

The scripts drop and re-create the PostgreSQL databases they are given: here, names derived from this
session's DATABASE_URL (<name>_smoke_<script>), copies of one database migrated once for the module
(H2E_BENCH_TEMPLATE_DB, benchmarks/databases.py), all dropped afterwards. None is given --append-doc.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
HELPERS = {"calibration_data.py", "databases.py", "results_doc.py"}  # imported by the scripts, not run

# Script -> its arguments at a tiny size; {db}, {tmp}, {port}, {redis_db} and {tree} are filled in.
SMOKE: dict[str, list[str]] = {
    "annotator_load.py": [
        "--db", "{db}", "--annotators", "2", "--seconds", "2", "--think", "0.1", "--ramp", "0.5",
        "--items", "6", "--workers", "1", "--port", "{port}",
    ],
    "calibration_sim.py": ["--worlds", "20", "--n", "50", "--N", "500"],
    "embedding_store.py": ["--db", "{db}", "--procedures", "60", "--vectors", "random", "--add", "6"],
    "failure_meaning.py": [
        "--db", "{db}", "--failures", "960", "--topics", "2", "--k", "3", "--runs", "3",
    ],
    "goal_step_build.py": ["--procedures", "80", "--embedding", "words"],
    "import_scale.py": [
        "--out", "{tmp}/tree", "--db", "{db}", "--generators", "2", "--examples", "15", "--judges", "1",
        "--leaderboard-runs", "1", "--process-runs", "1",
    ],
    "judge_throughput.py": ["--db", "{db}", "--redis-db", "{redis_db}", "-n", "40", "--rpm-n", "5"],
    "mining_scale.py": ["--db", "{db}", "--candidates", "300", "--size-mb", "1"],
    "reference_leaderboard.py": ["{tree}"],
    "reward_service.py": ["--db", "{db}", "--items", "16", "--latency", "0.05", "--runs", "1"],
    "researcher_pages.py": [
        "--db", "{db}", "--generators", "2", "--examples", "30", "--judges", "2", "--runs", "1",
        "--warmup", "1", "--calibration-items", "24",
    ],
}  # fmt: skip

# What each run's output must hold: a figure every script prints when it got to the end.
EXPECTED = {
    "annotator_load.py": '"errors": []',
    "calibration_sim.py": '"two_rounds"',  # the routing comparison, printed last
    "embedding_store.py": '"texts_to_embed"',
    "failure_meaning.py": '"patterns_page"',
    "goal_step_build.py": "peak RSS:",
    "import_scale.py": '"leaderboards_agree": true',
    "judge_throughput.py": '"rpm_observed"',
    "mining_scale.py": '"peak_rss_mb"',
    "reference_leaderboard.py": "generator-model-01",
    "reward_service.py": '"two_trainers_walls_s"',
    "researcher_pages.py": "calibration round job over",  # the last page of item 22 (issue #31)
}
# Further lines a run must print (the pages each script times).
ALSO_EXPECTED = {
    "researcher_pages.py": [
        "failure browser: text search q=step",
        "calibrated leaderboard (default judge)",
        "calibrated leaderboard, computed afresh",
        "adjudication queue of the calibration study (open, first page)",
        "adjudication: a gold decision",
        "calibration round drawn in the request",
    ],
}


def _scripts() -> set[str]:
    return {path.name for path in BENCHMARKS.glob("*.py") if path.name != "__init__.py"}


def test_it_has_a_smoke_run_for_every_benchmark_script() -> None:
    assert _scripts() - HELPERS == set(SMOKE), "give each script in benchmarks/ a tiny run in SMOKE"
    assert set(EXPECTED) == set(SMOKE)
    for helper in HELPERS:
        assert "__main__" not in (BENCHMARKS / helper).read_text(), f"{helper} is a script: give it a run"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _dropdb(name: str) -> None:
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", name], check=False)


def _smoke_name(suffix: str) -> str:
    url = os.environ.get("DATABASE_URL", "")
    if urlparse(url).scheme not in {"postgres", "postgresql"}:
        pytest.skip("the benchmarks run on PostgreSQL (DATABASE_URL)")
    # Each pytest-xdist worker has its own names: two workers running smoke tests would otherwise create and
    # drop one template database under each other.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return f"{urlparse(url).path.lstrip('/')}_smoke_{worker}{'_' if worker else ''}{suffix}"[:63]


@pytest.fixture(scope="module")
def migrated_template() -> Iterator[str]:
    """One migrated database the scripts' databases are copied from (no connection left open to it)."""
    name = _smoke_name("template")
    _dropdb(name)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", name], check=True)
    url = urlparse(os.environ["DATABASE_URL"])._replace(path=f"/{name}").geturl()
    env = {**os.environ, "DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    yield name
    _dropdb(name)


@pytest.fixture
def smoke_db(request: pytest.FixtureRequest) -> Iterator[str]:
    name = _smoke_name(str(request.node.callspec.params["script"]).removesuffix(".py"))
    yield name
    _dropdb(name)


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SMOKE))
def test_it_runs_the_benchmark_at_a_tiny_size(
    script: str, smoke_db: str, migrated_template: str, tmp_path: Path
) -> None:
    redis_url = os.environ.get("REDIS_URL", "")
    if script == "judge_throughput.py" and not redis_url:
        pytest.skip("judge_throughput.py enqueues its jobs on Redis (REDIS_URL)")
    tree = tmp_path / "reference-tree"
    if script == "reference_leaderboard.py":
        sys.path.insert(0, str(ROOT))
        from benchmarks.import_scale import write_tree

        write_tree(tree, n_generators=2, n_examples=5, n_judges=1)
    values = {
        "db": smoke_db,
        "tmp": str(tmp_path),
        "port": str(_free_port()),
        "redis_db": (urlparse(redis_url).path.lstrip("/") or "0") if redis_url else "0",
        "tree": str(tree),
    }
    argv = [arg.format(**values) for arg in SMOKE[script]]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "H2E_BENCH_TEMPLATE_DB": migrated_template}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{script} {' '.join(argv)}\n{done.stderr[-3000:]}"
    assert EXPECTED[script] in done.stdout, done.stdout[-2000:]
    for line in ALSO_EXPECTED.get(script, []):
        assert line in done.stdout, (line, done.stdout[-2000:])
    if script == "import_scale.py":
        figures = json.loads(done.stdout)
        assert figures["judgments"] == 2 * 15 and figures["whole_processes"]["runs"] == 1
