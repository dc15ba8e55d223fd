"""Calibration samples of critical-failures studies (issue #20 items 2 and 3): the study's items drawn from a
frame with known inclusion probabilities, stored per round, and later rounds that route human labels to
where the judges are least sure.

- The **frame** is every generation the selection matches without sampling: generations with L2 steps (no
  generation error), of the chosen generators. A topic filter or "only where judges disagree" is refused:
  examples outside them could never be drawn, or their chance is unknown.
- A **round** gives every frame generation its inclusion probability pi_ir under a design of
  h2e_site/stats/sampling.py (uniform; stratified by topic; disagreement: pi proportional to the judges'
  uncertainty on it, from their verdicts and a re-run's previous verdict), draws by systematic PPS, stores one
  CalibrationDraw per frame generation (probability, drawn) and adds an item for each generation drawn that
  the study does not have yet. Probabilities come from judge data only, never from human labels.
- Round 1 is drawn when the study is built (its size is the selection's sample_size); later rounds over the
  same frame (round 1's draws), each an independent draw, so pi_i = 1 - prod_r (1 - pi_ir) exactly.
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Max, QuerySet

from annotation.base.models import Study, StudyItem
from annotation.base.types import SAMPLE_SIZE, Selection, subject_key
from annotation.kinds.critical_failures.models import CalibrationDesign, CalibrationDraw, CalibrationRound
from annotation.kinds.critical_failures.name import KIND
from h2e_site.bounds import SEED, OutOfRange
from h2e_site.stats import sampling
from judging.models import Generation, Judge, Judgment
from judging.versions import cached

BATCH = 2000  # CalibrationDraw rows per INSERT
# A round over a frame larger than this is drawn by a job (calibration_jobs.py), not inside the request: a
# round takes ~10 ms per 1,000 frame examples (70 ms at 7,000, 2-3 s at 140,000 on the 2 shared cores;
# docs/benchmarks.md, researcher pages, issue #31 item 22), so one at the threshold stays near 100 ms.
ROUND_JOB_FRAME = 10_000
# The steps of a later round, as its progress counts them: the frame read, the probabilities and the draw,
# the draws stored, the new items added.
ROUND_STEPS = 4
Progress = Callable[[int], None]  # called with the number of steps just done


# --- the builder's refusals ------------------------------------------------------------------------------


def check_selection(selection: Selection) -> None:
    """A calibration sample's selection, or ValidationError naming each field it cannot take."""
    design = selection.calibration_design
    if not design:
        return
    errors: dict[str, str] = {}
    if design not in CalibrationDesign.values:
        errors["calibration_design"] = f"{design!r} is not one of {', '.join(CalibrationDesign.values)}"
    if selection.disagreeing_judge_ids:
        errors["disagreeing_judge_ids"] = (
            "a calibration sample cannot also keep only where judges disagree: that selection has no known "
            "inclusion probabilities (use the disagreement design, which over-samples them with known ones)"
        )
    if selection.topic_ids:
        errors["topic_ids"] = (
            "a calibration sample cannot be limited to some topics: the other topics' examples could never "
            "be drawn (use the design stratified by topic, which gives every topic its share)"
        )
    if selection.sample_size is None:
        errors["sample_size"] = "a calibration sample needs its size n: the number of examples round 1 draws"
    if design == CalibrationDesign.DISAGREEMENT and not errors:
        problem = judges_problem(selection.calibration_judge_ids, _frame_ids(selection))
        if problem:
            errors["calibration_judge_ids"] = problem
    if errors:
        raise ValidationError(errors)


