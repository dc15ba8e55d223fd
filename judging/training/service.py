"""The reward service (POST /api/reward/): a batch of (procedure, completion) items in, per item How2Score
(the judge: 1 when it finds no critical failure), the step-format verifier, the reference-calibrated length
reward and their weighted total out, each call stored with its run and step.

Stateless between calls (any number of web workers may serve it): what it reuses is in the database. The
judge is asked through the LLM layer (h2e_site.llm: concurrency, rate limits, retries, servers in turn),
only for the (procedure, final answer) pairs it has not judged before (RewardJudgment) and once per distinct
pair in a batch. The batch answers within the config's time budget: an item the judge did not answer by then,
or whose answer could not be read, gets How2Score null with the reason; the others are scored.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from django.contrib.auth.models import User

from h2e_site.llm.backends import backend_from_config
from h2e_site.llm.base import LLMBackend, LLMRequest, LLMResult

from ..configs import judge_for_config
from ..metrics import count_tokens
from ..models import Judge
from ..parsing import extract_steps, parse_judge_output
from ..prompting import clean_steps, judge_prompt, judge_request
from ..rewards import final_answer, length_ratio, length_reward, step_format
from .models import RewardCall, RewardJudgment, TrainingRun
from .reward_config import COMPONENTS, RewardConfig


@dataclass(frozen=True)
class ProcedureText:
    """What the reward needs of a procedure: its goal, resources and reference steps (L1)."""

    goal: str
    resources: tuple[str, ...]
    steps: tuple[str, ...]
    procedure_pk: int | None = None

    @cached_property  # read for every item of a batch, several times: hashed once
    def key(self) -> str:
        payload = {"goal": self.goal.strip(), "resources": list(self.resources), "steps": list(self.steps)}
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class RewardItem:
    procedure: ProcedureText
    completion: str
    run: str = ""
    step: int | None = None
    group: str = ""


@dataclass
class ItemReward:
    how2score: int | None = None
    how2score_reason: str = ""
    format: int | None = None
    format_reason: str = ""
    n_steps: int | None = None
    length: float | None = None
    length_ratio: float | None = None
    gen_tokens: int | None = None
    ref_tokens: int | None = None
    total: float | None = None
    judge: str = ""
    from_store: bool = False
    error: str = ""
    answer: str = field(default="", repr=False)
    answer_sha: str = field(default="", repr=False)
    l2_steps: list[str] = field(default_factory=list, repr=False)  # the answer's steps, read once
    judgment: RewardJudgment | None = field(default=None, repr=False)

    def as_json(self) -> dict[str, Any]:
        shown = dict(vars(self))
        for inner in ("answer", "answer_sha", "l2_steps", "judgment"):
            shown.pop(inner)
        return shown


@dataclass(frozen=True)
class RewardBatch:
    config: RewardConfig
    items: Sequence[RewardItem]
    components: tuple[str, ...] = COMPONENTS
    policy: str = ""
    user: User | None = None


def rewards_for(batch: RewardBatch, *, backend: LLMBackend | None = None) -> list[ItemReward]:
    """Every item's rewards (module docstring), stored as RewardCalls under their runs."""
    judge = judge_for_config(batch.config.judge) if "how2score" in batch.components else None
    answers = [final_answer(item.completion, answer_after=batch.config.answer_after) for item in batch.items]
    rewards = [
        ItemReward(
            answer=answer,
            answer_sha=_answer_sha(answer),
            l2_steps=extract_steps(answer),
            judge=judge.judge_id if judge else "",
        )
        for answer in answers
    ]
    for item, reward in zip(batch.items, rewards, strict=True):
        _verifiable(batch, item, reward)
    if judge is not None:
        _judged(batch, judge, rewards, backend)
    for reward in rewards:
        reward.total = _total(batch, reward)
    _store(batch, judge, rewards)
    return rewards


def _verifiable(batch: RewardBatch, item: RewardItem, reward: ItemReward) -> None:
    """The two rewards computed from the text alone (§E.4): the step format and the length."""
    expected = len(item.procedure.steps)
    if "format" in batch.components:
        verdict = step_format(reward.answer, expected_steps=expected)
        reward.format, reward.format_reason, reward.n_steps = (
            int(verdict.passed),
            verdict.reason,
            verdict.n_steps,
        )
    reward.gen_tokens = count_tokens(reward.l2_steps)
    reward.ref_tokens = count_tokens(item.procedure.steps)
    if reward.ref_tokens > 0:
        reward.length_ratio = length_ratio(reward.gen_tokens, reward.ref_tokens)
        if "length" in batch.components:
            reward.length = length_reward(reward.length_ratio, tau=batch.config.tau, alpha=batch.config.alpha)
    elif "length" in batch.components:
        reward.error = "the reference steps have no token: the length ratio is undefined"


