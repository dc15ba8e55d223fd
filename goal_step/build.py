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

What a build keeps of each task (its Funnel and Kept drafts) is in kept.py; cutting it into test and train
(§3.4) in split.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from h2e_site.embeddings.search import unit_rows

from .batch import Drafts, batch_of
from .corpus import Corpus
from .examples import (
    GOAL_INFERENCE,
    N_CANDIDATES,
    STEP_INFERENCE,
    STEP_ORDERING,
    TASKS,
    Example,
    Pk,
    ProcedureText,
    pk_order,
)
from .filters import DEFAULT_FILTERS, ORDERING_FILTERS, Filter, filter_name
from .kept import REASON_SAMPLES, Funnel, Kept
from .lexicon import Lexicon, best_tfidf, item_tokens, segments_gather
from .neighbours import nearest_in_other_groups
from .options import MAX_CANDIDATES

TOO_FEW_NEGATIVES = "too_few_negatives"
SAME_GOAL = "same_goal"
NOT_ORDERED = "not_ordered"
DUPLICATE = "duplicate"

Embed = Callable[[Sequence[str]], np.ndarray]


def prepare_corpus(procedures: Iterable[ProcedureText], *, embed: Embed) -> Corpus:
    """Validate, sort by pk, read every distinct text once (lexicon.py: words, stems, markup, tf-idf) and
    embed every goal and step (one call to embed)."""
    ordered = _validated(procedures)
    n = len(ordered)
    texts = tuple([p.goal for p in ordered] + [step for p in ordered for step in p.steps])
    counts = np.array([len(p.steps) for p in ordered], dtype=np.int64)
    step_starts = n + np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    owner = np.concatenate([np.arange(n), np.repeat(np.arange(n), counts)]).astype(np.int64)
    distinct: dict[str, int] = {}
    rows = np.array([distinct.setdefault(text, len(distinct)) for text in texts], dtype=np.int64)
    lexicon = Lexicon.of(list(distinct))
    token_starts, token_ids, token_counts = item_tokens(lexicon, rows)
    return Corpus(
        procedures=tuple(ordered),
        texts=texts,
        owner=owner,
        step_starts=step_starts,
        groups=_topic_groups(ordered),
        text_ids=lexicon.normalised_ids[rows],
        word_counts=lexicon.word_counts[rows],
        token_starts=token_starts,
        token_ids=token_ids,
        vocabulary=lexicon.vocabulary,
        informativeness=best_tfidf(token_starts, token_ids, token_counts, owner, n),
        markup=lexicon.markup[rows],
        vectors=_embed(embed, list(distinct)),
        vector_rows=rows,
    )


def _validated(procedures: Iterable[ProcedureText]) -> list[ProcedureText]:
    """The procedures in pk order; ValueError naming the first repeated pk, empty goal or empty step."""
    ordered = sorted(procedures, key=lambda p: pk_order(p.pk))
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
    return ordered


def _topic_groups(ordered: Sequence[ProcedureText]) -> np.ndarray:
    """Per procedure, its topic's id; a procedure without a topic is a group of its own."""
    topic_ids: dict[str, int] = {}
    groups = np.array(
        [topic_ids.setdefault(p.topic, len(topic_ids)) if p.topic is not None else -1 for p in ordered],
        dtype=np.int64,
    )
    no_topic = np.flatnonzero(groups < 0)
    groups[no_topic] = len(topic_ids) + np.arange(len(no_topic))
    return groups


def _embed(embed: Embed, distinct: Sequence[str]) -> np.ndarray:
    """Each distinct text embedded once (steps repeat: "Gather your materials"), rows L2-normalised in place
    (float16 when embed gives float16: half the memory, ~1e-3 on a cosine; else float32)."""
    if not distinct:
        return np.zeros((0, 1), dtype=np.float32)
    vectors = np.asarray(embed(list(distinct)))
    if vectors.ndim != 2 or len(vectors) != len(distinct):
        raise ValueError(f"embed returned shape {vectors.shape} for {len(distinct)} texts")
    vectors = unit_rows(vectors, np.float16 if vectors.dtype == np.float16 else np.float32, out=vectors)
    return vectors