def judges_problem(
    judge_ids: Sequence[int], frame_ids: Collection[int] | QuerySet[Any, Any] | None = None
) -> str:
    """Why these judges cannot give the disagreement design's uncertainty ("" when they can): at least two
    judges, or one judge with verdicts re-run on the frame (a flip is its uncertainty). `frame_ids`: the
    frame's generation ids, or a query of them (a large frame is not sent back as a list)."""
    unique = set(judge_ids)
    known = set(Judge.objects.filter(pk__in=unique).values_list("pk", flat=True))
    if unknown := sorted(unique - known):
        return f"no judge with id {', '.join(map(str, unknown))}"
    if not unique:
        return "the disagreement design needs the judges whose verdicts give the uncertainty: at least two"
    if len(unique) == 1:
        reruns = Judgment.objects.filter(judge_id__in=unique, previous_has_failure__isnull=False)
        if frame_ids is not None:
            ids = frame_ids if isinstance(frame_ids, QuerySet) else list(frame_ids)
            reruns = reruns.filter(generation_id__in=ids)
        if not reruns.exists():
            return (
                "one judge gives an uncertainty only through verdicts that flipped on a re-run, and this one "
                "has no re-run verdict on these generations: choose two judges or more"
            )
    return ""


# --- the frame and the probabilities ---------------------------------------------------------------------


def _frame_ids(selection: Selection) -> list[int]:
    return list(frame_of(selection))


def frame_of(selection: Selection) -> dict[int, Hashable]:
    """The frame of a selection: generation id -> its stratum (topic id) for every generation with L2 steps
    of the chosen generators (any generator when none); no sampling, no other filter."""
    generations = Generation.objects.filter(error="").exclude(predicted_steps=[])
    if selection.generator_ids:
        generations = generations.filter(generator_id__in=selection.generator_ids)
    return dict(generations.order_by("pk").values_list("pk", "procedure__topic_id"))


def study_frame(study: Study, *, with_topics: bool = True) -> dict[int, Hashable]:
    """A calibration study's frame: the generations of its round 1's draws, with their topics (None without
    `with_topics`: the designs other than stratified read no topic, and the join costs most of the read)."""
    draws = _first_draws(study).order_by("generation_id")
    if not with_topics:
        return dict.fromkeys(draws.values_list("generation_id", flat=True))
    return dict(draws.values_list("generation_id", "generation__procedure__topic_id"))


def _first_draws(study: Study) -> QuerySet[CalibrationDraw, CalibrationDraw]:
    """Round 1's draws, by its id: the unique (round, generation) index then gives them in generation order
    (through the join, PostgreSQL walked every draw of every study in that order)."""
    first = CalibrationRound.objects.filter(study=study, number=1).values_list("pk", flat=True).first()
    return CalibrationDraw.objects.filter(round_id=first)


def study_frame_ids(study: Study) -> QuerySet[Any, Any]:
    """The frame's generation ids as a query (a subquery where a list would be sent back whole)."""
    return _first_draws(study).values("generation_id")


def study_frame_size(study: Study) -> int:
    return _first_draws(study).count()


def judge_verdicts(
    generation_ids: Collection[int] | QuerySet[Any, Any], judge_ids: Collection[int]
) -> dict[int, list[bool]]:
    """Per generation: every "has failure" verdict of these judges on it (parsed), and the previous verdict
    where a judgment was re-run. `generation_ids`: a collection, or a query of them (a study's frame)."""
    verdicts: dict[int, list[bool]] = defaultdict(list)
    ids = generation_ids if isinstance(generation_ids, QuerySet) else list(generation_ids)
    rows = Judgment.objects.filter(
        judge_id__in=list(judge_ids), generation_id__in=ids, parse_failed=False
    ).values_list("generation_id", "has_failure", "previous_has_failure")
    for generation_id, has_failure, previous in rows:
        verdicts[generation_id].append(has_failure)
        if previous is not None:
            verdicts[generation_id].append(previous)
    return verdicts


def round_probabilities(
    design: str,
    frame: Mapping[int, Hashable],
    n: int,
    judge_ids: Collection[int] = (),
    *,
    frame_ids: QuerySet[Any, Any] | None = None,
) -> dict[int, float]:
    """Every frame generation's inclusion probability in one round of `design` with size n (`frame_ids`: the
    frame as a query, which the judges' verdicts are read with when given)."""
    if design == CalibrationDesign.UNIFORM:
        return sampling.uniform_probabilities(list(frame), n)
    if design == CalibrationDesign.STRATIFIED:
        return sampling.stratified_probabilities(frame, n)
    if design == CalibrationDesign.DISAGREEMENT:
        verdicts = judge_verdicts(frame if frame_ids is None else frame_ids, judge_ids)
        uncertainty = {g: sampling.judge_uncertainty(verdicts.get(g, [])) for g in frame}
        return sampling.disagreement_probabilities(uncertainty, n)
    raise ValueError(f"design: {design!r} is not one of {', '.join(CalibrationDesign.values)}")


