"""A verifier in the shape of open-instruct's verifier functions (open_instruct/ground_truth_utils.py), for
the dataset name "how2score": open-instruct builds each VerifierFunction subclass with
`cls(cls.get_config_class().from_args(args))`, looks it up by its `name`, and awaits
`async_call(tokenized_prediction=..., prediction=..., label=..., query=...)` once per completion, all at once;
each answer is a VerificationResult(score, cost, reasoning), the score scaled by the verifier's `weight`.

    How2Score = open_instruct_verifier(VerifierFunction, VerificationResult)   # in ground_truth_utils.py

makes the subclass open-instruct finds. `label` is the How2Train export's ground truth (a JSON string);
the score is the reward config's weighted sum of the components asked for (0 where the judge could not
answer; the reasoning then says why). Concurrent calls go to the service in one request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from h2e_reward.client import COMPONENTS, Answer, RewardClient, check_components
from h2e_reward.coalesce import Coalescer
from h2e_reward.items import group_id, item, procedure_ref

NAME = "how2score"


@dataclass
class VerificationResult:
    """open-instruct's result shape."""

    score: float
    cost: float = 0.0
    reasoning: str | None = None


@dataclass
class VerifierConfig:
    """open-instruct's config hook: `from_args(args)` keeps nothing (the client reads the environment)."""

    @classmethod
    def from_args(cls, args: Any) -> VerifierConfig:
        return cls()


class How2ScoreVerifier:
    result_type: Any = VerificationResult

    def __init__(
        self,
        verifier_config: Any = None,
        *,
        client: RewardClient | None = None,
        components: Sequence[str] = COMPONENTS,
        weight: float = 1.0,
        window: float = 0.05,
    ) -> None:
        self.name, self.weight, self.verifier_config = NAME, weight, verifier_config
        self.client = client or RewardClient()
        self.components = check_components(components) or list(COMPONENTS)
        self._coalescer = Coalescer(self.client, self.components, window)

    @classmethod
    def get_config_class(cls) -> type:
        return VerifierConfig

    def __call__(
        self, tokenized_prediction: list[int], prediction: str, label: Any, query: str | None = None
    ) -> Any:
        answer = self.client.score([self._item(prediction, label, query)], self.components)[0]
        return self._result(answer)

    async def async_call(
        self,
        tokenized_prediction: list[int],
        prediction: str,
        label: Any,
        query: str | None = None,
        **kwargs: Any,
    ) -> Any:
        return self._result(await self._coalescer.score(self._item(prediction, label, query)))

    def _item(self, prediction: str, label: Any, query: str | None) -> dict[str, Any]:
        if isinstance(label, list) and len(label) == 1:
            label = label[0]
        return item(prediction, procedure_ref(ground_truth=label), group=group_id(query or label))

    def _result(self, answer: Answer) -> Any:
        parts = [f"{name}={answer.get(name)}" for name in (*self.components, "length_ratio")]
        why = answer.get("error") or answer.get("how2score_reason") or ""
        reasoning = ", ".join(parts) + (f"; {why}" if why else "")
        return self.result_type(score=float(answer.get("total") or 0.0), cost=0.0, reasoning=reasoning)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name}, weight={self.weight})"


def open_instruct_verifier(base: type, result_type: type) -> type:
    """How2ScoreVerifier as a subclass of open-instruct's VerifierFunction (so build_all_verifiers finds it),
    answering open-instruct's VerificationResult."""
    return type("How2ScoreVerifierFunction", (How2ScoreVerifier, base), {"result_type": result_type})
