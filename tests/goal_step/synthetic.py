"""Deterministic stand-ins for the goal-step tests: a bag-of-words embedding and synthetic procedures."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

import numpy as np

from goal_step.build import ProcedureText
from mining.topics import WEBORGANIZER_TOPICS

SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "su", "do", "fa", "gu", "hi", "ja", "be")


class WordEmbedding:
    """The normalised sum of one fixed random vector per word (seeded by the word's hash): texts that share
    words are close, texts that share none are nearly orthogonal. Deterministic across runs."""

    def __init__(self, dim: int = 48) -> None:
        self.dim = dim
        self.words: dict[str, np.ndarray] = {}

    def word(self, word: str) -> np.ndarray:
        if word not in self.words:
            seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
            self.words[word] = np.random.default_rng(seed).standard_normal(self.dim)
        return self.words[word]

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim))
        for i, text in enumerate(texts):
            for word in text.lower().replace(".", " ").split():
                rows[i] += self.word(word)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return (rows / np.where(norms == 0, 1, norms)).astype(np.float32)


def vocabulary(rng: random.Random, n: int) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))))
    return sorted(words)


def synthetic_procedures(
    n: int,
    *,
    seed: int = 0,
    topics: Sequence[str] = WEBORGANIZER_TOPICS,
    no_topic_share: float = 0.05,
    steps: tuple[int, int] = (3, 8),
) -> list[ProcedureText]:
    """n procedures: each topic has its own words, each procedure a pool of them and of shared words, so
    its steps are alike; the goal has words of its own, which a step repeats one time in four (as "Flip the
    pancake" does "Make pancakes"); about half are ordered; a few have no topic."""
    rng = random.Random(seed)
    words = vocabulary(rng, 150 * len(topics) + 500)
    shared = words[:500]
    by_topic = {topic: words[500 + 150 * i : 650 + 150 * i] for i, topic in enumerate(topics)}
    procedures = []
    for pk in range(1, n + 1):
        topic = None if rng.random() < no_topic_share else rng.choice(list(topics))
        own = rng.sample(by_topic[topic or rng.choice(list(topics))], 13)
        goal_words, pool = own[:3], own[3:] + rng.sample(shared, 3)
        step_texts = []
        for _ in range(rng.randint(*steps)):
            chosen = rng.sample(pool, rng.randint(3, 6))
            if rng.random() < 0.25:
                chosen.append(rng.choice(goal_words))
            step_texts.append(" ".join(chosen).capitalize() + ".")
        goal = " ".join(goal_words).capitalize()
        procedures.append(ProcedureText(pk, goal, step_texts, topic, ordered=rng.random() < 0.5))
    return procedures