# --- drawing a round -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedRound:
    """A round computed and not yet stored: every frame example's probability and the examples drawn."""

    design: str
    judges: list[int]
    seed: int
    probabilities: dict[int, float]
    drawn: list[int]


def plan_round(
    design: str,
    size: int,
    judge_ids: Sequence[int],
    seed: int,
    *,
    frame: Mapping[int, Hashable],
    frame_ids: QuerySet[Any, Any] | None = None,
) -> PlannedRound:
    """A round's probabilities over `frame` and its draw (nothing stored)."""
    judges = sorted(set(judge_ids)) if design == CalibrationDesign.DISAGREEMENT else []
    probabilities = round_probabilities(design, frame, size, judges, frame_ids=frame_ids)
    return PlannedRound(design, judges, seed, probabilities, sampling.systematic_pps(probabilities, seed))


def store_round(
    study: Study, planned: PlannedRound, *, on_progress: Progress | None = None
) -> CalibrationRound:
    """The study's next round as planned: one CalibrationDraw per frame generation (in batches) and an item
    for each generation drawn that the study has no item of yet (on_progress(1) after each). The caller
    holds the study's lock (next_round) or has just created it (the builder)."""
    last = study.calibration_rounds.aggregate(last=Max("number"))["last"] or 0
    calibration_round = CalibrationRound.objects.create(
        study=study, number=last + 1, design=planned.design, size=len(planned.drawn), seed=planned.seed,
        judge_ids=planned.judges,
    )  # fmt: skip
    _draws_store(calibration_round, planned.probabilities, set(planned.drawn))
    _step(on_progress)
    calibration_round.new_items = items_add(study, planned.drawn)
    calibration_round.save(update_fields=["new_items"])
    _step(on_progress)
    return calibration_round


def _step(on_progress: Progress | None) -> None:
    if on_progress is not None:
        on_progress(1)


def draw_round(
    study: Study,
    design: str,
    size: int,
    judge_ids: Sequence[int],
    seed: int,
    *,
    frame: Mapping[int, Hashable],
) -> CalibrationRound:
    """The study's next round over `frame`, planned and stored (store_round: the caller holds the study's
    lock or has just created it)."""
    return store_round(study, plan_round(design, size, judge_ids, seed, frame=frame))


def _draws_store(
    calibration_round: CalibrationRound, probabilities: Mapping[int, float], drawn: set[int]
) -> None:
    """One CalibrationDraw per frame example: on PostgreSQL one INSERT from arrays (140,000 rows in well
    under a second, where batches of model rows took ~5 s), elsewhere in batches of BATCH."""
    if connection.vendor == "postgresql":
        ids = list(probabilities)
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {CalibrationDraw._meta.db_table} (round_id, generation_id, probability, drawn) "
                "SELECT %s, g, p, d FROM unnest(%s::bigint[], %s::float8[], %s::boolean[]) AS t(g, p, d)",
                [
                    calibration_round.pk,
                    ids,
                    [min(1.0, probabilities[g]) for g in ids],
                    [g in drawn for g in ids],
                ],
            )
        return
    rows = [
        CalibrationDraw(round=calibration_round, generation_id=g, probability=min(1.0, p), drawn=g in drawn)
        for g, p in probabilities.items()
    ]
    for start in range(0, len(rows), BATCH):
        CalibrationDraw.objects.bulk_create(rows[start : start + BATCH])


def items_add(study: Study, generation_ids: Sequence[int]) -> int:
    """Items (k annotations each) for the generations the study has no regular item of, after its last
    position; returns how many."""
    have = set(
        study.items.filter(is_attention_check=False, generation__isnull=False).values_list(
            "generation_id", flat=True
        )
    )
    new = [g for g in generation_ids if g not in have]
    last = study.items.aggregate(last=Max("position"))["last"] or 0
    StudyItem.objects.bulk_create(
        StudyItem(
            study=study,
            generation_id=g,
            subject_key=subject_key("generation", g),
            position=last + i,
            target_annotations=study.annotators_per_item,
        )
        for i, g in enumerate(new, 1)
    )
    return len(new)


