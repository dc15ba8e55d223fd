"""The whole loop for real: a Celery worker on the local Redis, the embedded llama.cpp server with SmolLM2,
PostgreSQL. Two paper procedures are imported, L2 generated with configs/generators/smollm2-local.yaml and
judged with configs/judges/smollm2-local.yaml through the `generate` and `judge` commands (--wait), and the
leaderboard row appears. SmolLM2-135M is a plumbing model: the test checks the plumbing (exactly n steps
thanks to the grammar, raw outputs kept, a How2Score row), not the quality of its judgments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from h2e_site.jobs.models import Job, JobStatus
from judging.models import Generation, Generator, Judge, JudgeError, Judgment
from judging.selectors import how2score_leaderboard
from mining.services import bench_import
from tests.worker_process import ROOT, Worker, process_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PAPER_BENCH = ROOT / "demo/paper-examples/bench.jsonl"
PAPER_IDS = ("paper-coconut-oil-pulling", "paper-particle-trajectory")  # two: the model runs on the CPU
COMMAND_TIMEOUT_SECONDS = 420
N = len(PAPER_IDS)


def paper_procedures(tmp_path: Path) -> Path:
    records = [json.loads(line) for line in PAPER_BENCH.read_text(encoding="utf-8").splitlines()]
    chosen = [r for r in records if r["source_example_id"] in PAPER_IDS]
    assert len(chosen) == len(PAPER_IDS)
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen), encoding="utf-8")
    return path


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
    )
    assert result.returncode == 0, f"manage.py {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_it_generates_and_judges_paper_procedures_on_a_worker_with_the_embedded_model(
    local_llm_url: str, tmp_path: Path
) -> None:
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        pytest.skip("REDIS_URL is not set (CI sets it)")
    assert bench_import(paths=[paper_procedures(tmp_path)], split="bench").ok
    env = process_env(redis_url=redis_url, var_dir=tmp_path, H2E_LOCAL_LLM_URL=local_llm_url)
    worker = Worker(env)
    try:
        worker.wait_until_ready()
        out = manage(
            env,
            "generate",
            "--generator-config",
            "configs/generators/smollm2-local.yaml",
            "--limit",
            str(len(PAPER_IDS)),
            "--wait",
        )
        assert f"succeeded: {N} done, 0 failed of {N}" in out, worker.log
        generator = Generator.objects.get()
        generations = list(Generation.objects.filter(generator=generator).select_related("procedure"))
        assert len(generations) == N
        for generation in generations:
            assert generation.error == ""
            assert len(generation.predicted_steps) == len(generation.procedure.steps)  # the grammar's n
            assert generation.model_completion.startswith("1. ")
            assert generation.n_tokens and generation.step_count_mismatch is False

        out = manage(
            env,
            "judge",
            "--judge-config",
            "configs/judges/smollm2-local.yaml",
            "--generator",
            generator.generator_id,
            "--wait",
        )
        assert f"succeeded: {N} done, 0 failed of {N}" in out, worker.log
    finally:
        worker.stop()

    judge = Judge.objects.get()
    assert judge.is_demo_model
    judgments = list(Judgment.objects.filter(judge=judge))
    assert len(judgments) == N
    assert all(j.raw_output and j.generator_id == generator.pk for j in judgments)
    assert not JudgeError.objects.exists()  # no request failed (a failed one is never a judgment)
    jobs = list(Job.objects.order_by("pk"))
    assert [(j.kind, j.status) for j in jobs] == [
        ("generate", JobStatus.SUCCEEDED),
        ("judge", JobStatus.SUCCEEDED),
    ]
    assert all(f"[{j.celery_task_id}] received" in worker.log for j in jobs)
    [row] = how2score_leaderboard()
    assert (row.generator_id, row.judge_id) == (generator.generator_id, judge.judge_id)
    assert row.score.n_examples + row.score.n_parse_failed == N
