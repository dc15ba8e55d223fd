"""How each trainer calls its reward code, without the trainer (no torch, no trl/verl/open-instruct here):
the same argument names, shapes and order as the trainers' own code, so the adapters are tested as they run.

- TRL: GRPOTrainer._calculate_rewards (trl/trainer/grpo_trainer.py): the dataset's columns but prompt and
  completion as keyword lists, trainer_state, log_extra, log_metric; sync functions called one after
  another, `async def` ones (inspect.iscoroutinefunction) gathered on the trainer's own event loop thread;
  None becomes NaN.
- verl: NaiveRewardManager (one compute_score call per sample, keywords data_source, solution_str,
  ground_truth, extra_info), BatchRewardManager (data_sources, solution_strs, ground_truths, extra_infos as
  numpy arrays and lists, plus reward_kwargs), the reward loop (await compute_score(...) per sample at once,
  with reward_router_address and reward_model_tokenizer); the function loaded from custom_reward_function's
  path and name with importlib, as verl's get_custom_reward_fn does, reward_kwargs bound to it.
- open-instruct: build_all_verifiers (cls(cls.get_config_class().from_args(args)), keyed by name) and
  apply_verifiable_reward (await async_call(...) for every completion at once, score x reward_mult x weight).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import inspect
import math
import sys
import threading
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

# --- TRL ---------------------------------------------------------------------------------------------------


def run_coroutine(coroutine: Any) -> Any:
    """asyncio.run in a thread of its own, as a trainer's process runs it: this test process may already
    have an event loop running in its main thread (the session's Playwright browser)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@dataclass
class TrainerState:
    """transformers.TrainerState's field a reward function reads."""

    global_step: int = 0


@dataclass
class TRLLogs:
    metrics: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    extra: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))

    def log_metric(self, name: str, value: float) -> None:
        self.metrics[name].append(value)

    def log_extra(self, column: str, values: list[Any]) -> None:
        self.extra[column].extend(values)


class TRLAsyncLoop:
    """GRPOTrainer's event loop in a daemon thread, on which it gathers the async reward functions."""

    def __enter__(self) -> TRLAsyncLoop:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def trl_rewards(
    reward_funcs: Sequence[Callable[..., Any]],
    inputs: list[dict[str, Any]],
    completions: list[Any],
    *,
    step: int,
    logs: TRLLogs,
    loop: TRLAsyncLoop | None = None,
) -> list[list[float]]:
    """rewards_per_func as GRPOTrainer._calculate_rewards builds it (one row per completion)."""
    prompts = [example["prompt"] for example in inputs]
    completion_ids = [[0] * 3 for _ in completions]
    keys = [key for key in inputs[0] if key not in ["prompt", "completion", "completion_ids"]]
    reward_kwargs: dict[str, Any] = {key: [example[key] for example in inputs] for key in keys}
    reward_kwargs["trainer_state"] = TrainerState(global_step=step)
    reward_kwargs["log_extra"] = logs.log_extra
    reward_kwargs["log_metric"] = logs.log_metric
    columns: dict[int, list[float]] = {}
    async_funcs = []
    for i, func in enumerate(reward_funcs):
        if inspect.iscoroutinefunction(func):
            async_funcs.append((i, func))
            continue
        output = func(
            prompts=prompts, completions=completions, completion_ids=completion_ids, **reward_kwargs
        )
        columns[i] = [r if r is not None else math.nan for r in output]
    if async_funcs:
        assert loop is not None, "TRL runs async reward functions on its own loop"

        async def invoke(i: int, func: Callable[..., Any]) -> tuple[int, list[float]]:
            output = await func(
                prompts=prompts, completions=completions, completion_ids=completion_ids, **reward_kwargs
            )
            return i, [r if r is not None else math.nan for r in output]

        async def run_all() -> list[tuple[int, list[float]]]:
            return list(await asyncio.gather(*[invoke(i, func) for i, func in async_funcs]))

        for i, output in asyncio.run_coroutine_threadsafe(run_all(), loop.loop).result(timeout=60):
            columns[i] = output
    return [[columns[i][row] for i in range(len(reward_funcs))] for row in range(len(completions))]


def repeated(rows: list[dict[str, Any]], num_generations: int) -> list[dict[str, Any]]:
    """TRL's RepeatSampler: each prompt's row num_generations times in a row (one group)."""
    return [row for row in rows for _ in range(num_generations)]


# --- verl --------------------------------------------------------------------------------------------------


def _call_with_kwargs(
    raw_fn: Callable[..., Any], extra_kwargs: dict[str, Any], *args: Any, **kwargs: Any
) -> Any:
    return raw_fn(*args, **{**kwargs, **extra_kwargs})


async def _call_with_kwargs_async(
    raw_fn: Callable[..., Any], extra_kwargs: dict[str, Any], *args: Any, **kwargs: Any
) -> Any:
    return await raw_fn(*args, **{**kwargs, **extra_kwargs})