def first_round(study: Study, selection: Selection) -> list[int]:
    """Round 1 of a calibration study being built: the generations drawn (its items are created)."""
    assert selection.sample_size is not None  # check_selection refused a design without it
    frame = frame_of(selection)
    if not frame:
        return []
    calibration_round = draw_round(
        study,
        selection.calibration_design,
        selection.sample_size,
        selection.calibration_judge_ids,
        selection.seed,
        frame=frame,
    )
    drawn = calibration_round.draws.filter(drawn=True).order_by("generation_id")
    return list(drawn.values_list("generation_id", flat=True))


# --- later rounds ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundRequest:
    """A next round as asked for: None where the study's defaults apply (its judges; disagreement when it
    has judges, else uniform; a random seed, stored)."""

    size: int
    design: str | None = None
    judge_ids: list[int] | None = None
    seed: int | None = None


def study_judges(study: Study) -> list[int]:
    """The judges of the study's calibration sample: those of its last round that had judges, else the
    builder's."""
    for judges in study.calibration_rounds.order_by("-number").values_list("judge_ids", flat=True):
        if judges:
            return [int(j) for j in judges]
    return [int(j) for j in (study.selection or {}).get("calibration_judge_ids", [])]


def not_calibration_study(study: Study) -> str:
    """Why a study takes no calibration round ("" when it does)."""
    if study.kind != KIND:
        return (
            f"{study.slug} is not a critical-failures study: calibration samples are drawn from generations"
        )
    if not study.calibration_rounds.exists():
        return f"{study.slug} was not built with a calibration sample: it has no frame to draw a round from"
    return ""


@dataclass(frozen=True)
class ResolvedRound:
    """A next round as it will be drawn: the study's defaults filled in, checked."""

    size: int
    design: str
    judge_ids: list[int]
    seed: int


def resolve_round(*, study: Study, request: RoundRequest) -> ResolvedRound:
    """The round `request` asks of the study with its defaults filled in (RoundRequest), or ValidationError
    naming the field ("study", "size", "design", "judge_ids", "seed")."""
    problem = not_calibration_study(study)
    if problem:
        raise ValidationError({"study": problem})
    judges = study_judges(study) if request.judge_ids is None else list(request.judge_ids)
    design = request.design or (CalibrationDesign.DISAGREEMENT if judges else CalibrationDesign.UNIFORM)
    seed = secrets.randbelow(int(SEED.high) + 1) if request.seed is None else request.seed
    _check_round(request.size, design, judges, seed, study_frame_ids(study))
    return ResolvedRound(request.size, design, judges, seed)


def next_round(
    *,
    study: Study,
    request: RoundRequest | ResolvedRound,
    on_progress: Progress | None = None,
    on_stored: Callable[[CalibrationRound], None] | None = None,
) -> CalibrationRound:
    """Draw the study's next round over its frame (ROUND_STEPS steps, on_progress(1) after each): the frame
    is read and the probabilities computed first (round 1's draws never change; the judges' verdicts are
    read as they are), then the round is stored under a lock on the study (two rounds at once get distinct
    numbers), and `on_stored(round)` runs in that transaction (a job records its round there).
    ValidationError naming the field ("study", "size", "design", "judge_ids", "seed")."""
    resolved = request if isinstance(request, ResolvedRound) else resolve_round(study=study, request=request)
    frame = study_frame(study, with_topics=resolved.design == CalibrationDesign.STRATIFIED)
    _step(on_progress)
    planned = plan_round(resolved.design, resolved.size, resolved.judge_ids, resolved.seed, frame=frame,
                         frame_ids=study_frame_ids(study))  # fmt: skip
    _step(on_progress)
    with transaction.atomic():
        locked = Study.objects.select_for_update().get(pk=study.pk)
        stored = store_round(locked, planned, on_progress=on_progress)
        if on_stored is not None:
            on_stored(stored)
    return stored


def round_in_job(study: Study) -> bool:
    """Whether the study's next round is drawn by a job: its frame is larger than ROUND_JOB_FRAME."""
    return study_frame_size(study) > ROUND_JOB_FRAME


