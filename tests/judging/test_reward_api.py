"""POST /api/reward/ (issue #32 item 1) against a loopback judge server: a batch of 512 over real HTTP, judge
failures kept to their items, stored verdicts reused, the time budget, several judge servers, the runs and
steps stored, and every refusal (bounds, unknown ids and rewards, credentials, permission) a 400/401/403
naming what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
from django.test import Client
from rest_framework.test import APIClient

from judging.models import RewardCall, RewardJudgment, TrainingRun
from judging.rewards import length_reward
from tests.factories import make_procedure, make_user
from tests.llm_server import Fail, Hang, LoopbackLLM, Reply, failure, judge_json
from tests.reward_world import trainer, write_reward_config

pytestmark = pytest.mark.django_db

STEPS = ["Water the plant", "Remove it from the pot", "Place it in the new pot"]
GOOD = "1. Water the plant\n2. Remove it from the pot\n3. Place it in the new pot"
INLINE = {"goal": "Repot a houseplant", "resources": ["new pot"], "steps": STEPS}


def verdict_by_text(body: dict[str, Any]) -> str:
    """A judge that finds a critical failure in any L2 mentioning 'skip', and writes garbage for 'garble'."""
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    l2 = prompt.rsplit("Predicted", 1)[-1].lower() if "Predicted" in prompt else prompt.lower()
    if "garble" in l2:
        return "I cannot answer in JSON today."
    return judge_json([failure("Skips a step.")] if "skip" in l2 else [])


@pytest.fixture
def judge_server() -> Any:
    with LoopbackLLM(responder=verdict_by_text) as server:
        yield server


@pytest.fixture
def rewards(settings: Any, tmp_path: Path, judge_server: LoopbackLLM) -> Path:
    settings.H2E_REWARD_CONFIG_DIR = str(tmp_path / "rewards")
    settings.H2E_DEFAULT_REWARD = "loopback"
    write_reward_config(tmp_path / "rewards", "loopback", base_urls=[judge_server.base_url])
    return tmp_path / "rewards"


def api(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def post(client: Any, body: dict[str, Any]) -> Any:
    return client.post("/api/reward/", json.dumps(body), content_type="application/json")


def item(completion: str = GOOD, **more: Any) -> dict[str, Any]:
    return {"procedure": INLINE, "completion": completion, **more}


def test_it_scores_each_component_and_the_weighted_total(rewards: Path) -> None:
    _, token = trainer()
    long = GOOD.replace("Water the plant", "Water the plant " + "very carefully and slowly " * 4)
    answer = post(api(token), {"items": [item(), item("1. Water it\n2. Skip the pot"), item(long)]})
    assert answer.status_code == 200, answer.content
    good, skipped, verbose = answer.json()["items"]
    assert (good["how2score"], good["format"], good["length"], good["total"]) == (1, 1, 1.0, 3.0)
    assert (skipped["how2score"], skipped["format"]) == (0, 0)
    assert skipped["format_reason"] == "2 steps, not the 3 expected"
    assert verbose["length_ratio"] == verbose["gen_tokens"] / verbose["ref_tokens"] > 1.2
    assert verbose["length"] == pytest.approx(length_reward(verbose["length_ratio"]))
    assert verbose["total"] == pytest.approx(1 + 1 + verbose["length"])
    assert {i["judge"] for i in answer.json()["items"]} == {answer.json()["judge"]} != {""}


def test_it_reads_the_answer_after_the_think_tag_and_weights_the_total(rewards: Path) -> None:
    write_reward_config(
        rewards,
        "weighted",
        base_urls=[json.loads("[]") or "http://127.0.0.1:9/v1"],
        weights={"how2score": 2.0, "format": 0.5, "length": 0.0},
    )
    _, token = trainer()
    thinking = "<think>1. skip everything\n- a bullet</think>\n" + GOOD
    answer = post(
        api(token), {"reward": "weighted", "components": ["format", "length"], "items": [item(thinking)]}
    )
    only = answer.json()["items"][0]
    assert only["how2score"] is None and only["format"] == 1 and only["total"] == 0.5 * 1 + 0.0 * 1
    assert only["judge"] == ""  # How2Score not asked for: the judge (an unreachable server) never asked


def test_a_judge_failure_or_an_unreadable_answer_stays_with_its_item(
    rewards: Path, judge_server: Any
) -> None:
    judge_server.script(Fail(400, message="bad request"))
    _, token = trainer()
    answer = post(
        api(token), {"items": [item(f"{GOOD}\n(n={n})") for n in range(3)] + [item(GOOD + " garble")]}
    )
    items = answer.json()["items"]
    failed = [i for i in items[:3] if i["how2score"] is None]
    assert len(failed) == 1 and "the judge failed" in failed[0]["error"] and failed[0]["total"] is None
    assert sum(i["how2score"] == 1 for i in items[:3]) == 2
    assert items[3]["how2score"] is None and "could not be read" in items[3]["how2score_reason"]
    assert items[3]["format"] == 1  # the verifiable rewards are still given
    assert RewardJudgment.objects.count() == 2  # only read answers are kept for reuse


def test_it_answers_from_the_store_and_asks_once_per_distinct_answer(
    rewards: Path, judge_server: Any
) -> None:
    procedure = make_procedure(steps=STEPS, resources=INLINE["resources"])
    _, token = trainer()
    body = {"items": [item(), item(), {"procedure_id": procedure.pk, "completion": GOOD}]}
    first = post(api(token), body).json()["items"]
    assert len(judge_server.completion_requests) == 1  # inline and by id: the same procedure, one question
    assert [i["from_store"] for i in first] == [False, False, False]
    again = post(api(token), body).json()["items"]
    assert [i["from_store"] for i in again] == [True, True, True]
    assert len(judge_server.completion_requests) == 1
    assert RewardCall.objects.filter(procedure=procedure).count() == 2


def test_an_item_the_judge_does_not_answer_in_time_gets_a_reason(rewards: Path, judge_server: Any) -> None:
    write_reward_config(rewards, "hurried", base_urls=[judge_server.base_url], time_budget_s=0.5)
    judge_server.script(Hang(3.0, then=Reply(judge_json())))
    _, token = trainer()
    answer = post(api(token), {"reward": "hurried", "items": [item()]})
    only = answer.json()["items"][0]
    assert only["how2score"] is None and "time budget (0.5 s)" in only["error"]


def test_it_shares_the_concurrency_among_several_judge_servers(rewards: Path) -> None:
    with LoopbackLLM(responder=verdict_by_text, latency=0.2) as one, LoopbackLLM(latency=0.2) as two:
        write_reward_config(rewards, "replicas", base_urls=[one.base_url, two.base_url], concurrency=4)
        _, token = trainer()
        answer = post(api(token), {"reward": "replicas", "items": [item(f"{GOOD}\n{n}") for n in range(12)]})
        assert all(i["how2score"] == 1 for i in answer.json()["items"])
        assert len(one.completion_requests) == len(two.completion_requests) == 6
        assert one.max_in_flight + two.max_in_flight <= 4


def test_it_keeps_every_call_with_its_run_and_step(rewards: Path) -> None:
    user, token = trainer()
    body = {
        "run": "grpo-a",
        "policy": "Qwen/Qwen3-8B",
        "items": [item(step=3, group="p1"), item(step=3, group="p1"), item(run="grpo-b", step=0)],
    }
    assert post(api(token), body).status_code == 200
    run = TrainingRun.objects.get(name="grpo-a")
    assert (run.policy, run.reward_name, run.created_by, run.judge is not None) == (
        "Qwen/Qwen3-8B",
        "loopback",
        user,
        True,
    )
    assert list(run.calls.values_list("step", "group")) == [(3, "p1"), (3, "p1")]
    assert TrainingRun.objects.get(name="grpo-b").calls.get().step == 0
    write_reward_config(rewards, "other", base_urls=["http://127.0.0.1:9/v1"])
    clash = post(api(token), {"reward": "other", "run": "grpo-a", "items": [item()]})
    assert clash.status_code == 400 and "run 'grpo-a' uses reward 'loopback'" in clash.json()["reward"][0]


@pytest.mark.parametrize(
    ("body", "field_path"),
    [
        ({"items": []}, ["items"]),
        ({"items": [item()] * 1025}, ["items"]),
        ({"items": [item("x" * 32_001)]}, ["items", "0", "completion"]),
        ({"items": [item(step=-1)]}, ["items", "0", "step"]),
        ({"items": [item(step=2**31)]}, ["items", "0", "step"]),
        ({"items": [{"completion": GOOD}]}, ["items", "0", "procedure_id"]),
        ({"items": [{**item(), "procedure_id": 1}]}, ["items", "0", "procedure_id"]),
        ({"items": [item(), {"procedure_id": 10**9, "completion": GOOD}]}, ["items", "1", "procedure_id"]),
        (
            {"items": [{"procedure": {**INLINE, "steps": []}, "completion": GOOD}]},
            ["items", "0", "procedure"],
        ),
        ({"items": [item()], "components": ["vibes"]}, ["components"]),
        ({"items": [item()], "reward": "nonesuch"}, ["reward"]),
        ({"items": [item(run="r" * 201)]}, ["items", "0", "run"]),
    ],
)
def test_it_refuses_what_is_out_of_bounds_naming_the_field(
    rewards: Path, body: dict[str, Any], field_path: list[Any]
) -> None:
    _, token = trainer()
    answer = post(api(token), body)
    assert answer.status_code == 400, answer.content
    errors: Any = answer.json()
    for key in field_path:
        assert errors, f"no error under {field_path}: {answer.json()}"
        errors = errors[key]
    assert errors
    assert not RewardCall.objects.exists()


def test_it_refuses_anonymous_non_staff_and_staff_without_the_permission(rewards: Path) -> None:
    assert post(APIClient(), {"items": [item()]}).status_code == 401
    _, clerk = trainer(staff=False)
    assert post(api(clerk), {"items": [item()]}).status_code == 403
    _, staff = trainer(permitted=False)
    refused = post(api(staff), {"items": [item()]})
    assert refused.status_code == 403 and "judging.request_reward" in refused.json()["detail"]
    session = Client()
    session.force_login(make_user(is_staff=True))
    assert post(session, {"items": [item()]}).status_code == 403
    assert not RewardCall.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_batch_of_512_over_http_with_some_judge_answers_failing(
    live_server: Any, rewards: Path, judge_server: Any
) -> None:
    judge_server.script(*[Fail(400, message="scripted")] * 7)
    _, token = trainer()
    items = [
        item(f"{GOOD}\n(variant {n}{' skip' if n % 4 == 0 else ''})", run="big", step=n // 64)
        for n in range(512)
    ]
    answer = requests.post(
        f"{live_server.url}/api/reward/",
        json={"items": items},
        headers={"Authorization": f"Token {token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text[:500]
    scored = answer.json()["items"]
    assert len(scored) == 512
    assert sum(i["how2score"] is None and "the judge failed" in i["error"] for i in scored) == 7
    passed = {n for n, i in enumerate(scored) if i["how2score"] == 1}
    failed = {n for n, i in enumerate(scored) if i["how2score"] == 0}
    assert failed <= {n for n in range(512) if n % 4 == 0} and passed.isdisjoint(failed)
    assert len(passed) + len(failed) == 505
    assert RewardCall.objects.filter(run__name="big").count() == 512
    assert sorted(set(RewardCall.objects.values_list("step", flat=True))) == list(range(8))
