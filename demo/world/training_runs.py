"""The synthetic demo world's training runs (issue #32 item 3): two GRPO-shaped runs that asked the reward
service for rewards, so the Training pages have figures without a trainer. No judge is asked: each reward
call is written as the service stores one, drawn from a seeded generator.

- "synthetic-demo-grpo-no-length-reward" games the judge's verbosity bias (paper Table 12): its answers
  drift from the reference's length to 1.5 times it while How2Score rises, so the length-gaming alarm is
  raised part-way;
- "synthetic-demo-grpo-control" keeps its answers near the reference's length (ratio about 1.0) while
  How2Score rises a little: no alarm.

Both are named "synthetic-…" (the badge on the Training pages); their calls point at no procedure, their
answers are placeholders, and their judge is the synthetic strict judge when the world has it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from h2e_site.synthetic import SYNTHETIC_ID_PREFIX, SYNTHETIC_MODEL_PREFIX
from judging.models import Judge, RewardCall, TrainingRun
from judging.rewards import ALPHA, TAU, length_reward

DRIFT_NAME = f"{SYNTHETIC_ID_PREFIX}grpo-no-length-reward"
CONTROL_NAME = f"{SYNTHETIC_ID_PREFIX}grpo-control"
NAMES = (DRIFT_NAME, CONTROL_NAME)
REWARD_NAME = f"{SYNTHETIC_ID_PREFIX}reward"
STEPS = 40
CALLS_PER_STEP = 16  # 4 prompts x 4 completions, as a GRPO group
STEP_EVERY = timedelta(minutes=3)
FORMAT_RATE = 0.9
ERROR_RATE = 0.01
STORE_RATE = 0.1


@dataclass(frozen=True)
class RunProfile:
    """How a synthetic run's calls drift from its first step to its last: the mean length ratio and the
    chance of How2Score 1."""

    name: str
    ratio: tuple[float, float]
    how2score: tuple[float, float]
    ratio_spread: float = 0.12


PROFILES = (
    RunProfile(DRIFT_NAME, ratio=(1.0, 1.5), how2score=(0.35, 0.75)),
    RunProfile(CONTROL_NAME, ratio=(1.0, 1.02), how2score=(0.35, 0.45)),
)


def _reward_config() -> dict[str, object]:
    """The reward config as the runs first used it (RewardConfig.as_json's shape)."""
    return {
        "name": REWARD_NAME,
        "judge": {"model": f"{SYNTHETIC_MODEL_PREFIX}judge-strict", "backend": "openai"},
        "weights": {"how2score": 1.0, "format": 1.0, "length": 1.0},
        "tau": TAU,
        "alpha": ALPHA,
        "tokenizer": "o200k_base",
        "answer_after": "</think>",
        "time_budget_s": 20.0,
    }


def training_runs_create(*, seed: int) -> list[TrainingRun]:
    """The two runs and their calls, written once (a name already there is left as it is)."""
    judge = Judge.objects.filter(judge_id=f"{SYNTHETIC_ID_PREFIX}judge-strict").first()
    started = timezone.now() - STEPS * STEP_EVERY - timedelta(days=1)  # finished a day ago: not live
    runs = []
    for profile in PROFILES:
        run, created = TrainingRun.objects.get_or_create(
            name=profile.name,
            defaults={
                "policy": f"{SYNTHETIC_MODEL_PREFIX}policy-1.7b",
                "reward_name": REWARD_NAME,
                "reward_config": _reward_config(),
                "judge": judge,
            },
        )
        if created:
            _calls_create(run, profile, random.Random(f"{seed}:{profile.name}"), started)
            TrainingRun.objects.filter(pk=run.pk).update(created_at=started)
        runs.append(run)
    return runs


def _calls_create(run: TrainingRun, profile: RunProfile, rng: random.Random, started: datetime) -> None:
    calls = [_call(run, profile, rng, step) for step in range(STEPS) for _ in range(CALLS_PER_STEP)]
    RewardCall.objects.bulk_create(calls)
    # auto_now_add stamped them now: the run finished a day ago (one UPDATE: a time per step costs more)
    RewardCall.objects.filter(run=run).update(created_at=started + STEPS * STEP_EVERY)


def _along(pair: tuple[float, float], step: int) -> float:
    return pair[0] + (pair[1] - pair[0]) * step / (STEPS - 1)


def _call(run: TrainingRun, profile: RunProfile, rng: random.Random, step: int) -> RewardCall:
    ratio = max(0.3, rng.gauss(_along(profile.ratio, step), profile.ratio_spread))
    failed = rng.random() < ERROR_RATE
    how2score = None if failed else int(rng.random() < _along(profile.how2score, step))
    step_format = int(rng.random() < FORMAT_RATE)
    length = length_reward(ratio)
    return RewardCall(
        run=run,
        step=step,
        group=f"prompt-{rng.randrange(4)}",
        reward_name=run.reward_name,
        judge=run.judge,
        procedure=None,  # given, not defaulted: a foreign key's default costs a lookup per row
        judgment=None,
        procedure_key="0" * 64,
        answer="(synthetic demo data: no answer was written)",
        how2score=how2score,
        format=step_format,
        format_reason="" if step_format else "steps not numbered 1..n",
        length=length,
        length_ratio=ratio,
        gen_tokens=round(120 * ratio),
        ref_tokens=120,
        total=None if how2score is None else how2score + step_format + length,
        from_store=rng.random() < STORE_RATE,
        error="the judge failed: synthetic timeout" if failed else "",
    )