def _check_round(
    size: int, design: str, judges: Sequence[int], seed: int, frame: Collection[int] | QuerySet[Any, Any]
) -> None:
    errors: dict[str, str] = {}
    for name, bounds, value in (("size", SAMPLE_SIZE, size), ("seed", SEED, seed)):
        try:
            bounds.check(name, value)
        except OutOfRange as bad:
            errors[bad.field] = bad.message
    if design not in CalibrationDesign.values:
        errors["design"] = f"{design!r} is not one of {', '.join(CalibrationDesign.values)}"
    elif design == CalibrationDesign.DISAGREEMENT:
        problem = judges_problem(judges, frame)
        if problem:
            errors["judge_ids"] = problem
    if errors:
        raise ValidationError(errors)


# --- what the study page shows ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundRow:
    number: int
    design: str
    size: int
    new_items: int
    judges: list[str]
    seed: int
    created_at: datetime


@dataclass(frozen=True)
class CalibrationSummary:
    """A calibration study's sample: its rounds, and every frame example's inclusion probability after them
    (pi_i = 1 - prod_r (1 - pi_ir)): their range and sum (the expected number of examples drawn)."""

    design: str
    frame_size: int
    rounds: list[RoundRow]
    pi_min: float
    pi_max: float
    expected_drawn: float
    n_drawn: int
    judges: list[str]


def calibration_summary(study: Study) -> CalibrationSummary | None:
    """The study's calibration sample, or None when it has none."""
    rounds = list(study.calibration_rounds.order_by("number"))
    if not rounds:
        return None
    # The draws of every round (140,000 a round at the benchmark's size) are read once per set of rounds:
    # they are written with their round and never change.
    version = ":".join(str(r.pk) for r in rounds)
    inclusion = cached(f"calibration-inclusion:{study.pk}", lambda: _inclusion(study), version=version)
    names = dict(Judge.objects.values_list("pk", "judge_id"))
    return CalibrationSummary(
        design=rounds[0].get_design_display(),
        frame_size=inclusion.frame_size,
        rounds=[
            RoundRow(
                r.number,
                r.design,
                r.size,
                r.new_items,
                [names.get(int(j), f"#{j}") for j in r.judge_ids],
                r.seed,
                r.created_at,
            )
            for r in rounds
        ],
        pi_min=inclusion.pi_min,
        pi_max=inclusion.pi_max,
        expected_drawn=inclusion.expected_drawn,
        n_drawn=inclusion.n_drawn,
        judges=[names.get(j, f"#{j}") for j in study_judges(study)],
    )


@dataclass(frozen=True)
class _Inclusion:
    frame_size: int
    pi_min: float
    pi_max: float
    expected_drawn: float
    n_drawn: int


def _inclusion(study: Study) -> _Inclusion:
    """Every frame example's inclusion probability after the study's rounds: their range and sum."""
    per_generation: dict[int, list[float]] = defaultdict(list)
    drawn: set[int] = set()
    rows = CalibrationDraw.objects.filter(round__study=study).values_list(
        "generation_id", "probability", "drawn"
    )
    for generation_id, probability, was_drawn in rows:
        per_generation[generation_id].append(probability)
        if was_drawn:
            drawn.add(generation_id)
    inclusion = [sampling.inclusion_after_rounds(p) for p in per_generation.values()] or [0.0]
    return _Inclusion(len(per_generation), min(inclusion), max(inclusion), sum(inclusion), len(drawn))


__all__ = [
    "ROUND_JOB_FRAME",
    "ROUND_STEPS",
    "CalibrationSummary",
    "PlannedRound",
    "ResolvedRound",
    "RoundRequest",
    "calibration_summary",
    "check_selection",
    "draw_round",
    "first_round",
    "frame_of",
    "items_add",
    "judge_verdicts",
    "judges_problem",
    "next_round",
    "not_calibration_study",
    "plan_round",
    "resolve_round",
    "round_in_job",
    "round_probabilities",
    "store_round",
    "study_frame",
    "study_frame_ids",
    "study_frame_size",
    "study_judges",
]
