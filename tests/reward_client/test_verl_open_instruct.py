"""The verl and open-instruct adapters called as those trainers call them (tests/reward_client/trainers.py),
against the studio's reward service over loopback HTTP."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import h2e_reward.verl
from h2e_reward.open_instruct import How2ScoreVerifier, open_instruct_verifier

from judging.training.models import RewardCall
from tests.factories import make_procedure
from tests.reward_client.conftest import FAILS, GARBLED, GOAL, STEPS, Studio, ground_truth, numbered
from tests.reward_client.trainers import (
    VerificationResult,
    VerifierFunction,
    apply_verifiable_reward,
    build_all_verifiers,
    verl_batch,
    verl_custom_reward_fn,
    verl_naive,
    verl_reward_loop,
)

GOOD, FAILING, BULLETS = numbered(STEPS), numbered(STEPS, marker=FAILS), "\n".join(f"- {s}" for s in STEPS)


def samples(texts: list[str], truth: str, step: int | None = None) -> list[dict[str, Any]]:
    """verl's non-tensor batch per sample (data_source, reward_model.ground_truth, extra_info)."""
    extra = {"split": "train", **({"step": step} if step is not None else {})}
    return [
        {
            "data_source": "how2score",
            "response": text,
            "reward_model": {"ground_truth": truth},
            "extra_info": {**extra, "index": i},
        }
        for i, text in enumerate(texts)
    ]


def verl_fn(studio: Studio, name: str, run: str) -> Any:
    kwargs = {"url": studio.url, "token": studio.token, "reward": studio.reward, "run": run}
    return verl_custom_reward_fn(h2e_reward.verl.__file__, name, kwargs)


def test_verls_naive_manager_scores_each_sample(studio: Studio) -> None:
    procedure = make_procedure(goal=GOAL, steps=STEPS)
    rewards = verl_naive(
        verl_fn(studio, "compute_score", "verl-naive"),
        samples([GOOD, FAILING, BULLETS], ground_truth(procedure.pk), step=5),
    )
    assert rewards == [3.0, 2.0, 2.0]
    assert studio.batches == [1, 1, 1]
    calls = RewardCall.objects.filter(run__name="verl-naive")
    assert calls.count() == 3 and set(calls.values_list("procedure_id", "step")) == {(procedure.pk, 5)}


def test_verls_batch_manager_scores_the_batch_in_one_request(studio: Studio) -> None:
    texts = [GOOD, FAILING, BULLETS, numbered(STEPS, marker=GARBLED)]
    scores = verl_batch(verl_fn(studio, "compute_score_batch", "verl-batch"), samples(texts, ground_truth()))
    assert [s["score"] for s in scores] == [3.0, 2.0, 2.0, 0.0]
    assert [s["how2score"] for s in scores] == [1.0, 0.0, 1.0, 0.0]
    assert [s["judge_error"] for s in scores] == [0.0, 0.0, 0.0, 1.0]
    assert [s["format"] for s in scores] == [1.0, 1.0, 0.0, 1.0]
    assert all(
        set(s) == {"score", "how2score", "format", "length", "length_ratio", "judge_error"} for s in scores
    )
    assert studio.batches == [4]
    assert RewardCall.objects.filter(run__name="verl-batch").count() == 4


def test_verls_reward_loop_awaits_the_samples_together_in_one_request(studio: Studio) -> None:
    compute_score = verl_fn(studio, "compute_score_async", "verl-loop")
    scores = verl_reward_loop(compute_score, samples([GOOD, FAILING, BULLETS] * 4, ground_truth(), step=9))
    assert [s["score"] for s in scores] == [3.0, 2.0, 2.0] * 4
    assert studio.batches == [12]  # the concurrent samples went together
    assert set(RewardCall.objects.filter(run__name="verl-loop").values_list("step", flat=True)) == {9}


def test_verl_components_asked_alone_by_reward_kwargs(studio: Studio) -> None:
    kwargs = {"url": studio.url, "token": studio.token, "reward": studio.reward, "components": ["format"]}
    fn = verl_custom_reward_fn(h2e_reward.verl.__file__, "compute_score", kwargs)
    assert verl_naive(fn, samples([GOOD, BULLETS], ground_truth())) == [1.0, 0.0]
    assert studio.judge.requests == []


def test_open_instruct_finds_the_verifier_by_name_and_scores_every_completion(reward_env: Studio) -> None:
    namespace: dict[str, Any] = {}
    namespace["How2Score"] = open_instruct_verifier(VerifierFunction, VerificationResult)
    verifiers = build_all_verifiers(SimpleNamespace(llm_judge_model="unused"))
    assert isinstance(verifiers["how2score"], namespace["How2Score"])
    texts = [GOOD, FAILING, BULLETS, GOOD]
    rewards, per_func = apply_verifiable_reward(
        verifiers,
        responses=[[1, 2, 3]] * 4,
        decoded_responses=texts,
        ground_truths=[ground_truth()] * 3 + [[ground_truth()]],
        datasets=["how2score"] * 3 + [["how2score"]],
        queries=["How do I repot?"] * 4,
    )
    assert rewards == [30.0, 20.0, 20.0, 30.0]  # reward_mult 10 x the weighted total
    assert per_func[1] == {"how2score": 20.0}
    assert reward_env.batches == [4]  # the concurrent async_calls went together


def test_the_verifier_alone_answers_open_instructs_result_with_its_reasons(reward_env: Studio) -> None:
    verifier = How2ScoreVerifier(components=["how2score"])
    result = verifier(
        tokenized_prediction=[], prediction=numbered(STEPS, marker=GARBLED), label=ground_truth()
    )
    assert result.score == 0.0 and "how2score=None" in (result.reasoning or "")
    assert verifier(tokenized_prediction=[], prediction=GOOD, label=ground_truth()).score == 1.0
    assert repr(verifier) == "How2ScoreVerifier(name=how2score, weight=1.0)"