def _total(batch: RewardBatch, reward: ItemReward) -> float | None:
    values = {"how2score": reward.how2score, "format": reward.format, "length": reward.length}
    asked = [name for name in COMPONENTS if name in batch.components]
    if any(values[name] is None for name in asked):
        return None
    return sum(batch.config.weights[name] * float(values[name] or 0) for name in asked)


# --- the judge --------------------------------------------------------------------------------------------


def _answer_sha(answer: str) -> str:
    return hashlib.sha256(answer.encode()).hexdigest()


def _judged(batch: RewardBatch, judge: Judge, rewards: list[ItemReward], backend: LLMBackend | None) -> None:
    """How2Score for every item: from the store where the judge answered before, else asked now."""
    pairs = {
        (item.procedure.key, reward.answer_sha): item.procedure
        for item, reward in zip(batch.items, rewards, strict=True)
    }
    stored = _stored_judgments(judge, pairs)
    asked = {pair: procedure for pair, procedure in pairs.items() if pair not in stored}
    l2_of = {reward.answer_sha: clean_steps(reward.l2_steps) for reward in rewards}
    fresh, problems = _ask(batch.config, judge, asked, l2_of, backend) if asked else ({}, {})
    for item, reward in zip(batch.items, rewards, strict=True):
        pair = (item.procedure.key, reward.answer_sha)
        judgment = stored.get(pair) or fresh.get(pair)
        if judgment is None:
            reward.how2score_reason = reward.error = problems.get(pair, "the judge gave no answer")
            continue
        reward.judgment, reward.from_store = judgment, pair in stored
        reward.how2score = 0 if judgment.has_failure else 1


def _stored_judgments(judge: Judge, pairs: Collection[tuple[str, str]]) -> dict[tuple[str, str], Any]:
    keys = {key for key, _ in pairs}
    shas = {sha for _, sha in pairs}
    found = RewardJudgment.objects.filter(judge=judge, procedure_key__in=keys, answer_sha256__in=shas)
    return {
        (row.procedure_key, row.answer_sha256): row
        for row in found
        if (row.procedure_key, row.answer_sha256) in pairs
    }


def _ask(
    config: RewardConfig,
    judge: Judge,
    asked: dict[tuple[str, str], ProcedureText],
    l2_of: dict[str, list[str]],
    backend: LLMBackend | None,
) -> tuple[dict[tuple[str, str], RewardJudgment], dict[tuple[str, str], str]]:
    """Ask the judge about each pair within the time budget; read answers are stored (a concurrent worker
    storing the same pair first wins: its row is used)."""
    template = judge.prompt_text or config.judge.prompt_text()
    keys = {f"{index}": pair for index, pair in enumerate(asked)}
    sizes: dict[tuple[str, str], tuple[int, int]] = {}  # L1 and L2 step counts: its answer is read by them
    requests = []
    for key, pair in keys.items():
        l1, l2 = clean_steps(asked[pair].steps), l2_of[pair[1]]
        sizes[pair] = (len(l1), len(l2))
        prompt = judge_prompt(template, goal=asked[pair].goal, reference_steps=l1, steps=l2)
        requests.append(judge_request(config.judge, key=key, prompt=prompt, n_l1=len(l1), n_l2=len(l2)))
    results = _within_budget(config, requests, backend)
    return _read(judge, keys, sizes, results, config.time_budget_s)


def _within_budget(
    config: RewardConfig, requests: list[LLMRequest], backend: LLMBackend | None
) -> dict[str, LLMResult]:
    """The judge's results that arrive within the time budget. The backend runs on a thread of its own, no
    request waits longer than the budget, none starts after it, and the batch answers at the deadline with
    what has arrived (a request still in flight then ends on its own, within its timeout, and is dropped)."""
    budget = config.time_budget_s
    deadline = time.monotonic() + budget
    if backend is None:
        judge_config = config.judge.backend_config()
        timeout = min(judge_config.request_timeout_s, budget + 1.0)  # the deadline comes first
        backend = backend_from_config(replace(judge_config, request_timeout_s=timeout))
        owned = True
    else:
        owned = False
    results: dict[str, LLMResult] = {}
    lock = threading.Lock()

    def keep(result: LLMResult) -> None:
        with lock:
            results[result.key] = result

    def run(runner: LLMBackend) -> None:
        try:
            runner.run(requests, keep, should_stop=lambda: time.monotonic() > deadline)
        finally:
            if owned:
                runner.close()

    worker = threading.Thread(target=run, args=(backend,), name="reward-judge", daemon=True)
    worker.start()
    worker.join(timeout=budget)
    with lock:
        return dict(results)