def task_rng(seed: int, task: str) -> np.random.Generator:
    return np.random.default_rng([seed, TASKS.index(task)])


def draft_step_inference(
    corpus: Corpus,
    *,
    seed: int,
    n_candidates: int = N_CANDIDATES,
    filters: Sequence[Filter] = DEFAULT_FILTERS,
    reassign: bool = True,
    label_blind: bool = True,
) -> tuple[Kept, Funnel]:
    """One draft per step: the step and its nearest steps from other topics; one of them redrawn as the
    positive, its goal the prompt; shuffled; filtered (see _filtered, and _alone for label_blind)."""
    _check_n_candidates(n_candidates)
    rng = task_rng(seed, STEP_INFERENCE)
    funnel = _funnel(STEP_INFERENCE, filters, TOO_FEW_NEGATIVES, SAME_GOAL)
    steps = np.arange(len(corpus.procedures), len(corpus.texts), dtype=np.int64)
    funnel.candidates_in += len(steps)
    pool = steps[_alone(STEP_INFERENCE, corpus.owner[steps], steps, corpus, filters, funnel, label_blind)]
    neighbours = nearest_in_other_groups(
        corpus.vectors,
        corpus.groups[corpus.owner[pool]],
        corpus.text_ids[pool],
        n_candidates - 1,
        rows=corpus.vector_rows[pool],
        seed=seed,
    )
    positives = _positives(rng, len(pool), n_candidates, reassign)
    orders = rng.permuted(np.tile(np.arange(n_candidates), (len(pool), 1)), axis=1)
    short = neighbours[:, -1] < 0
    funnel.remove_many(
        TOO_FEW_NEGATIVES,
        int(short.sum()),
        [f"step {corpus.texts[s]!r}: fewer than {n_candidates - 1}" for s in pool[short][:REASON_SAMPLES]],
    )
    candidates = np.column_stack([pool, pool[np.maximum(neighbours, 0)]])
    goals = corpus.owner[candidates]  # the prompt, whichever candidate is the positive
    # two procedures with one goal: a step of the other would be right too
    same_goal = _repeats(corpus.text_ids[goals]) & ~short
    funnel.remove_many(
        SAME_GOAL,
        int(same_goal.sum()),
        [
            f"step {corpus.texts[s]!r}: two candidates' procedures share a goal"
            for s in pool[same_goal][:REASON_SAMPLES]
        ],
    )
    rows = np.flatnonzero(~short & ~same_goal)
    drafts = _drafts(
        STEP_INFERENCE, candidates[rows], goals[rows], orders[rows], positives[rows], label_blind
    )
    kept = _first_of_each(drafts, _filtered(drafts, corpus, filters, funnel), corpus, funnel)
    funnel.kept += len(kept)
    return Kept(corpus, drafts, kept, pool[rows[kept]]), funnel


