"""verl's custom reward function: in the trainer's config

    custom_reward_function.path=$(python -c 'import h2e_reward.verl as m; print(m.__file__)')
    custom_reward_function.name=compute_score          # verl's naive reward manager, one call per sample
    custom_reward_function.name=compute_score_batch    #   with reward_model.reward_manager=batch
    custom_reward_function.name=compute_score_async    #   verl's reward loop awaits it, samples at once

`ground_truth` is the How2Train export's JSON string (its `reward_model.ground_truth`). The client is set by
the environment (H2E_REWARD_URL, H2E_REWARD_TOKEN, H2E_REWARD_CONFIG, H2E_RUN) or by
custom_reward_function.reward_kwargs (url, token, reward, run, policy, timeout, components), which verl
passes to the function as keyword arguments. verl does not pass the training step: an `extra_info` with a
`step` (or `global_step`) key has it recorded. Each call answers a dict: `score` (the reward config's weighted
sum; 0 where the judge could not answer, then `judge_error` is 1), and each component asked for, which verl
keeps as reward_extra_info.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from h2e_reward.client import COMPONENTS, Answer, RewardClient, check_components
from h2e_reward.coalesce import Coalescer
from h2e_reward.items import group_id, item, procedure_ref

CLIENT_KEYS = ("url", "token", "reward", "run", "policy", "timeout")
_clients: dict[tuple[Any, ...], tuple[RewardClient, Coalescer]] = {}


def _client(kwargs: Mapping[str, Any]) -> tuple[RewardClient, Coalescer]:
    """One client per configuration (verl loads the function by its path and cannot pass one)."""
    components = check_components(kwargs.get("components")) or list(COMPONENTS)
    key = (*(kwargs.get(k) for k in CLIENT_KEYS), tuple(components))
    if key not in _clients:
        config = {k: kwargs[k] for k in CLIENT_KEYS if kwargs.get(k) is not None}
        client = RewardClient(**config)
        _clients[key] = (client, Coalescer(client, components))
    return _clients[key]


def _item(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any) -> dict[str, Any]:
    extra = extra_info if isinstance(extra_info, Mapping) else {}
    step = extra.get("step", extra.get("global_step"))
    try:
        ref = procedure_ref(ground_truth=ground_truth)
    except ValueError as error:
        raise ValueError(f"data_source {data_source!r}: {error}") from None
    return item(solution_str, ref, step=None if step is None else int(step), group=group_id(ground_truth))


def result(answer: Answer, components: Sequence[str]) -> dict[str, float]:
    """verl's answer: `score` and one number per component (verl's extra info wants numbers, never None)."""
    out = {"score": float(answer.get("total") or 0.0)}
    for name in components:
        out[name] = float(answer.get(name) or 0.0)
    if "length" in components:
        out["length_ratio"] = float(answer.get("length_ratio") or 0.0)
    if "how2score" in components:
        out["judge_error"] = 1.0 if answer.get("how2score") is None else 0.0
    return out


def compute_score(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> dict[str, float]:
    """One sample (verl's naive reward manager)."""
    client, coalescer = _client(kwargs)
    answer = client.score([_item(data_source, solution_str, ground_truth, extra_info)], coalescer.components)[
        0
    ]
    return result(answer, coalescer.components or COMPONENTS)


async def compute_score_async(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> dict[str, float]:
    """One sample, awaited (verl's reward loop): concurrent samples go to the service together."""
    _, coalescer = _client(kwargs)
    answer = await coalescer.score(_item(data_source, solution_str, ground_truth, extra_info))
    return result(answer, coalescer.components or COMPONENTS)


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """The whole batch in one request (verl's batch reward manager)."""
    client, coalescer = _client(kwargs)
    extras = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    items = [
        _item(source, text, truth, extra)
        for source, text, truth, extra in zip(data_sources, solution_strs, ground_truths, extras, strict=True)
    ]
    components = coalescer.components or COMPONENTS
    return [result(answer, components) for answer in client.score(items, components)]
