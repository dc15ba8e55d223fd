"""Statistics of rankings: Kendall's tau-b of many rankings at once (for bootstrap intervals: judging's
rankings and pairwise figures), Holm's adjustment of the p-values of many comparisons (judging/paired.py), and
the Bradley-Terry fit of a win matrix with its bootstrap over items (annotation/kinds/pairwise/comparisons.py,
which says what the strengths and their intervals mean).

Bradley-Terry: P(i beats j) = exp(s_i) / (exp(s_i) + exp(s_j)), fitted with `choix.ilsr_pairwise_dense` on the
win matrix with regularisation alpha: the fit solves, for every generator i, wins_i - sum_j n_ij w_i / (w_i +
w_j) = alpha sum_j (w_i - w_j) with w = exp(s) scaled to mean 1, which keeps an unbeaten generator's strength
finite. Strengths are log-scale, mean 0."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "bootstrap_strengths",
    "connected",
    "fit_strengths",
    "holm_adjusted",
    "percentile_interval",
    "ranks",
    "resample_weights",
    "tau_b_rows",
]

_MAX_ITER = 10_000


def holm_adjusted(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: with the m p-values sorted ascending,
    adjusted_(i) = max over j <= i of min(1, (m - j + 1) p_(j)) (1-based). The same as statsmodels'
    multipletests(method="holm") (tests/judging/test_paired.py checks it), which is not called on the pages
    because it runs a full garbage collection on every call (75 ms)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between x[k] and y[k] for every row k (NaN where a row is constant): the
    concordant-minus-discordant pair count over sqrt(untied pairs in x times untied pairs in y)."""
    import numpy as np

    upper = np.triu_indices(x.shape[1], k=1)
    sx = np.sign(x[:, :, None] - x[:, None, :])[:, upper[0], upper[1]]
    sy = np.sign(y[:, :, None] - y[:, None, :])[:, upper[0], upper[1]]
    denominator = np.sqrt((sx != 0).sum(axis=1) * (sy != 0).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, (sx * sy).sum(axis=1) / denominator, np.nan)


# --- Bradley-Terry ----------------------------------------------------------------------------------------


def connected(wins: np.ndarray) -> np.ndarray:
    """For each generators x generators win matrix of a stack (..., G, G): do its comparisons connect every
    generator (directly or through others)?"""
    import numpy as np

    size = wins.shape[-1]
    reach = ((wins + np.swapaxes(wins, -1, -2)) > 0) | np.eye(size, dtype=bool)
    for _ in range(max(1, math.ceil(math.log2(size)))):
        reach = (reach.astype(float) @ reach.astype(float)) > 0
    return reach.all(axis=(-1, -2))


def fit_strengths(wins: np.ndarray, alpha: float, start: np.ndarray | None = None) -> np.ndarray | None:
    """Bradley-Terry log-strengths (mean 0) of one win matrix (choix's ILSR); None if it does not converge."""
    import choix

    try:
        return choix.ilsr_pairwise_dense(wins, alpha=alpha, initial_params=start, max_iter=_MAX_ITER)
    except (RuntimeError, ValueError):
        return None


def ranks(strengths: np.ndarray) -> np.ndarray:
    """1 + how many generators are strictly stronger, for every row of a (..., G) array."""
    return 1 + (strengths[..., None, :] > strengths[..., :, None]).sum(axis=-1)


def resample_weights(n_items: int, resamples: int, seed: int) -> np.ndarray:
    """resamples x items: how many times each resample draws each item (judging/rankings.py's draw)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.multinomial(n_items, np.full(n_items, 1 / n_items), size=resamples)


def bootstrap_strengths(
    wins: np.ndarray, weights: np.ndarray, alpha: float, start: np.ndarray | None = None
) -> np.ndarray:
    """resamples x generators strengths of the resampled items (a row of NaN where undefined); each fit starts
    from `start` (the point estimate), which changes where ILSR begins, not where it converges."""
    import numpy as np

    stacked = np.einsum("bu,uij->bij", weights, wins)
    result = np.full((weights.shape[0], wins.shape[1]), np.nan)
    for b in np.flatnonzero(connected(stacked)):
        fitted = fit_strengths(stacked[b], alpha, start)
        if fitted is not None:
            result[b] = fitted
    return result


def percentile_interval(values: np.ndarray, level: float) -> tuple[list[float], list[float]]:
    """The percentile bootstrap interval at `level` of every column of resamples x columns values."""
    import numpy as np

    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail], axis=0)
    return low.tolist(), high.tolist()
