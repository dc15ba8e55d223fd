"""Reward functions for TRL's GRPOTrainer, with TRL's signature `(completions, **kwargs) -> list[float]`.

TRL calls each reward function once per generation batch with keyword arguments: `prompts`, `completions`
(strings, or lists of chat messages in the conversational format), `completion_ids`, every dataset column
but `prompt` as a list (one entry per completion; the completions of one prompt come together, one group of
`num_generations`), `trainer_state` (its `global_step` is the step recorded with each call), `log_extra`
and `log_metric`. A function may return None for a completion (TRL then leaves that reward out of its sum):
these return None where the judge could not answer. An `async def` function is awaited by TRL beside the
others, so a slow judge does not hold up the trainer's own work.

    funcs = reward_funcs(RewardClient(run="qwen3-grpo-a"))    # [how2score, format, length]: one request
    GRPOTrainer(..., reward_funcs=funcs)                      #   per batch, each logged by TRL on its own
    GRPOTrainer(..., reward_funcs=[total_reward(client)])     # or the reward config's weighted sum

The dataset needs a `procedure_id` column (the studio's ids) or a `ground_truth` column (the How2Train
export's JSON string). Each batch's means go to `log_metric` as h2e/how2score, h2e/format, h2e/length,
h2e/length_ratio, h2e/judge_errors (the share of completions the judge could not answer) and h2e/from_store.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from h2e_reward.client import COMPONENTS, Answer, RewardClient, check_components
from h2e_reward.items import Completion, group_id, item, procedure_ref

RewardFunc = Callable[..., Any]


def batch_items(completions: Sequence[Completion], kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The service's items for one TRL batch: procedure from the `procedure_id` or `ground_truth` column,
    step from `trainer_state.global_step`, group from the prompt."""
    n = len(completions)
    ids, truths = kwargs.get("procedure_id"), kwargs.get("ground_truth")
    if ids is None and truths is None:
        raise ValueError(
            "TRL passed no procedure_id or ground_truth column: the dataset needs one of them "
            "(the studio's How2Train export has ground_truth)"
        )
    prompts = kwargs.get("prompts") or truths or ids
    step = getattr(kwargs.get("trainer_state"), "global_step", None)
    return [
        item(
            completions[i],
            procedure_ref(
                procedure_id=ids[i] if ids is not None else None,
                ground_truth=truths[i] if truths is not None else None,
            ),
            step=step,
            group=group_id(prompts[i]) if prompts is not None else None,
        )
        for i in range(n)
    ]


class BatchScorer:
    """Scores a TRL batch once for every function made from it: TRL calls them one after another (or at
    once, when async) with the same batch, and the first call's answers serve the others."""

    def __init__(self, client: RewardClient | None, components: Sequence[str]) -> None:
        self.client = client or RewardClient()
        self.components = check_components(components) or list(COMPONENTS)
        self._lock = threading.Lock()
        self._key: str | None = None
        self._answers: list[Answer] = []

    def answers(self, completions: Sequence[Completion], kwargs: Mapping[str, Any]) -> list[Answer]:
        items = batch_items(completions, kwargs)
        key = hashlib.sha256(json.dumps(items, sort_keys=True).encode("utf-8")).hexdigest()
        with self._lock:
            if key != self._key:
                self._answers = self.client.score(items, self.components)
                self._key = key
            return self._answers


def mean(values: Sequence[Any]) -> float | None:
    numbers = [float(v) for v in values if v is not None]
    return sum(numbers) / len(numbers) if numbers else None


def log_batch(answers: Sequence[Answer], kwargs: Mapping[str, Any], names: Sequence[str]) -> None:
    """The batch's means through TRL's log_metric (when the trainer passed it)."""
    log_metric = kwargs.get("log_metric")
    if log_metric is None or not answers:
        return
    for name in names:
        value = mean([a.get(name) for a in answers])
        if value is not None:
            log_metric(f"h2e/{name}", value)
    if "how2score" in names:
        log_metric("h2e/judge_errors", sum(a.get("how2score") is None for a in answers) / len(answers))
        log_metric("h2e/from_store", sum(bool(a.get("from_store")) for a in answers) / len(answers))


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _make(name: str, compute: Callable[..., list[float | None]], asynchronous: bool) -> RewardFunc:
    """A reward function named `name` (TRL logs rewards/<name>/mean), plain or `async def`."""
    if asynchronous:

        async def reward(completions: Sequence[Completion], **kwargs: Any) -> list[float | None]:
            return await asyncio.to_thread(compute, completions, **kwargs)

        reward.__name__ = reward.__qualname__ = name
        return reward

    def reward_sync(completions: Sequence[Completion], **kwargs: Any) -> list[float | None]:
        return compute(completions, **kwargs)

    reward_sync.__name__ = reward_sync.__qualname__ = name
    return reward_sync


def reward_funcs(
    client: RewardClient | None = None,
    *,
    components: Sequence[str] = COMPONENTS,
    asynchronous: bool = False,
) -> list[RewardFunc]:
    """One reward function per component (named how2score, format, length: the paper logs them apart), all
    served by one request per batch. Their sum weighs them by GRPOConfig's reward_weights."""
    scorer = BatchScorer(client, components)

    def component(name: str) -> Callable[..., list[float | None]]:
        def compute(completions: Sequence[Completion], **kwargs: Any) -> list[float | None]:
            answers = scorer.answers(completions, kwargs)
            log_batch(answers, kwargs, [name, "length_ratio"] if name == "length" else [name])
            return [_number(a.get(name)) for a in answers]

        return compute

    return [_make(name, component(name), asynchronous) for name in scorer.components]


def total_reward(
    client: RewardClient | None = None,
    *,
    components: Sequence[str] = COMPONENTS,
    asynchronous: bool = False,
    name: str = "how2score_total",
) -> RewardFunc:
    """One reward function: the reward config's weighted sum of the components (None where the judge could
    not answer), each component's batch mean logged through log_metric."""
    scorer = BatchScorer(client, components)

    def compute(completions: Sequence[Completion], **kwargs: Any) -> list[float | None]:
        answers = scorer.answers(completions, kwargs)
        log_batch(answers, kwargs, [*scorer.components, "length_ratio"])
        log_extra = kwargs.get("log_extra")
        if log_extra is not None:
            for column in scorer.components:
                log_extra(column, [a.get(column) for a in answers])
        return [_number(a.get("total")) for a in answers]

    return _make(name, compute, asynchronous)


def how2score_only(client: RewardClient | None = None, *, asynchronous: bool = False) -> RewardFunc:
    """How2Score alone (1 when the judge finds no critical failure, 0 otherwise)."""
    return reward_funcs(client, components=["how2score"], asynchronous=asynchronous)[0]


def format_only(client: RewardClient | None = None, *, asynchronous: bool = False) -> RewardFunc:
    """The step-format verifier alone (no judge call)."""
    return reward_funcs(client, components=["format"], asynchronous=asynchronous)[0]


def length_only(client: RewardClient | None = None, *, asynchronous: bool = False) -> RewardFunc:
    """The reference-calibrated length reward alone (no judge call)."""
    return reward_funcs(client, components=["length"], asynchronous=asynchronous)[0]
