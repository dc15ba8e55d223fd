"""The closed-form interval every layer shows beside a share: the Wilson score interval of a proportion. In
the core so that mining (the goal-step artifact check and model accuracy), judging (How2Score) and
annotation (agreement) use one formula; judging/stats.py re-exports it with its other statistics."""

from __future__ import annotations

import math

__all__ = ["wilson_interval"]


def wilson_interval(successes: int, n: int, *, z: float = 1.959964) -> tuple[float, float] | None:
    """The Wilson score 95 % interval of a proportion (None when n is 0)."""
    if n == 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)
