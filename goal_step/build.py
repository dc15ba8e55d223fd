"""Multiple-choice tasks on goals and steps, built as in "Reasoning about Goals, Steps, and Temporal
Ordering with WikiHow" (Zhang, Lyu & Callison-Burch, 2020, §3), with our topics in place of wikiHow
categories. Pure Python and numpy: the caller turns its procedures into ProcedureText and passes an embedding
function (texts -> unit rows; production: `h2e_site.embeddings.store.StoredEmbed`, the embedding store).

Step Inference (§3.1): for every step s, its 3 negatives are the steps most similar to it (cosine) in other
topics, pairwise distinct (see neighbours.py; a procedure without a topic is a topic of its own). Label
reassignment: one of the 4 candidates, drawn uniformly, becomes the positive and the prompt is *its* goal; the
others are negatives for that goal because they come from other topics (unless two of the procedures have the
same goal text: such drafts are dropped as same_goal). The candidates are then shuffled.
Whatever a model sees of the candidates alone, each is the answer with chance 1/4, so a candidates-only
model can do no better than chance (artifacts.py measures it).

Goal Inference (§3.2): for every goal g, its negatives are the most similar goals in other topics, and each
step of g makes one example ("for each positive candidate goal, we use each of its steps"), reassigned as in
Step Inference: one of the 4 goals, drawn uniformly, becomes the positive and the prompt is replaced by a
step of it (the step itself if the draw is g, else one of the positive's steps drawn at random).

Step Ordering (§3.3): for every procedure whose steps are ordered (the `ordered` field, or a predicate the
caller passes), each pair of adjacent steps, the goal as prompt, the two steps shuffled; the answer is the
one that comes first. No negatives and no reassignment: the shuffle alone puts the answer first half the
time.

Then the filters of appendix D (filters.py); a Funnel per task counts what each removed. One departure
(label_blind, the default): the paper filters the example as reassigned, but a filter that reads the prompt
reads, through it, which candidate is the answer, so it can keep or drop an example depending on the answer
and leave a candidates-only signal behind. The similarity filter does: when the answer is the candidate the
negatives were searched around, they are the closest to a step of the prompt goal, so those examples are
dropped more often and the centroid baseline falls below chance. With label_blind an example is kept only
if it would pass whichever candidate had been drawn as the positive (with that candidate's prompt), so given
its candidates the answer stays uniform; to keep the yield, a step that fails a filter on its own (a step
sharing a word with its own goal, say), and so would sink every example it is in, is left out of the search
(_alone). label_blind=False filters as the paper does.

Reproducible: the procedures are put in pk order first, and every draw comes from numpy Generators seeded by
(seed, task).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from h2e_site.embeddings.search import unit_rows

from .corpus import Corpus, Draft
from .examples import (
    GOAL_INFERENCE,
    N_CANDIDATES,
    STEP_INFERENCE,
    STEP_ORDERING,
    TASKS,
    Example,
    Pk,
    ProcedureText,
)
from .filters import (
    DEFAULT_FILTERS,
    ORDERING_FILTERS,
    Filter,
    content_words,
    filter_name,
    informativeness,
    words,
)
from .neighbours import nearest_in_other_groups
from .options import MAX_CANDIDATES

TOO_FEW_NEGATIVES = "too_few_negatives"
SAME_GOAL = "same_goal"
NOT_ORDERED = "not_ordered"
REASON_SAMPLES = 3

Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass
class Funnel:
    """Per task: drafted examples in, removed at each stage (in order), kept; a few reasons per stage."""

    task: str
    candidates_in: int = 0
    removed: dict[str, int] = field(default_factory=dict)
    kept: int = 0
    reasons: dict[str, list[str]] = field(default_factory=dict)

    def remove(self, stage: str, reason: str, count: int = 1) -> None:
        self.removed[stage] = self.removed.get(stage, 0) + count
        samples = self.reasons.setdefault(stage, [])
        if len(samples) < REASON_SAMPLES:
            samples.append(reason)

    def merged(self, other: Funnel) -> Funnel:
        """This funnel and another of the same task, counted together."""
        removed = dict(self.removed)
        for stage, count in other.removed.items():
            removed[stage] = removed.get(stage, 0) + count
        reasons = {
            stage: [*self.reasons.get(stage, []), *other.reasons.get(stage, [])][:REASON_SAMPLES]
            for stage in removed
        }
        return Funnel(
            self.task, self.candidates_in + other.candidates_in, removed, self.kept + other.kept, reasons
        )

    def lines(self) -> list[str]:
        lines = [f"{self.task}: {self.candidates_in:,} in"]
        lines += [f"  - {stage}: {count:,}" for stage, count in self.removed.items()]
        lines.append(f"  = {self.kept:,} kept")
        return lines


def normalise(text: str) -> str:
    """Case-folded words joined by single spaces: how texts are compared for equality."""
    return " ".join(words(text))


def _pk_order(pk: Pk) -> tuple[int, int, str]:
    return (0, pk, "") if isinstance(pk, int) else (1, 0, str(pk))


def prepare_corpus(procedures: Iterable[ProcedureText], *, embed: Embed) -> Corpus:
    """Validate, sort by pk, tokenise, score tf-idf and embed every goal and step (one call to embed)."""
    ordered = sorted(procedures, key=lambda p: _pk_order(p.pk))
    seen: set[Pk] = set()
    for procedure in ordered:
        if procedure.pk in seen:
            raise ValueError(f"procedure pk {procedure.pk!r} appears twice")
        seen.add(procedure.pk)
        if not procedure.goal.strip():
            raise ValueError(f"procedure {procedure.pk!r}: the goal is empty")
        for number, step in enumerate(procedure.steps, start=1):
            if not step.strip():
                raise ValueError(f"procedure {procedure.pk!r}: step {number} is empty")
    n = len(ordered)
    texts = tuple([p.goal for p in ordered] + [step for p in ordered for step in p.steps])
    counts = np.array([len(p.steps) for p in ordered], dtype=np.int64)
    step_starts = n + np.concatenate([[0], np.cumsum(counts)])
    owner = np.concatenate([np.arange(n), np.repeat(np.arange(n), counts)])
    topic_ids: dict[str, int] = {}
    groups = np.array(
        [topic_ids.setdefault(p.topic, len(topic_ids)) if p.topic is not None else -1 for p in ordered],
        dtype=np.int64,
    )
    no_topic = np.flatnonzero(groups < 0)
    groups[no_topic] = len(topic_ids) + np.arange(len(no_topic))
    text_index: dict[str, int] = {}
    text_ids = np.array([text_index.setdefault(normalise(t), len(text_index)) for t in texts], dtype=np.int64)
    content = [content_words(t) for t in texts]
    documents = [[content[p], *content[step_starts[p] : step_starts[p + 1]]] for p in range(n)]
    scores = informativeness(documents)
    best = np.zeros(len(texts))
    for p, document in enumerate(scores):
        best[p] = document[0]
        best[step_starts[p] : step_starts[p + 1]] = document[1:]
    return Corpus(
        procedures=tuple(ordered),
        texts=texts,
        owner=owner,
        step_starts=step_starts,
        groups=groups,
        text_ids=text_ids,
        word_counts=np.array([len(words(t)) for t in texts], dtype=np.int64),
        tokens=tuple(frozenset(c) for c in content),
        informativeness=best,
        vectors=_embed(embed, texts),
    )


def _embed(embed: Embed, texts: Sequence[str]) -> np.ndarray:
    """Each distinct text embedded once (steps repeat: "Gather your materials"), rows L2-normalised (float16
    when embed gives float16: half the memory, ~1e-3 on a cosine; else float32)."""
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    index: dict[str, int] = {}
    rows = np.array([index.setdefault(text, len(index)) for text in texts], dtype=np.int64)
    vectors = np.asarray(embed(list(index)))
    if vectors.ndim != 2 or len(vectors) != len(index):
        raise ValueError(f"embed returned shape {vectors.shape} for {len(index)} texts")
    vectors = unit_rows(vectors, np.float16 if vectors.dtype == np.float16 else np.float32)
    return vectors if len(index) == len(texts) else vectors[rows]


def task_rng(seed: int, task: str) -> np.random.Generator:
    return np.random.default_rng([seed, TASKS.index(task)])


def build_step_inference(
    corpus: Corpus,
    *,
    seed: int,
    n_candidates: int = N_CANDIDATES,
    filters: Sequence[Filter] = DEFAULT_FILTERS,
    reassign: bool = True,
    label_blind: bool = True,
) -> tuple[list[Example], Funnel]:
    """One draft per step: the step and its nearest steps from other topics; one of them redrawn as the
    positive, its goal the prompt; shuffled; filtered (see _passes, and _alone for label_blind)."""
    _check_n_candidates(n_candidates)
    rng = task_rng(seed, STEP_INFERENCE)
    funnel = _funnel(STEP_INFERENCE, filters, TOO_FEW_NEGATIVES, SAME_GOAL)
    first = len(corpus.procedures)
    steps = list(range(first, len(corpus.texts)))
    failures = _alone(
        STEP_INFERENCE, [(int(corpus.owner[s]), s) for s in steps], corpus, filters, label_blind
    )
    pool = np.array(
        [s for s, failure in zip(steps, failures, strict=True) if failure is None], dtype=np.int64
    )
    neighbours = nearest_in_other_groups(
        corpus.vectors[pool],
        corpus.groups[corpus.owner[pool]],
        corpus.text_ids[pool],
        n_candidates - 1,
        seed=seed,
    )
    positives = _positives(rng, len(pool), n_candidates, reassign).tolist()
    orders = rng.permuted(np.tile(np.arange(n_candidates), (len(pool), 1)), axis=1).tolist()
    examples: list[Example] = []
    row = 0
    for step, failure in zip(steps, failures, strict=True):
        funnel.candidates_in += 1
        if failure is not None:
            funnel.remove(*failure)
            continue
        row += 1
        if neighbours[row - 1, -1] < 0:
            funnel.remove(TOO_FEW_NEGATIVES, f"step {corpus.texts[step]!r}: fewer than {n_candidates - 1}")
            continue
        candidates = [step, *pool[neighbours[row - 1]].tolist()]
        goals = [int(corpus.owner[c]) for c in candidates]  # the prompt, whichever is the positive
        if len({int(corpus.text_ids[g]) for g in goals}) < len(goals):
            # two procedures with one goal: a step of the other would be right too
            funnel.remove(SAME_GOAL, f"step {corpus.texts[step]!r}: two candidates' procedures share a goal")
            continue
        drafts = _labelings(
            STEP_INFERENCE, candidates, goals, orders[row - 1], positives[row - 1], label_blind
        )
        if _passes(drafts, corpus, filters, funnel):
            examples.append(_example(drafts[0], corpus, seed_item=step))
    return examples, funnel


def build_goal_inference(
    corpus: Corpus,
    *,
    seed: int,
    n_candidates: int = N_CANDIDATES,
    filters: Sequence[Filter] = DEFAULT_FILTERS,
    reassign: bool = True,
    label_blind: bool = True,
) -> tuple[list[Example], Funnel]:
    """One candidate set per goal: the goal and its nearest goals from other topics. One draft per step of
    the goal: one candidate redrawn as the positive, the prompt that step if the draw is the goal itself,
    else a step of the positive drawn at random; shuffled; filtered (see _passes, and _alone)."""
    _check_n_candidates(n_candidates)
    rng = task_rng(seed, GOAL_INFERENCE)
    funnel = _funnel(GOAL_INFERENCE, filters, TOO_FEW_NEGATIVES)
    first = len(corpus.procedures)
    steps = list(range(first, len(corpus.texts)))
    failures = _alone(
        GOAL_INFERENCE, [(s, int(corpus.owner[s])) for s in steps], corpus, filters, label_blind
    )
    prompts_of: list[list[int]] = [[] for _ in corpus.procedures]  # the steps that can be a prompt
    for step, failure in zip(steps, failures, strict=True):
        if failure is None:
            prompts_of[int(corpus.owner[step])].append(step)
    goals = np.array([p for p, prompts in enumerate(prompts_of) if prompts], dtype=np.int64)
    neighbours = nearest_in_other_groups(
        corpus.vectors[goals], corpus.groups[goals], corpus.text_ids[goals], n_candidates - 1, seed=seed
    )
    rows = {int(goal): row for row, goal in enumerate(goals)}
    examples: list[Example] = []
    for goal in range(len(corpus.procedures)):
        items = list(corpus.step_items(goal))
        funnel.candidates_in += len(items)
        for step in items:
            failure = failures[step - first]
            if failure is not None:
                funnel.remove(*failure)
        if goal not in rows:
            continue
        if neighbours[rows[goal], -1] < 0:
            reason = f"goal {corpus.texts[goal]!r}: fewer than {n_candidates - 1}"
            funnel.remove(TOO_FEW_NEGATIVES, reason, len(prompts_of[goal]))
            continue
        candidates = [goal, *goals[neighbours[rows[goal]]].tolist()]
        for step in prompts_of[goal]:
            prompts = [step] + [prompts_of[c][int(rng.integers(len(prompts_of[c])))] for c in candidates[1:]]
            positive = int(_positives(rng, 1, n_candidates, reassign)[0])
            order = rng.permutation(n_candidates).tolist()
            drafts = _labelings(GOAL_INFERENCE, candidates, prompts, order, positive, label_blind)
            if _passes(drafts, corpus, filters, funnel):
                examples.append(_example(drafts[0], corpus, seed_item=goal))
    return examples, funnel


def build_step_ordering(
    corpus: Corpus,
    *,
    seed: int,
    ordered: Callable[[ProcedureText], bool] | None = None,
    filters: Sequence[Filter] = ORDERING_FILTERS,
) -> tuple[list[Example], Funnel]:
    """Every pair of adjacent steps of an ordered procedure (`ordered(procedure)`, by default its
    `ordered` field is True), shuffled; the answer is the earlier step. Pairs of other procedures count as
    not_ordered."""
    is_ordered = ordered or (lambda procedure: procedure.ordered is True)
    rng = task_rng(seed, STEP_ORDERING)
    funnel = _funnel(STEP_ORDERING, filters, NOT_ORDERED)
    examples: list[Example] = []
    for p, procedure in enumerate(corpus.procedures):
        pairs = max(0, len(procedure.steps) - 1)
        if not is_ordered(procedure):
            if pairs:
                funnel.candidates_in += pairs
                funnel.remove(NOT_ORDERED, f"procedure {procedure.pk!r} is not ordered", pairs)
            continue
        items = list(corpus.step_items(p))
        swaps = rng.integers(2, size=pairs).tolist()
        for earlier, later, swap in zip(items[:-1], items[1:], swaps, strict=True):
            funnel.candidates_in += 1
            draft = Draft(
                STEP_ORDERING,
                prompt=p,
                candidates=(later, earlier) if swap else (earlier, later),
                answer=int(swap),
            )
            if _passes([draft], corpus, filters, funnel):
                examples.append(_example(draft, corpus, seed_item=earlier))
    return examples, funnel


def build_all(
    procedures: Iterable[ProcedureText],
    *,
    embed: Embed,
    seed: int,
    n_candidates: int = N_CANDIDATES,
    filters: Sequence[Filter] = DEFAULT_FILTERS,
    ordering_filters: Sequence[Filter] = ORDERING_FILTERS,
    ordered: Callable[[ProcedureText], bool] | None = None,
    reassign: bool = True,
    label_blind: bool = True,
) -> tuple[dict[str, list[Example]], dict[str, Funnel]]:
    """The three tasks from one embedding of the procedures: examples and funnels, keyed by task."""
    corpus = prepare_corpus(procedures, embed=embed)
    options: dict[str, Any] = {
        "seed": seed,
        "n_candidates": n_candidates,
        "filters": filters,
        "reassign": reassign,
        "label_blind": label_blind,
    }
    built = {
        STEP_INFERENCE: build_step_inference(corpus, **options),
        GOAL_INFERENCE: build_goal_inference(corpus, **options),
        STEP_ORDERING: build_step_ordering(corpus, seed=seed, ordered=ordered, filters=ordering_filters),
    }
    return {task: pair[0] for task, pair in built.items()}, {task: pair[1] for task, pair in built.items()}


@dataclass
class TrainTestSplit:
    train: list[Example]
    test: list[Example]
    dropped: int  # examples left out of train because they share a text with the test set


def procedures_split(
    procedures: Sequence[ProcedureText], *, test_share: float, seed: int
) -> tuple[list[ProcedureText], list[ProcedureText]]:
    """The split by procedure: round(test_share x n) procedures drawn with the seed (in pk order first) are
    test, the rest train."""
    ordered = sorted(procedures, key=lambda p: _pk_order(p.pk))
    chosen = set(
        np.random.default_rng([seed, len(TASKS)])
        .choice(len(ordered), size=round(test_share * len(ordered)), replace=False)
        .tolist()
    )
    return [p for i, p in enumerate(ordered) if i in chosen], [
        p for i, p in enumerate(ordered) if i not in chosen
    ]


def split_train_test(examples: Sequence[Example], *, test_size: int, seed: int) -> TrainTestSplit:
    """§3.4: `test_size` examples drawn at random are the test set; the training set is the rest, minus any
    example whose prompt or a candidate (normalised) is the prompt or a candidate of a test example."""
    if not 0 <= test_size <= len(examples):
        raise ValueError(f"test_size must be between 0 and {len(examples)}, got {test_size}")
    chosen = np.random.default_rng(seed).choice(len(examples), size=test_size, replace=False)
    in_test = np.zeros(len(examples), dtype=bool)
    in_test[chosen] = True
    test = [e for e, t in zip(examples, in_test, strict=True) if t]
    test_texts = {normalise(text) for e in test for text in (e.prompt, *e.candidates)}
    train: list[Example] = []
    dropped = 0
    for example, is_test in zip(examples, in_test, strict=True):
        if is_test:
            continue
        if any(normalise(text) in test_texts for text in (example.prompt, *example.candidates)):
            dropped += 1
        else:
            train.append(example)
    return TrainTestSplit(train=train, test=test, dropped=dropped)


def _positives(rng: np.random.Generator, rows: int, n_candidates: int, reassign: bool) -> np.ndarray:
    """Which candidate becomes the positive: uniform with reassignment, else the one searched around (0)."""
    if reassign:
        return rng.integers(n_candidates, size=rows)
    return np.zeros(rows, dtype=np.int64)


def _funnel(task: str, filters: Sequence[Filter], *stages: str) -> Funnel:
    return Funnel(task, removed={**{stage: 0 for stage in stages}, **{filter_name(f): 0 for f in filters}})


def _alone(
    task: str, pairs: list[tuple[int, int]], corpus: Corpus, filters: Sequence[Filter], label_blind: bool
) -> list[tuple[str, str] | None]:
    """Per (prompt, positive) pair, the first filter (name, reason) failing it on its own: as an example
    with that one candidate. With label_blind, an item failing on its own (a step sharing a word with its own
    goal, say) would fail every example it took part in, whichever candidate were the positive, so it is
    left out of the search: its own draft is removed here and it is never drawn as a negative, where it
    could only sink the example. (This holds for filters that judge each part of an example on its own, as
    ours do.) Without label_blind, as in the paper, nothing is left out beforehand."""
    if not label_blind:
        return [None] * len(pairs)
    names = [filter_name(check) for check in filters]
    failures: list[tuple[str, str] | None] = []
    for prompt, positive in pairs:
        draft = Draft(task, prompt, (positive,), 0)
        failures.append(None)
        for name, check in zip(names, filters, strict=True):
            reason = check(draft, corpus)
            if reason is not None:
                failures[-1] = (name, reason)
                break
    return failures


def _labelings(
    task: str, candidates: list[int], prompts: list[int], order: list[int], positive: int, label_blind: bool
) -> list[Draft]:
    """The drafted example (first) and, when label_blind, the same candidates with each other candidate as
    the positive and its prompt: what the example would have been had the reassignment drawn differently."""
    shuffled = tuple(candidates[i] for i in order)
    chosen = [positive, *(i for i in range(len(candidates)) if i != positive)] if label_blind else [positive]
    return [Draft(task, prompts[i], shuffled, order.index(i)) for i in chosen]


def _check_n_candidates(n_candidates: int) -> None:
    if not 2 <= n_candidates <= MAX_CANDIDATES:
        raise ValueError(
            f"n_candidates: expected 2 to {MAX_CANDIDATES} (options are lettered A to Z), got {n_candidates}"
        )


def _passes(drafts: Sequence[Draft], corpus: Corpus, filters: Sequence[Filter], funnel: Funnel) -> bool:
    """Keep drafts[0] if every filter passes it and every other labeling in drafts. Filtering all labelings
    keeps the decision blind to which candidate is the positive, so filtering cannot undo what reassignment
    did: given the candidates, each is still the answer with the same chance. (Filtering only the drawn
    labeling, as the paper does, can: a filter that looks at the prompt looks, through it, at the answer.)"""
    for check in filters:
        for number, draft in enumerate(drafts):
            reason = check(draft, corpus)
            if reason is not None:
                if number:
                    reason = f"had candidate {draft.answer} been the answer: {reason}"
                funnel.remove(filter_name(check), reason)
                return False
    funnel.kept += 1
    return True


def _example(draft: Draft, corpus: Corpus, *, seed_item: int) -> Example:
    procedures = corpus.procedures
    owners = [int(corpus.owner[item]) for item in draft.candidates]
    if draft.task == STEP_ORDERING:
        first = int(corpus.step_starts[draft.prompt])
        meta: dict[str, Any] = {"step_numbers": [item - first + 1 for item in draft.candidates]}
    else:
        meta = {
            "candidate_pks": [procedures[o].pk for o in owners],
            "candidate_topics": [procedures[o].topic for o in owners],
            "seed_pk": procedures[int(corpus.owner[seed_item])].pk,
        }
    return Example(
        task=draft.task,
        prompt=corpus.texts[draft.prompt],
        candidates=[corpus.texts[item] for item in draft.candidates],
        answer=draft.answer,
        source_pk=procedures[int(corpus.owner[draft.prompt])].pk,
        meta=meta,
    )
