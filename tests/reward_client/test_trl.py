"""The TRL adapter (h2e_reward.trl) called as GRPOTrainer._calculate_rewards calls reward functions
(tests/reward_client/trainers.py), against the studio's reward service over loopback HTTP."""

from __future__ import annotations

import inspect
import math
from typing import Any

import pytest
from h2e_reward import RewardClient
from h2e_reward.trl import format_only, how2score_only, length_only, reward_funcs, total_reward

from judging.training.models import RewardCall
from tests.factories import make_procedure
from tests.reward_client.conftest import FAILS, GARBLED, GOAL, STEPS, Studio, ground_truth, numbered
from tests.reward_client.trainers import TRLAsyncLoop, TRLLogs, repeated, trl_rewards

GOOD = numbered(STEPS)
FAILING = numbered(STEPS, marker=FAILS)
BULLETS = "\n".join(f"- {step}" for step in STEPS)
LONG = "<think>Let me think.</think>\n" + numbered(
    [f"{s}, " + "and then carefully check it again " * 6 for s in STEPS]
)
UNREADABLE = numbered(STEPS, marker=GARBLED)


def client(studio: Studio, run: str) -> RewardClient:
    return RewardClient(studio.url, studio.token, reward=studio.reward, run=run)


def standard_batch(procedure_id: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Two prompts x four generations, standard format, a procedure_id column."""
    rows = [
        {"prompt": f"How do I: {GOAL}?", "procedure_id": procedure_id},
        {"prompt": f"Explain how to: {GOAL}.", "procedure_id": procedure_id},
    ]
    return repeated(rows, 4), [GOOD, FAILING, BULLETS, LONG, GOOD, UNREADABLE, GOOD, FAILING]


def test_the_three_component_functions_score_a_batch_in_one_request(studio: Studio) -> None:
    procedure = make_procedure(goal=GOAL, steps=STEPS)
    inputs, completions = standard_batch(procedure.pk)
    funcs = reward_funcs(client(studio, "trl-components"))
    assert [f.__name__ for f in funcs] == ["how2score", "format", "length"]
    logs = TRLLogs()
    rows = trl_rewards(funcs, inputs, completions, step=7, logs=logs)

    how2score = [row[0] for row in rows]
    assert (
        how2score[:5] == [1.0, 0.0, 1.0, 1.0, 1.0]
        and math.isnan(how2score[5])
        and how2score[6:] == [1.0, 0.0]
    )
    assert [row[1] for row in rows] == [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert rows[0][2] == 1.0 and rows[3][2] < 0.01  # the long answer is > 3x the reference
    assert studio.batches == [8]  # one request for the three functions
    calls = RewardCall.objects.filter(run__name="trl-components")
    assert calls.count() == 8
    assert set(calls.values_list("step", flat=True)) == {7}
    groups = list(calls.order_by("pk").values_list("group", flat=True))
    assert len(set(groups)) == 2 and groups[:4] == [groups[0]] * 4 and groups[4:] == [groups[4]] * 4
    assert logs.metrics["h2e/how2score"] == [pytest.approx(5 / 7)]  # the judged seven
    assert logs.metrics["h2e/judge_errors"] == [pytest.approx(1 / 8)]
    assert logs.metrics["h2e/format"] == [pytest.approx(7 / 8)]
    ratios = [c.length_ratio for c in calls]
    assert logs.metrics["h2e/length_ratio"] == [pytest.approx(sum(ratios) / 8)]


def test_the_next_step_is_a_new_request(studio: Studio) -> None:
    procedure = make_procedure(goal=GOAL, steps=STEPS)
    inputs, completions = standard_batch(procedure.pk)
    funcs = reward_funcs(client(studio, "trl-steps"))
    for step in (0, 1):
        trl_rewards(funcs, inputs, completions, step=step, logs=TRLLogs())
    assert studio.batches == [8, 8]
    calls = RewardCall.objects.filter(run__name="trl-steps")
    assert sorted(set(calls.values_list("step", flat=True))) == [0, 1] and calls.count() == 16
    assert calls.filter(step=1, from_store=True).count() == 7  # the judged seven, answered from the store


def test_the_total_of_a_conversational_batch_with_a_ground_truth_column(studio: Studio) -> None:
    rows = [{"prompt": [{"role": "user", "content": f"How do I: {GOAL}?"}], "ground_truth": ground_truth()}]
    inputs = repeated(rows, 3)
    completions = [[{"role": "assistant", "content": text}] for text in (GOOD, FAILING, BULLETS)]
    logs = TRLLogs()
    rows_out = trl_rewards(
        [total_reward(client(studio, "trl-total"))], inputs, completions, step=2, logs=logs
    )
    assert [row[0] for row in rows_out] == [3.0, 2.0, 2.0]  # weights 1, 1, 1
    assert logs.extra["how2score"] == [1, 0, 1] and logs.extra["format"] == [1, 1, 0]
    assert logs.metrics["h2e/length"] == [1.0]
    assert RewardCall.objects.filter(run__name="trl-total", procedure__isnull=True).count() == 3  # inline


def test_the_async_functions_are_awaited_together_and_share_one_request(studio: Studio) -> None:
    procedure = make_procedure(goal=GOAL, steps=STEPS)
    inputs, completions = standard_batch(procedure.pk)
    funcs = reward_funcs(client(studio, "trl-async"), asynchronous=True)
    assert all(inspect.iscoroutinefunction(f) for f in funcs)
    assert [f.__name__ for f in funcs] == ["how2score", "format", "length"]
    with TRLAsyncLoop() as loop:
        rows = trl_rewards(funcs, inputs, completions, step=4, logs=TRLLogs(), loop=loop)
    assert [row[1] for row in rows] == [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert [row[0] for row in rows][:2] == [1.0, 0.0]
    assert studio.batches == [8]


def test_each_component_alone_asks_only_for_itself(studio: Studio) -> None:
    rows = repeated([{"prompt": "p", "ground_truth": ground_truth()}], 2)
    made = client(studio, "trl-alone")
    funcs = [format_only(made), length_only(made)]
    assert [f.__name__ for f in funcs] == ["format", "length"]
    out = trl_rewards(funcs, rows, [GOOD, BULLETS], step=0, logs=TRLLogs())
    assert out == [[1.0, 1.0], [0.0, 1.0]]
    assert studio.batches == [2, 2] and studio.judge.requests == []  # each its own; neither needs the judge
    alone = how2score_only(made, asynchronous=True)
    with TRLAsyncLoop() as loop:
        assert trl_rewards([alone], rows, [GOOD, FAILING], step=1, logs=TRLLogs(), loop=loop) == [
            [1.0],
            [0.0],
        ]


def test_a_dataset_without_a_procedure_column_is_named(studio: Studio) -> None:
    with pytest.raises(ValueError, match="procedure_id or ground_truth column"):
        trl_rewards(
            reward_funcs(client(studio, "x")),
            [{"prompt": "p", "answer": "a"}],
            [GOOD],
            step=0,
            logs=TRLLogs(),
        )