def draft_goal_inference(
    corpus: Corpus,
    *,
    seed: int,
    n_candidates: int = N_CANDIDATES,
    filters: Sequence[Filter] = DEFAULT_FILTERS,
    reassign: bool = True,
    label_blind: bool = True,
) -> tuple[Kept, Funnel]:
    """One candidate set per goal: the goal and its nearest goals from other topics. One draft per step of
    the goal: one candidate redrawn as the positive, the prompt that step if the draw is the goal itself,
    else a step of the positive drawn at random; shuffled; filtered (see _filtered, and _alone)."""
    _check_n_candidates(n_candidates)
    rng = task_rng(seed, GOAL_INFERENCE)
    funnel = _funnel(GOAL_INFERENCE, filters, TOO_FEW_NEGATIVES)
    steps = np.arange(len(corpus.procedures), len(corpus.texts), dtype=np.int64)
    funnel.candidates_in += len(steps)
    prompts = steps[_alone(GOAL_INFERENCE, steps, corpus.owner[steps], corpus, filters, funnel, label_blind)]
    counts = np.bincount(corpus.owner[prompts], minlength=len(corpus.procedures))  # prompts per goal
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)  # prompts stay in procedure order
    goals = np.flatnonzero(counts)
    neighbours = nearest_in_other_groups(
        corpus.vectors,
        corpus.groups[goals],
        corpus.text_ids[goals],
        n_candidates - 1,
        rows=corpus.vector_rows[goals],
        seed=seed,
    )
    short = neighbours[:, -1] < 0
    funnel.remove_many(
        TOO_FEW_NEGATIVES,
        int(counts[goals[short]].sum()),
        [f"goal {corpus.texts[g]!r}: fewer than {n_candidates - 1}" for g in goals[short][:REASON_SAMPLES]],
    )
    row_set, positions = segments_gather(starts, goals[~short])  # one row per prompt step of a goal
    per_goal = np.column_stack([goals[~short], goals[np.maximum(neighbours[~short], 0)]])
    candidates, others_of = per_goal[row_set], per_goal[:, 1:]
    others = candidates[:, 1:]
    # the other goals' prompts: a uniform step each, drawn without replacement among one goal's rows (a
    # random start, then the next ones), so that its rows share no prompt while a goal has steps enough
    first = (rng.random((len(goals) - int(short.sum()), n_candidates - 1)) * counts[others_of]).astype(
        np.int64
    )
    nth = (positions - starts[candidates[:, 0]])[:, None]
    drawn = starts[others] + (first[row_set] + nth) % counts[others]
    prompts_of = np.column_stack([prompts[positions], prompts[drawn]])
    positives = _positives(rng, len(candidates), n_candidates, reassign)
    orders = rng.permuted(np.tile(np.arange(n_candidates), (len(candidates), 1)), axis=1)
    drafts = _drafts(GOAL_INFERENCE, candidates, prompts_of, orders, positives, label_blind)
    kept = _first_of_each(drafts, _filtered(drafts, corpus, filters, funnel), corpus, funnel)
    funnel.kept += len(kept)
    return Kept(corpus, drafts, kept, candidates[kept, 0]), funnel


def draft_step_ordering(
    corpus: Corpus,
    *,
    seed: int,
    ordered: Callable[[ProcedureText], bool] | None = None,
    filters: Sequence[Filter] = ORDERING_FILTERS,
) -> tuple[Kept, Funnel]:
    """Every pair of adjacent steps of an ordered procedure (`ordered(procedure)`, by default its
    `ordered` field is True), shuffled; the answer is the earlier step. Pairs of other procedures count as
    not_ordered."""
    is_ordered = ordered or (lambda procedure: procedure.ordered is True)
    rng = task_rng(seed, STEP_ORDERING)
    funnel = _funnel(STEP_ORDERING, filters, NOT_ORDERED)
    chosen = np.array([is_ordered(p) for p in corpus.procedures], dtype=bool)
    pairs = np.maximum(0, np.diff(corpus.step_starts) - 1)
    funnel.candidates_in += int(pairs.sum())
    skipped = np.flatnonzero(~chosen & (pairs > 0))
    funnel.remove_many(
        NOT_ORDERED,
        int(pairs[skipped].sum()),
        [f"procedure {corpus.procedures[p].pk!r} is not ordered" for p in skipped[:REASON_SAMPLES]],
    )
    procedures = np.flatnonzero(chosen & (pairs > 0))
    pair_starts = np.concatenate([[0], np.cumsum(pairs)]).astype(np.int64)
    row_of, positions = segments_gather(pair_starts, procedures)
    owner = procedures[row_of]
    earlier = corpus.step_starts[owner] + positions - pair_starts[owner]
    swaps = rng.integers(2, size=len(earlier))
    candidates = np.where(
        swaps[:, None] == 1, np.column_stack([earlier + 1, earlier]), np.column_stack([earlier, earlier + 1])
    )
    drafts = Drafts(STEP_ORDERING, candidates, owner[:, None], swaps[:, None])
    kept = _first_of_each(drafts, _filtered(drafts, corpus, filters, funnel), corpus, funnel)
    funnel.kept += len(kept)
    return Kept(corpus, drafts, kept, earlier[kept]), funnel


