"""The heuristics filter of How2Mine (paper §B.3, h2e-compat.md "Mining rules").

1. Step count within [min_steps, max_steps] (paper: 5-15).
2. n-gram repetition: each step is normalised (lowercase, non-word characters to spaces, spaces collapsed),
   word n-grams are built within each step and pooled across steps; the rate is Σ(count - 1) / total, the
   share of n-grams repeating an earlier one. Rejected when the 2-gram rate >= 0.40, the 3-gram rate >= 0.35
   or the 4-gram rate >= 0.30. No n-grams at all (steps shorter than n words) is a rate of 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .config import PrefilterConfig

_WORDS = re.compile(r"\w+")


def normalise_step(step: str) -> list[str]:
    """The words of a step: lowercased, non-word characters as spaces, split on spaces (= the runs of word
    characters)."""
    return _WORDS.findall(step.lower())


def ngram_repetition_rate(steps: Sequence[str], n: int) -> float:
    """Σ(count - 1) / total over the word n-grams of every step, pooled."""
    return _repetition([normalise_step(step) for step in steps], n)


def _repetition(step_words: Sequence[list[str]], n: int) -> float:
    """Σ(count - 1) / total = (total - distinct) / total, the n-grams built within each step."""
    grams = [gram for words in step_words for gram in zip(*(words[i:] for i in range(n)), strict=False)]
    return (len(grams) - len(set(grams))) / len(grams) if grams else 0.0


@dataclass(frozen=True)
class PrefilterVerdict:
    passed: bool
    reason: str = ""
    rates: dict[str, float] = field(default_factory=dict)

    def payload(self, n_steps: int) -> dict[str, object]:
        return {"n_steps": n_steps, "ngram_repetition": self.rates}


def prefilter_steps(steps: Sequence[str], config: PrefilterConfig) -> PrefilterVerdict:
    """Step count first, then each n-gram repetition rate against its threshold."""
    n_steps = len(steps)
    if not config.min_steps <= n_steps <= config.max_steps:
        reason = f"{n_steps} steps, outside {config.min_steps}-{config.max_steps}"
        return PrefilterVerdict(False, reason)
    step_words = [normalise_step(step) for step in steps]
    rates = {n: _repetition(step_words, n) for n, _ in config.ngram_thresholds}
    shown = {str(n): round(rate, 6) for n, rate in rates.items()}
    for n, limit in config.ngram_thresholds:
        if rates[n] >= limit:
            return PrefilterVerdict(False, f"{n}-gram repetition {rates[n]:.3f} >= {limit:.2f}", shown)
    return PrefilterVerdict(True, "", shown)