def verl_custom_reward_fn(path: str, name: str, reward_kwargs: dict[str, Any]) -> Callable[..., Any]:
    """verl's get_custom_reward_fn (verl/trainer/ppo/reward.py): the file loaded as the module
    "custom_module", the function taken by name, reward_kwargs merged into every call."""
    if not Path(path).exists():
        raise FileNotFoundError(f"Reward function file '{path}' not found.")
    spec = importlib.util.spec_from_file_location("custom_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    spec.loader.exec_module(module)
    raw_fn = getattr(module, name)
    if inspect.iscoroutinefunction(raw_fn):
        return partial(_call_with_kwargs_async, raw_fn, dict(reward_kwargs))
    return partial(_call_with_kwargs, raw_fn, dict(reward_kwargs))


def verl_naive(compute_score: Callable[..., Any], samples: list[dict[str, Any]]) -> list[float]:
    """NaiveRewardManager: one call per sample; a dict answer's "score" is the reward."""
    rewards = []
    for sample in samples:
        extra_info = dict(sample.get("extra_info") or {})
        extra_info["num_turns"] = None
        score = compute_score(
            data_source=sample["data_source"],
            solution_str=sample["response"],
            ground_truth=sample["reward_model"]["ground_truth"],
            extra_info=extra_info,
        )
        rewards.append(score["score"] if isinstance(score, dict) else score)
    return rewards


def verl_batch(compute_score: Callable[..., Any], samples: list[dict[str, Any]]) -> list[Any]:
    """BatchRewardManager.verify: one call with the batch's arrays."""
    return list(
        compute_score(
            data_sources=np.array([s["data_source"] for s in samples], dtype=object),
            solution_strs=[s["response"] for s in samples],
            ground_truths=[s["reward_model"].get("ground_truth", None) for s in samples],
            extra_infos=np.array([s.get("extra_info") for s in samples], dtype=object),
        )
    )


def verl_reward_loop(compute_score: Callable[..., Any], samples: list[dict[str, Any]]) -> list[Any]:
    """The reward loop: every sample's awaited compute_score at once, with the loop's extra arguments."""

    async def one(sample: dict[str, Any]) -> Any:
        return await compute_score(
            data_source=sample["data_source"],
            solution_str=sample["response"],
            ground_truth=sample["reward_model"]["ground_truth"],
            extra_info=sample.get("extra_info"),
            reward_router_address=None,
            reward_model_tokenizer=None,
        )

    async def run_all() -> list[Any]:
        return list(await asyncio.gather(*[one(sample) for sample in samples]))

    return run_coroutine(run_all())


# --- open-instruct -----------------------------------------------------------------------------------------


@dataclass
class VerifierConfig:
    """open_instruct.ground_truth_utils.VerifierConfig's from_args: the Args fields of the config's own."""

    @classmethod
    def from_args(cls, args: Any) -> VerifierConfig:
        return cls()


@dataclass
class VerificationResult:
    """open_instruct.ground_truth_utils.VerificationResult."""

    score: float
    cost: float = 0.0
    reasoning: str | None = None


class VerifierFunction(ABC):
    """open_instruct.ground_truth_utils.VerifierFunction's shape: name, weight, verifier_config; abstract
    __call__; async_call running __call__ in a thread unless overridden."""

    def __init__(self, name: str, weight: float = 1.0, verifier_config: VerifierConfig | None = None) -> None:
        self.name, self.weight, self.verifier_config = name, weight, verifier_config

    @classmethod
    def get_config_class(cls) -> type:
        return VerifierConfig

    @abstractmethod
    def __call__(
        self, tokenized_prediction: list[int], prediction: str, label: Any, query: str | None = None
    ) -> VerificationResult: ...

    async def async_call(
        self, tokenized_prediction: list[int], prediction: str, label: Any, query: str | None = None
    ) -> VerificationResult:
        loop = asyncio.get_event_loop()
        return await loop.run_in_executor(
            None, lambda: self.__call__(tokenized_prediction, prediction, label, query)
        )


def build_all_verifiers(args: Any) -> dict[str, Any]:
    """open-instruct's build_all_verifiers, over the VerifierFunction subclasses defined so far."""
    verifiers = {}
    for subclass in VerifierFunction.__subclasses__():
        instance = subclass(subclass.get_config_class().from_args(args))
        verifiers[instance.name.lower()] = instance
    return verifiers


def apply_verifiable_reward(
    reward_fn_mapping: dict[str, Any],
    responses: list[list[int]],
    decoded_responses: list[str],
    ground_truths: list[Any],
    datasets: list[Any],
    reward_mult: int = 10,
    queries: list[str] | None = None,
) -> tuple[list[float], list[dict[str, float]]]:
    """open-instruct's apply_verifiable_reward: every (completion, ground truth) awaited at once."""
    queries = queries or [None] * len(responses)  # type: ignore[list-item]

    async def run_all() -> tuple[list[float], list[dict[str, float]]]:
        tasks, metadata = [], []
        for i, (tokens, prediction, truth, dataset, query) in enumerate(
            zip(responses, decoded_responses, ground_truths, datasets, queries, strict=True)
        ):
            truths = [truth] if isinstance(truth, str) else truth
            names = [dataset] if isinstance(dataset, str) else dataset
            for gt, ds in zip(truths, names, strict=True):
                reward_func = reward_fn_mapping.get(ds.lower())
                if reward_func is None:
                    continue
                tasks.append(
                    reward_func.async_call(
                        tokenized_prediction=tokens, prediction=prediction, label=gt, query=query
                    )
                )
                metadata.append((i, reward_func.name, reward_func.weight))
        results = await asyncio.gather(*tasks)
        rewards = [0.0] * len(responses)
        per_func: list[dict[str, float]] = [{} for _ in responses]
        for result, (i, name, weight) in zip(results, metadata, strict=True):
            score = result.score if hasattr(result, "score") else result
            rewards[i] += reward_mult * score * weight
            per_func[i][name] = per_func[i].get(name, 0.0) + reward_mult * score * weight
        return rewards, per_func

    return run_coroutine(run_all())
