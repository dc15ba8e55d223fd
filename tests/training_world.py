"""A training run driven through the real reward service (POST /api/reward/), as a GRPO loop would call it:
a policy whose answers drift longer over steps, and a loopback judge whose verdict favours long answers (it
finds no critical failure once an answer carries enough padding), so How2Score rises as the length ratio does
(paper Table 12). Used by the alarm's acceptance test and the run page's browser test."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from judging.metrics import count_tokens
from tests.llm_server import failure, judge_json

STEPS = [
    "Water the plant a day before repotting it",
    "Tip the pot and ease the root ball out",
    "Loosen the roots with your fingers",
    "Set the plant in the new pot on fresh mix",
    "Fill around it with mix and water it well",
]
PROCEDURE = {"goal": "Repot a houseplant", "resources": ["a new pot", "potting mix"], "steps": STEPS}
PAD = " carefully"
PADS_TO_PASS = 6  # the judge finds no critical failure in an answer padded this many times or more
ITEMS_PER_STEP = 8
SPREAD = 0.1  # each step's answers have ratios target ± SPREAD (evenly spaced)


def padded_answer(ratio: float) -> str:
    """A numbered answer of the reference steps padded with " carefully", round-robin over the steps, until
    its tokens reach `ratio` times the reference's (o200k_base, as the service counts)."""
    steps, target, n = list(STEPS), ratio * count_tokens(STEPS), 0
    while count_tokens(steps) < target:
        steps[n % len(steps)] += PAD
        n += 1
    return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))


def favours_long_answers(body: dict[str, Any]) -> str:
    """The judge: a critical failure unless the predicted steps carry PADS_TO_PASS pads or more."""
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    if prompt.count(PAD.strip()) >= PADS_TO_PASS:
        return judge_json([])
    return judge_json([failure("Leaves out how gently the roots must be handled.")])


def drifting_ratios(n_steps: int = 20, start: float = 1.0, end: float = 1.5) -> list[float]:
    """The target ratio of each step: from `start` to `end` in equal steps."""
    return [float(r) for r in np.linspace(start, end, n_steps)]


def step_items(ratio: float, step: int) -> list[dict[str, Any]]:
    return [
        {"procedure": PROCEDURE, "completion": padded_answer(ratio + offset), "step": step, "group": "p0"}
        for offset in np.linspace(-SPREAD, SPREAD, ITEMS_PER_STEP)
    ]


def run_post(client: Any, run: str, ratios: list[float], *, policy: str = "toy/policy") -> list[list[dict]]:
    """One POST /api/reward/ per step, as a trainer sends its batch; the items answered, per step."""
    answered = []
    for step, ratio in enumerate(ratios):
        body = {"run": run, "policy": policy, "items": step_items(ratio, step)}
        response = client.post("/api/reward/", json.dumps(body), content_type="application/json")
        assert response.status_code == 200, response.content
        answered.append(response.json()["items"])
    return answered