def build_step_inference(corpus: Corpus, **options: Any) -> tuple[list[Example], Funnel]:
    """draft_step_inference's examples, made."""
    kept, funnel = draft_step_inference(corpus, **options)
    return kept.examples(), funnel


def build_goal_inference(corpus: Corpus, **options: Any) -> tuple[list[Example], Funnel]:
    """draft_goal_inference's examples, made."""
    kept, funnel = draft_goal_inference(corpus, **options)
    return kept.examples(), funnel


def build_step_ordering(corpus: Corpus, **options: Any) -> tuple[list[Example], Funnel]:
    """draft_step_ordering's examples, made."""
    kept, funnel = draft_step_ordering(corpus, **options)
    return kept.examples(), funnel


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


def _positives(rng: np.random.Generator, rows: int, n_candidates: int, reassign: bool) -> np.ndarray:
    """Which candidate becomes the positive: uniform with reassignment, else the one searched around (0)."""
    if reassign:
        return rng.integers(n_candidates, size=rows)
    return np.zeros(rows, dtype=np.int64)


def _funnel(task: str, filters: Sequence[Filter], *stages: str) -> Funnel:
    """Stages in the order they remove: the task's own, the filters, then duplicates."""
    names = [*stages, *(filter_name(f) for f in filters), DUPLICATE]
    return Funnel(task, removed=dict.fromkeys(names, 0))


def _first_of_each(drafts: Drafts, rows: np.ndarray, corpus: Corpus, funnel: Funnel) -> np.ndarray:
    """`rows` without a row that could draft an example drafted before: the same set of candidates
    (normalised texts) and, in one of its labelings, the same answer with the same prompt as a labeling of
    an earlier row. Two steps that are each other's neighbours, or two steps of a goal with a short
    negative goal, would otherwise make one example twice. Deciding on every labeling (not on the one
    drawn) keeps the removal blind to the answer, as the filters are."""
    if not len(rows):
        return rows
    labelings = drafts.prompts.shape[1]
    candidates = corpus.text_ids[drafts.candidates[rows]]
    answers = np.take_along_axis(candidates, drafts.answers[rows], axis=1)
    sets = _first_occurrence(np.sort(candidates, axis=1))  # an id per set of candidates
    entries = np.column_stack(
        [np.repeat(sets, labelings), answers.ravel(), corpus.text_ids[drafts.prompts[rows]].ravel()]
    )
    owner = np.arange(len(entries)) // labelings
    first_owner = owner[_first_occurrence(entries)]
    repeated = np.zeros(len(rows), dtype=bool)
    repeated[owner[first_owner < owner]] = True
    funnel.remove_many(
        DUPLICATE,
        int(repeated.sum()),
        [
            f"prompt {corpus.texts[int(drafts.prompts[r, 0])]!r}: an example drafted before could be the same"
            for r in rows[repeated][:REASON_SAMPLES]
        ],
    )
    return rows[~repeated]


def _alone(
    task: str,
    prompts: np.ndarray,
    positives: np.ndarray,
    corpus: Corpus,
    filters: Sequence[Filter],
    funnel: Funnel,
    label_blind: bool,
) -> np.ndarray:
    """Per (prompt, positive) pair, whether it passes every filter on its own, as an example with that one
    candidate (failures are counted in the funnel under their first failing filter). With label_blind, an
    item failing on its own (a step sharing a word with its own goal, say) would fail every example it took
    part in, whichever candidate were the positive, so it is left out of the search: its own draft is
    removed here and it is never drawn as a negative, where it could only sink the example. (This holds for
    filters that judge each part of an example on its own, as ours do.) Without label_blind, as in the
    paper, nothing is left out beforehand."""
    passes = np.ones(len(prompts), dtype=bool)
    if label_blind:
        single = Drafts(
            task, positives[:, None], prompts[:, None], np.zeros((len(prompts), 1), dtype=np.int64)
        )
        passes[:] = False
        passes[_filtered(single, corpus, filters, funnel)] = True
    return passes


