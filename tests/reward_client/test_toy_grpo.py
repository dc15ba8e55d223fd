"""examples/toy_grpo.py at a small size against the live studio: a drifting run and its control, each batch
scored through the TRL adapter, every call recorded under its run and step."""

from __future__ import annotations

import importlib.util
import shutil
import socket
import sys
from pathlib import Path
from types import ModuleType

import pytest
from django.conf import settings

from judging.training.models import RewardCall, TrainingRun
from tests.reward_client.conftest import Studio

EXAMPLE = Path(settings.BASE_DIR) / "examples" / "toy_grpo.py"


def toy_grpo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("toy_grpo", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["toy_grpo"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_toy_loop_drifts_longer_while_its_control_stays_near_the_reference(
    studio: Studio, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(
        Path(settings.BASE_DIR) / "configs/rewards/toy-verbose-judge.yaml", settings.H2E_REWARD_CONFIG_DIR
    )
    port = free_port()
    monkeypatch.setenv("H2E_TOY_JUDGE_URL", f"http://127.0.0.1:{port}/v1")
    argv = ["--url", studio.url, "--token", studio.token, "--run", "toy", "--steps", "3", "--prompts", "2"]
    results = toy_grpo().main([*argv, "--group", "4", "--judge-port", str(port)])

    ratios = {run: [s.metrics["h2e/length_ratio"] for s in steps] for run, steps in results.items()}
    assert ratios["toy"][0] < ratios["toy"][1] < ratios["toy"][2]
    assert 1.35 < ratios["toy"][2] < 1.65  # the last step's answers are ~1.5x the reference
    assert all(0.9 < r < 1.15 for r in ratios["toy-control"])
    assert studio.batches == [8] * 6  # 2 prompts x 4 completions, 3 steps, 2 runs: one request a step
    for run in ("toy", "toy-control"):
        calls = RewardCall.objects.filter(run__name=run)
        assert sorted(set(calls.values_list("step", flat=True))) == [0, 1, 2] and calls.count() == 24
        assert TrainingRun.objects.get(name=run).policy == "toy-policy"
    assert "toy-control step   2" in capsys.readouterr().out


def test_the_toy_judge_passes_longer_answers_more_often() -> None:
    toy = toy_grpo()
    steps = toy.PROCEDURES[0]["steps"]
    reference = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
    passes = {
        ratio: sum(toy.biased_verdict(reference, toy.padded_answer(steps, ratio, v)) for v in range(64)) / 64
        for ratio in (1.0, 1.5)
    }
    assert passes[1.0] < 0.6 < passes[1.5]
    assert toy.target_ratio(0, 20, drift=True) == 1.0 and toy.target_ratio(19, 20, drift=True) == 1.5
    assert toy.target_ratio(19, 20, drift=False) == 1.0
