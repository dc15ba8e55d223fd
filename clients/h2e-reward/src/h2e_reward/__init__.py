"""How2Score as an RL reward: the client of the How2Everything Studio's reward service (POST /api/reward/)
and adapters for TRL (h2e_reward.trl), verl (h2e_reward.verl) and open-instruct (h2e_reward.open_instruct)."""

from h2e_reward.client import (
    COMPONENTS,
    MAX_ITEMS,
    RewardClient,
    RewardError,
    RewardRequestError,
    RewardServiceError,
)

__all__ = [
    "COMPONENTS",
    "MAX_ITEMS",
    "RewardClient",
    "RewardError",
    "RewardRequestError",
    "RewardServiceError",
]