def _drafts(
    task: str,
    candidates: np.ndarray,
    prompts: np.ndarray,
    orders: np.ndarray,
    positives: np.ndarray,
    label_blind: bool,
) -> Drafts:
    """Candidates (rows, k) as searched (the seed first) and each one's prompt, shown in `orders` (row r
    shows candidates[r, orders[r]]). Labeling 0 makes positives[r] the answer and its prompt the prompt;
    with label_blind, labelings 1.. do the same for each other candidate (in order): what the example would
    have been had the reassignment drawn differently."""
    rows, k = candidates.shape
    row = np.arange(rows)[:, None]
    shown_at = np.argsort(orders, axis=1)  # where candidate i is shown
    chosen = positives[:, None]
    if label_blind:
        every = np.tile(np.arange(k), (rows, 1))
        others = every[every != positives[:, None]].reshape(rows, k - 1)
        chosen = np.column_stack([positives, others])
    return Drafts(task, candidates[row, orders], prompts[row, chosen], shown_at[row, chosen])


def _first_occurrence(keys: np.ndarray) -> np.ndarray:
    """Per row of `keys` (rows, columns of ints), the index of the first row equal to it (a stable lexsort:
    no copy of the rows as np.unique(axis=0) makes)."""
    order = np.lexsort(keys.T[::-1])
    ordered = keys[order]
    new = np.ones(len(keys), dtype=bool)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    starts = np.flatnonzero(new)
    first = np.empty(len(keys), dtype=np.int64)
    first[order] = order[starts][np.cumsum(new) - 1]
    return first


def _repeats(ids: np.ndarray) -> np.ndarray:
    """Per row, whether two of its ids are equal."""
    ordered = np.sort(ids, axis=1)
    return (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)


def _check_n_candidates(n_candidates: int) -> None:
    if not 2 <= n_candidates <= MAX_CANDIDATES:
        raise ValueError(
            f"n_candidates: expected 2 to {MAX_CANDIDATES} (options are lettered A to Z), got {n_candidates}"
        )


def _filtered(drafts: Drafts, corpus: Corpus, filters: Sequence[Filter], funnel: Funnel) -> np.ndarray:
    """The rows of `drafts` every filter passes in every labeling, in order; the others
    are counted under the first filter failing one of their labelings, with a few reasons. Filtering all
    labelings keeps the decision blind to which candidate is the positive, so filtering cannot undo what
    reassignment did: given the candidates, each is still the answer with the same chance. (Filtering only
    the drawn labeling, as the paper does, can: a filter that looks at the prompt looks, through it, at the
    answer.) Each filter runs in its batch form (batch.py) on the rows still in."""
    alive = np.arange(len(drafts))
    for check in filters:
        if not len(alive):
            break
        fails = batch_of(check)(drafts.take(alive), corpus)
        failed = np.flatnonzero(fails.any(axis=1))
        reasons = [
            _reason(check, drafts, int(alive[row]), fails[row], corpus) for row in failed[:REASON_SAMPLES]
        ]
        funnel.remove_many(filter_name(check), len(failed), reasons)
        alive = np.delete(alive, failed)
    return alive


def _reason(check: Filter, drafts: Drafts, row: int, fails: np.ndarray, corpus: Corpus) -> str:
    """What the filter says of the row's first failing labeling (after the first: "had ... been")."""
    labeling = int(np.argmax(fails))
    draft = drafts.draft(row, labeling)
    reason = check(draft, corpus)
    if reason is None:
        raise RuntimeError(f"filter {filter_name(check)}: its batch form refused {draft}, which it passes")
    return f"had candidate {draft.answer} been the answer: {reason}" if labeling else reason
