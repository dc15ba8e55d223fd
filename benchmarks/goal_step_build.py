"""Goal-step task building at scale: the three tasks of goal_step from 10,000 synthetic procedures
(about 80,000 steps), embedded with the real model (all-MiniLM-L6-v2 in numpy, h2e_site.embeddings), in
memory: benchmarks/embedding_store.py times the build from stored vectors, as the app runs it.

    .venv/bin/python benchmarks/goal_step_build.py [--procedures 10000] [--embedding minilm|words] [--seed 0]

The procedures are English-like ("Rinse the small brush with warm water."), 4-12 steps, 14 topics (a few
procedures without one), half of them ordered. Prints the wall time of each part (embedding, the corpus
without the embedding, each task, the candidates-only check, the recall of the neighbour search (faiss:
an inverted-file index above 20,000 texts) against an exact search on 500 steps), the funnels, and the
peak RSS of the process (getrusage ru_maxrss).
--embedding words swaps the model for a bag-of-words stand-in to time everything else. Writes nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import random
import resource
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from goal_step.artifacts import candidates_only_baseline  # noqa: E402
from goal_step.build import (  # noqa: E402
    Corpus,
    ProcedureText,
    build_goal_inference,
    build_step_inference,
    build_step_ordering,
    prepare_corpus,
)
from goal_step.neighbours import nearest_in_other_groups  # noqa: E402
from mining.topics import WEBORGANIZER_TOPICS as TOPICS  # noqa: E402


def _words(text: str) -> list[str]:
    return text.split()


VERBS = _words(
    """
    add adjust align apply arrange attach bake bend boil brush buy check choose chop clean clear
    close coat collect connect cook cool cover cut dig drain draw dry dust empty fill find fix fold
    follow gather glue hang heat hold inspect install iron keep knead label lay lift light load
    loosen lower measure mix move open pack paint peel pick place plan plant pour practise prepare
    press prune pull push rake read remove repair replace rinse roll sand save scrub seal season
    secure select set sew shake sharpen shape slice smooth soak sort spray spread sprinkle start
    stir store stretch sweep take tape test thread tie tighten trim turn twist unplug wash water
    weigh wipe wrap write
    """
)
NOUNS = _words(
    """
    account apron axle bag battery bean beard belt bench blade blanket board bolt book boot bottle
    bowl box bracket branch bread brick brush bucket budget bulb button cable cake candle canvas
    card carpet chain chair charger cheese chicken cloth coat coffee collar cord cover crust cup
    curtain cushion desk dough drawer dress drill egg engine envelope fabric fence file filter flour
    folder frame garlic glass glove glue gravel grill guitar hammer handle helmet hinge hose jacket
    jar kettle key knife label ladder lamp lawn leash leaf lens lid map mat mirror mop nail needle
    net notebook nut oil onion oven paint pan paper pasta pedal pen pepper pillow pipe plank plant
    plate pot pump rack rice rope rug saddle salt sauce saw screw seed shelf shirt shoe sink skirt
    soap sock soil spoon stamp steak stone strap string sugar table tank tent thread tile tire tool
    towel tray tree valve vase wall wheel window wire wood yarn
    """
)
ADJECTIVES = _words(
    """
    small large warm cold clean dry wet soft firm old new loose tight thin thick fresh damp smooth
    rough sharp dull light heavy short long flat round spare extra
    """
)
PLACES = _words(
    """
    with on into under over near beside through around behind
    """
)


def vocabulary_by_topic(rng: random.Random) -> dict[str, list[str]]:
    """Each topic gets its own 40 nouns (with overlap, as topics share objects)."""
    return {topic: rng.sample(NOUNS, 40) for topic in TOPICS}


def step_text(rng: random.Random, nouns: list[str]) -> str:
    first, second = rng.sample(nouns, 2)
    words = [rng.choice(VERBS), "the", rng.choice(ADJECTIVES), first]
    if rng.random() < 0.7:
        words += [rng.choice(PLACES), "the", second]
    return " ".join(words).capitalize() + "."


def synthetic_procedures(n: int, seed: int) -> list[ProcedureText]:
    rng = random.Random(seed)
    by_topic = vocabulary_by_topic(rng)
    procedures = []
    for pk in range(1, n + 1):
        topic = None if rng.random() < 0.03 else rng.choice(TOPICS)
        nouns = rng.sample(by_topic[topic or rng.choice(TOPICS)], 8)
        goal = f"{rng.choice(VERBS).capitalize()} a {rng.choice(ADJECTIVES)} {nouns[0]}"
        steps = [step_text(rng, nouns) for _ in range(rng.randint(4, 12))]
        procedures.append(ProcedureText(pk, goal, steps, topic, ordered=rng.random() < 0.5))
    return procedures


def words_embedding(texts: Sequence[str]) -> np.ndarray:
    """Bag of words: a fixed random 384-vector per word (from its hash), summed and normalised."""
    cache: dict[str, np.ndarray] = {}
    rows = np.zeros((len(texts), 384), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in text.lower().rstrip(".").split():
            if word not in cache:
                seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
                cache[word] = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
            rows[i] += cache[word]
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


class Timed:
    """The embedding function, keeping the vectors it made (so the candidates-only check embeds nothing
    again) and the time it took."""

    def __init__(self, embed: Callable[[Sequence[str]], np.ndarray]) -> None:
        self.embed = embed
        self.seconds = 0.0
        self.rows: dict[str, int] = {}
        self.made: list[np.ndarray] = []

    @property
    def texts(self) -> int:
        return len(self.rows)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.rows]
        if missing:
            start = time.perf_counter()
            self.made.append(np.asarray(self.embed(missing), dtype=np.float32))
            self.seconds += time.perf_counter() - start
            offset = len(self.rows)
            self.rows.update((t, offset + i) for i, t in enumerate(missing))
            if len(self.made) > 1:
                self.made = [np.concatenate(self.made)]
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return self.made[0][[self.rows[t] for t in texts]]


def recall_on_sample(corpus: Corpus, seed: int, size: int = 500) -> tuple[float, float]:
    """For sampled steps: the share whose first neighbour in the search (approximate above 20,000 texts, run
    over every step) is as similar as the best an exact search finds (ties count), and the mean shortfall in
    cosine."""
    first = len(corpus.procedures)
    steps = np.arange(first, len(corpus.texts))
    vectors = corpus.vectors_of(steps)
    groups = corpus.groups[corpus.owner[steps]]
    texts = corpus.text_ids[steps]
    found = nearest_in_other_groups(vectors, groups, texts, 3, seed=seed)
    sample = np.random.default_rng(seed).choice(len(steps), size=min(size, len(steps)), replace=False)
    gaps = []
    for row in sample.tolist():
        scores = vectors @ vectors[row]
        scores[(groups == groups[row]) | (texts == texts[row])] = -np.inf
        gaps.append(float(scores.max() - scores[found[row, 0]]))
    return float(np.mean(np.array(gaps) <= 1e-5)), float(np.mean(gaps))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--procedures", type=int, default=10_000)
    parser.add_argument("--embedding", choices=["minilm", "words"], default="minilm")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    procedures = synthetic_procedures(args.procedures, args.seed)
    n_steps = sum(len(p.steps) for p in procedures)
    print(f"{platform.python_version()} on {os.cpu_count()} CPU(s), load {os.getloadavg()[0]:.1f}")
    print(f"{len(procedures):,} procedures, {n_steps:,} steps, embedding: {args.embedding}")
    if args.embedding == "minilm":
        from h2e_site.embeddings.encoders import embedder_for

        embed = Timed(embedder_for().encode)
    else:
        embed = Timed(words_embedding)

    wall = time.perf_counter()
    start = time.perf_counter()
    corpus = prepare_corpus(procedures, embed=embed)
    corpus_s = time.perf_counter() - start
    timings = {}
    built = {}
    for name, build in (
        ("step_inference", lambda: build_step_inference(corpus, seed=args.seed)),
        ("goal_inference", lambda: build_goal_inference(corpus, seed=args.seed)),
        ("step_ordering", lambda: build_step_ordering(corpus, seed=args.seed)),
    ):
        start = time.perf_counter()
        built[name] = build()
        timings[name] = time.perf_counter() - start
    total_s = time.perf_counter() - wall

    start = time.perf_counter()
    reports = candidates_only_baseline([e for examples, _ in built.values() for e in examples], embed=embed)
    check_s = time.perf_counter() - start
    start = time.perf_counter()
    recall, gap = recall_on_sample(corpus, args.seed)
    recall_s = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(
        f"embedding: {embed.texts:,} distinct texts in {embed.seconds:.1f} s "
        f"({embed.texts / max(embed.seconds, 1e-9):,.0f} texts/s)"
    )
    print(f"corpus without the embedding (tokens, tf-idf): {corpus_s - embed.seconds:.1f} s")
    for name, seconds in timings.items():
        print(f"{name}: {seconds:.1f} s")
    print(f"total, embedding included: {total_s:.1f} s; without it: {total_s - embed.seconds:.1f} s")
    for _, funnel in built.values():
        print("\n".join(funnel.lines()))
    for report in reports.values():
        print(report.line())
    print(f"candidates-only check: {check_s:.1f} s (vectors reused)")
    print(
        f"first neighbour as good as the exact search's on 500 steps: {recall:.1%}, "
        f"mean cosine shortfall {gap:.4f} ({recall_s:.1f} s)"
    )
    print(f"peak RSS: {peak_mb:,.0f} MB")


if __name__ == "__main__":
    main()