def _read(
    judge: Judge,
    keys: dict[str, tuple[str, str]],
    sizes: dict[tuple[str, str], tuple[int, int]],
    results: dict[str, LLMResult],
    budget_s: float,
) -> tuple[dict[tuple[str, str], RewardJudgment], dict[tuple[str, str], str]]:
    read: list[RewardJudgment] = []
    problems: dict[tuple[str, str], str] = {}
    for key, pair in keys.items():
        result = results.get(key)
        if result is None:
            problems[pair] = f"the judge did not answer within the time budget ({budget_s:g} s)"
            continue
        if not result.ok:
            problems[pair] = f"the judge failed: {result.error}"
            continue
        n_l1, n_l2 = sizes[pair]
        parsed = parse_judge_output(result.text, n_l1=n_l1, n_l2=n_l2)
        if parsed.parse_failed:
            problems[pair] = f"the judge's answer could not be read: {parsed.problem}"
            continue
        read.append(_verdict(judge, pair, parsed, result.text or ""))
    return _stored(judge, read), problems


def _verdict(judge: Judge, pair: tuple[str, str], parsed: Any, raw: str) -> RewardJudgment:
    failures = [
        {"description": cf.description, "L1_steps": cf.l1_steps, "L2_steps": cf.l2_steps}
        for cf in parsed.failures
    ]
    return RewardJudgment(
        judge=judge,
        procedure_key=pair[0],
        answer_sha256=pair[1],
        has_failure=parsed.has_failure,
        n_failures=parsed.n_failures,
        failures=failures,
        reasoning=parsed.reasoning,
        raw_output=raw,
    )


def _stored(judge: Judge, read: list[RewardJudgment]) -> dict[tuple[str, str], RewardJudgment]:
    """The verdicts stored in one statement; a pair another worker stored meanwhile keeps that row (one
    verdict per pair), read back with the rest."""
    RewardJudgment.objects.bulk_create(read, batch_size=500, ignore_conflicts=True)
    pairs = {(row.procedure_key, row.answer_sha256) for row in read}
    return _stored_judgments(judge, pairs) if pairs else {}


# --- storing the calls ------------------------------------------------------------------------------------


def _store(batch: RewardBatch, judge: Judge | None, rewards: list[ItemReward]) -> None:
    runs = _runs(batch, judge, {item.run for item in batch.items if item.run})
    RewardCall.objects.bulk_create(
        [
            RewardCall(
                run=runs.get(item.run),
                step=item.step,
                group=item.group,
                reward_name=batch.config.name,
                judge=judge,
                procedure_id=item.procedure.procedure_pk,
                procedure_key=item.procedure.key,
                answer=reward.answer,
                judgment=reward.judgment,
                how2score=reward.how2score,
                format=reward.format,
                format_reason=reward.format_reason[:200],
                n_steps=reward.n_steps,
                length=reward.length,
                length_ratio=reward.length_ratio,
                gen_tokens=reward.gen_tokens,
                ref_tokens=reward.ref_tokens,
                total=reward.total,
                from_store=reward.from_store,
                error=reward.error,
            )
            for item, reward in zip(batch.items, rewards, strict=True)
        ],
        batch_size=500,
    )


def _runs(batch: RewardBatch, judge: Judge | None, names: set[str]) -> dict[str, TrainingRun]:
    """The runs named in the batch, created on first use with the batch's config, policy and judge."""
    runs = {run.name: run for run in TrainingRun.objects.filter(name__in=names)}
    for name in sorted(names - set(runs)):
        runs[name], _ = TrainingRun.objects.get_or_create(
            name=name,
            defaults={
                "policy": batch.policy,
                "reward_name": batch.config.name,
                "reward_config": batch.config.as_json(),
                "judge": judge,
                "created_by": batch.user,
            },
        )
    return runs
