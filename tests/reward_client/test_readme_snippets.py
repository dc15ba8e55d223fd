"""The training guide's "Training with How2Score as a reward" (docs/guides/researcher/training.md, once the
README's): its TRL, verl and open-instruct snippets, run as they are written (read out of the page) and called
as each trainer calls them, against the live studio."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from judging.training.models import RewardCall, TrainingRun
from tests.reward_client.conftest import FAILS, STEPS, Studio, ground_truth, numbered
from tests.reward_client.trainers import (
    TRLAsyncLoop,
    TRLLogs,
    VerificationResult,
    VerifierFunction,
    apply_verifiable_reward,
    build_all_verifiers,
    repeated,
    trl_rewards,
    verl_batch,
    verl_custom_reward_fn,
)

README = Path(settings.BASE_DIR) / "docs/guides/researcher/training.md"
GOOD, FAILING, BULLETS = numbered(STEPS), numbered(STEPS, marker=FAILS), "\n".join(f"- {s}" for s in STEPS)


def snippet(name: str) -> str:
    """The fenced block after `<!-- snippet: name -->` in the README."""
    match = re.search(rf"<!-- snippet: {re.escape(name)} -->\n```\w*\n(.*?)\n```", README.read_text(), re.S)
    assert match, f"README has no snippet {name!r}"
    return match.group(1)


def test_the_trl_snippet_scores_a_grpo_batch(reward_env: Studio) -> None:
    namespace: dict[str, Any] = {}
    exec(snippet("trl"), namespace)
    funcs = [namespace["how2score"], namespace["step_format"], namespace["length"]]
    inputs = repeated([{"prompt": "How do I repot a houseplant?", "ground_truth": ground_truth()}], 3)
    with TRLAsyncLoop() as loop:
        rows = trl_rewards(funcs, inputs, [GOOD, FAILING, BULLETS], step=11, logs=TRLLogs(), loop=loop)
    assert rows == [[1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]]
    assert reward_env.batches == [3]
    run = TrainingRun.objects.get(name="qwen3-grpo-a")
    assert run.policy == "Qwen/Qwen3-8B"
    assert set(RewardCall.objects.filter(run=run).values_list("step", flat=True)) == {11}


def test_the_verl_snippet_loads_the_batch_function_and_scores_a_batch(reward_env: Studio) -> None:
    command = snippet("verl").replace("python -m verl.trainer.main_ppo", "printf '%s\\n'", 1)
    python_dir = str(Path(sys.executable).parent)
    bash = shutil.which("bash")
    assert bash is not None
    env = {**os.environ, "PATH": f"{python_dir}:{os.environ.get('PATH', '')}"}
    printed = subprocess.run(
        [bash, "-c", command], env=env, capture_output=True, text=True, check=True
    ).stdout
    config = dict(line.lstrip("+").split("=", 1) for line in printed.splitlines() if "=" in line)
    assert config["reward_model.reward_manager"] == "batch"
    prefix = "custom_reward_function.reward_kwargs."
    reward_kwargs = {
        key.removeprefix(prefix): value for key, value in config.items() if key.startswith(prefix)
    }
    compute_score = verl_custom_reward_fn(
        config["custom_reward_function.path"], config["custom_reward_function.name"], reward_kwargs
    )
    samples = [
        {"data_source": "how2score", "response": text, "reward_model": {"ground_truth": ground_truth()}}
        for text in (GOOD, FAILING, BULLETS)
    ]
    assert [s["score"] for s in verl_batch(compute_score, samples)] == [3.0, 2.0, 2.0]
    assert reward_env.batches == [3]
    assert RewardCall.objects.filter(run__name="qwen3-grpo-a").count() == 3


def test_the_open_instruct_snippet_makes_the_verifier_build_all_verifiers_finds(reward_env: Studio) -> None:
    namespace: dict[str, Any] = {
        "VerifierFunction": VerifierFunction,
        "VerificationResult": VerificationResult,
    }
    exec(snippet("open-instruct"), namespace)
    verifiers = build_all_verifiers(object())
    assert isinstance(verifiers["how2score"], namespace["How2ScoreVerifier"])
    rewards, _ = apply_verifiable_reward(
        verifiers,
        responses=[[1], [2], [3]],
        decoded_responses=[GOOD, FAILING, BULLETS],
        ground_truths=[ground_truth()] * 3,
        datasets=["how2score"] * 3,
        queries=["How do I repot a houseplant?"] * 3,
    )
    assert rewards == [30.0, 20.0, 20.0]
    assert reward_env.batches == [3]


@pytest.mark.parametrize("name", ["trl", "verl", "open-instruct"])
def test_each_snippet_is_in_the_readme_section(name: str) -> None:
    section = README.read_text().split("## Training with How2Score as a reward", 1)[1].split("\n## ", 1)[0]
    assert f"<!-- snippet: {name} -->" in section
