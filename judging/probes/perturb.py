"""The sample and the perturbations of a judge probe: pure functions of their inputs and a seed.

- The sample: `n` of the eligible generation pks (sorted first, so the same set and seed give the same
  sample whatever order the database answers in), drawn with random.Random(seed).sample; their order is
  the items' positions.
- Each item's perturbation is drawn from its own random.Random(f"{seed}:{generation pk}"), so an item's
  perturbation does not depend on which other items were drawn:
  - delete_step: one step, chosen uniformly, removed (needs at least 2 steps);
  - swap_steps: two distinct steps, chosen uniformly among all pairs, exchanged (needs at least 2 steps).
  Step numbers are 1-based, as the judge sees them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

MIN_STEPS = {"verbose": 1, "delete_step": 2, "swap_steps": 2}


def sample_pks(pks: Sequence[int], n: int, seed: int) -> list[int]:
    """`n` of `pks` drawn without replacement with `seed` (ValueError when there are fewer)."""
    return random.Random(seed).sample(sorted(pks), n)


def item_rng(seed: int, generation_pk: int) -> random.Random:
    return random.Random(f"{seed}:{generation_pk}")


def delete_step(steps: Sequence[str], rng: random.Random) -> tuple[list[str], dict[str, Any]]:
    """The steps without one chosen by `rng`, and {"deleted_step": its 1-based number}."""
    if len(steps) < 2:
        raise ValueError("deleting a step needs at least 2 steps")
    k = rng.randrange(len(steps))
    return [*steps[:k], *steps[k + 1 :]], {"deleted_step": k + 1}


def swap_steps(steps: Sequence[str], rng: random.Random) -> tuple[list[str], dict[str, Any]]:
    """The steps with two chosen by `rng` exchanged, and {"swapped_steps": [i, j]} (1-based, i < j)."""
    if len(steps) < 2:
        raise ValueError("swapping steps needs at least 2 steps")
    i, j = sorted(rng.sample(range(len(steps)), 2))
    swapped = list(steps)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    return swapped, {"swapped_steps": [i + 1, j + 1]}


def perturb(kind: str, steps: Sequence[str], rng: random.Random) -> tuple[list[str] | None, dict[str, Any]]:
    """The perturbed steps of a deterministic kind (None for verbose: the rewriter makes them)."""
    if kind == "delete_step":
        return delete_step(steps, rng)
    if kind == "swap_steps":
        return swap_steps(steps, rng)
    return None, {}
