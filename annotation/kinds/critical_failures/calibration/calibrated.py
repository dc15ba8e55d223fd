"""The human-calibrated How2Score of each generator x judge (issue #20): the judge's verdicts on a generator's
examples joined with the human majority on the calibration sample of them (h2e_site/stats/calibration.py has
the estimator, h2e_site/stats/sampling.py the designs).

Rules (docs/guides/researcher/calibration.md, "Calibrated leaderboard", repeats them):
- **Which human labels.** Only a critical-failures study built with a *calibration sample* (its rounds store
  every frame example's inclusion probability) is used. Any other study is listed with the reason it is not
  (its selection keeps only where judges disagree, or a topic filter, or no probabilities recorded). Where
  several calibration studies sampled a generator, the one with the most labelled items of it is used (the
  newest on a tie; two independent samples are not pooled); a calibration study used for no generator is
  listed too, with that reason.
- **Population.** The generator's examples in the study's frame: its generations with L2 steps when the study
  was built. N is their number; the judge's labels are read on those.
- **An item counts** once all k of its annotations are in (attention checks never count). Its human label Y
  is the majority: 1 = no critical failure, 0 = a critical failure, 0.5 for a tie (an even split counts half:
  dropping ties would bias the sample towards clear-cut items). Items still collecting are "pending".
- **Gold replaces the majority.** Where a counted item has adjudicated gold as of now
(annotation/kinds/critical_failures/gold_events.py,
  critical_failures/gold.py), Y is the gold (0 = a critical failure, 1 = none), also where the majority ties;
  these are counted as `n_gold`. An item still collecting stays pending even with gold: which items count
  must not depend on their outcome (a reviewer adjudicates the doubtful ones first), or the design-based
  sample would no longer be one.
- **The judge's label** f is 1 (no critical failure) or 0; where the judge has no verdict (a parse failure, or
  no judgment) f is the judge's own score on the generator's parsed examples in the frame, which carries no
  information (PPI stays unbiased for any prediction); these are counted as `n_imputed`. The same value is
  used in every topic. Without any verdict on the frame the line is undefined, with that reason.
- **Weights.** pi_i = 1 - prod_r (1 - pi_ir) over the study's rounds; with every pi equal (a uniform sample)
  no weights are used and the human-only score gets its Wilson interval.
- **Per topic** where the topic has at least MIN_TOPIC_LABELS counted items; the topic-stratified overall
  estimate uses those topics as strata and pools the other topics into one stratum, "other topics". A
  stratum needs MIN_HUMAN_LABELS (2) counted items for an estimate, so where the pool has fewer it is merged
  into the largest topic stratum (the most examples; the first by name on a tie), named "<topic> + other
  topics" (topic_strata). Every topic stratum has MIN_TOPIC_LABELS >= 2, so one merge leaves every stratum
  with at least 2; with no topic stratum the pool is every example, the unstratified sample.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from django.db.models import F

from annotation.base.models import Annotation, Study, StudyItem
from annotation.kinds.critical_failures.gold import gold_by_generation
from annotation.kinds.critical_failures.models import CalibrationDraw
from annotation.kinds.critical_failures.name import KIND
from h2e_site.stats.calibration import (
    MIN_HUMAN_LABELS,
    CalibratedScore,
    StratifiedScore,
    StratumLabels,
    calibrated_score,
    design_stratified_score,
    probability_levels,
    stratified_score,
)
from h2e_site.stats.calibration_bias import MeanDifference
from h2e_site.stats.sampling import inclusion_after_rounds
from h2e_site.stats.verdicts import majority
from judging.models import Generator, Judge, Judgment
from judging.selectors import How2Score, how2score_leaderboard

MIN_TOPIC_LABELS = 10
OTHER_TOPICS = "other topics"
NO_TOPIC = "(no topic)"


@dataclass(frozen=True)
class UnusedStudy:
    """A critical-failures study the calibrated scores do not use, and why."""

    slug: str
    title: str
    reason: str


@dataclass(frozen=True)
class Example:
    """One frame example of a generator: its topic, inclusion probability, judge label, human label."""

    generation_id: int
    topic: str
    probability: float
    judge: float | None = None  # the judge's label (imputed where it has no verdict); None before the join
    human: float | None = None  # None: not drawn, or pending
    imputed: bool = False  # the judge has no verdict here (a parse failure or no judgment)
    gold: bool = False  # the human label is the item's adjudicated gold, not the majority


@dataclass(frozen=True)
class TopicScore:
    topic: str
    score: CalibratedScore | None
    n_labelled: int
    n_examples: int
    reason: str = ""  # why the topic has no estimate of its own (the per-topic rule)


@dataclass(frozen=True)
class CalibratedLine:
    """A generator x judge: its calibrated How2Score beside the judge-only one."""

    generator_id: str
    generator_pk: int
    generator_model: str
    judge_id: str
    judge_model: str
    study_slug: str
    overall: CalibratedScore
    stratified: StratifiedScore | None
    topics: list[TopicScore]
    judge_only: float | None
    judge_low: float | None
    judge_high: float | None
    judge_n: int
    n_pending: int = 0
    n_ties: int = 0
    n_imputed: int = 0
    n_gold: int = 0
    reason: str = ""
    study_title: str = ""
    examples: list[Example] = field(default_factory=list, repr=False, compare=False)

    def as_json(self) -> dict[str, Any]:
        return {
            "generator_id": self.generator_id,
            "generator_model": self.generator_model,
            "judge_id": self.judge_id,
            "judge_model": self.judge_model,
            "study": self.study_slug or None,
            "calibrated": score_json(self.overall),
            "stratified": stratified_json(self.stratified) if self.stratified else None,
            "topics": [
                {
                    "topic": t.topic,
                    "n_labelled": t.n_labelled,
                    "n_examples": t.n_examples,
                    "score": score_json(t.score) if t.score else None,
                    "undefined": t.reason or (t.score.undefined if t.score else ""),
                }
                for t in self.topics
            ],
            "judge_only": {
                "score": self.judge_only,
                "ci_low": self.judge_low,
                "ci_high": self.judge_high,
                "n": self.judge_n,
            },
            "n_pending": self.n_pending,
            "n_ties": self.n_ties,
            "n_imputed": self.n_imputed,
            "n_gold": self.n_gold,
            "reason": self.reason,
        }


def interval_json(figure: CalibratedScore | StratifiedScore | MeanDifference) -> dict[str, Any]:
    """What every estimate with a normal interval carries in the API: estimate, bounds, standard error, n."""
    return {
        "estimate": figure.estimate,
        "ci_low": figure.ci_low,
        "ci_high": figure.ci_high,
        "std_error": figure.std_error,
        "n": figure.n,
    }


def score_json(score: CalibratedScore) -> dict[str, Any]:
    return {
        **interval_json(score),
        "N": score.N,
        "lam": score.lam,
        "effective_n": score.effective_n,
        "human_only": score.human_only,
        "human_ci_low": score.human_low,
        "human_ci_high": score.human_high,
        "weighted": score.weighted,
        "design_strata": score.design_strata,
        "undefined": score.undefined,
    }


def stratified_json(score: StratifiedScore) -> dict[str, Any]:
    return {
        **interval_json(score),
        "N": score.N,
        "effective_n": score.effective_n,
        "strata": sorted(score.strata),
        "undefined": score.undefined,
    }


# --- which studies ---------------------------------------------------------------------------------------


def calibration_studies() -> list[Study]:
    """Critical-failures studies with a calibration sample (at least one round), newest first."""
    return list(
        Study.objects.filter(kind=KIND, calibration_rounds__isnull=False)
        .distinct()
        .order_by("-created_at", "-pk")
    )


def unused_studies(samples: Mapping[int, Sample] | None = None) -> list[UnusedStudy]:
    """The critical-failures studies the calibrated scores do not use, each with why: those without a
    calibration sample, and calibration studies that another calibration study outnumbers on every
    generator they sampled (`samples`: generator_samples(), computed when not given)."""
    studies = Study.objects.filter(kind=KIND, calibration_rounds__isnull=True)
    unused = [
        UnusedStudy(s.slug, s.title, not_calibration_reason(s)) for s in studies.order_by("-created_at")
    ]
    samples = generator_samples() if samples is None else samples
    used = {sample.study.pk for sample in samples.values()}
    for study in calibration_studies():
        if study.pk not in used:
            unused.append(UnusedStudy(study.slug, study.title, OUTNUMBERED))
    return unused


OUTNUMBERED = (
    "another calibration study has more labelled items of each generator it sampled: one sample per "
    "generator is used (two independent samples are not pooled)"
)


def not_calibration_reason(study: Study) -> str:
    selection = study.selection or {}
    if selection.get("disagreeing_judge_ids"):
        judges = ", ".join(map(str, selection["disagreeing_judge_ids"]))
        return (
            f"its selection keeps only the examples where judges {judges} disagree: an example's chance of "
            "being labelled is unknown, so its labels are not a probability sample"
        )
    if selection.get("topic_ids"):
        return (
            "its selection is limited to some topics: the other topics' examples could not be drawn, so its "
            "labels are not a probability sample of the generators' examples"
        )
    return (
        "it was built without a calibration sample, so the inclusion probabilities of its items were not "
        "recorded; build a study with a calibration sample to calibrate"
    )


# --- the join --------------------------------------------------------------------------------------------


def calibrated_lines(
    *, judge_ids: Iterable[str] | None = None, samples: Mapping[int, Sample] | None = None
) -> list[CalibratedLine]:
    """One line per generator x judge the judge-only leaderboard has, best calibrated score first within
    each judge (undefined ones last); a generator judged but never sampled gets a line with its reason.
    `samples`: generator_samples(), computed when not given."""

    rows = how2score_leaderboard(judge_ids=None if judge_ids is None else list(judge_ids))
    judges = {j.judge_id: j for j in Judge.objects.filter(judge_id__in={r.judge_id for r in rows})}
    generators = {
        g.generator_id: g for g in Generator.objects.filter(generator_id__in={r.generator_id for r in rows})
    }
    samples = generator_samples() if samples is None else samples
    lines = []
    for row in rows:
        generator = generators[row.generator_id]
        lines.append(_line(judges[row.judge_id], generator, row.score, samples.get(generator.pk)))
    return sorted(lines, key=_line_order)


def _line_order(line: CalibratedLine) -> tuple[Any, ...]:
    estimate = line.overall.estimate
    return (line.judge_model, line.judge_id, estimate is None, -(estimate or 0.0), line.generator_model)


@dataclass(frozen=True)
class Sample:
    """A generator's calibration sample in one study: its frame examples with their probabilities and
    human labels."""

    study: Study
    examples: list[Example]
    n_pending: int

    @property
    def n_labelled(self) -> int:
        return sum(e.human is not None for e in self.examples)


def generator_samples() -> dict[int, Sample]:
    """Per generator pk: the calibration study with the most counted items of it (the newest on a tie)."""
    best: dict[int, Sample] = {}
    for study in calibration_studies():  # newest first: a later study replaces it only with more labels
        for generator_pk, sample in _study_samples(study).items():
            if generator_pk not in best or sample.n_labelled > best[generator_pk].n_labelled:
                best[generator_pk] = sample
    return best


def judges_with_labelled_samples(samples: Mapping[int, Sample]) -> set[int]:
    """Pks of the judges that judged a generator whose calibration sample (`samples`: generator_samples())
    has a human label: those whose calibrated score can be defined."""
    labelled = [generator_pk for generator_pk, sample in samples.items() if sample.n_labelled]
    if not labelled:
        return set()
    judged = Judgment.objects.filter(generator_id__in=labelled).order_by().values_list("judge_id", flat=True)
    return set(judged.distinct())


def _study_samples(study: Study) -> dict[int, Sample]:
    probabilities: dict[int, list[float]] = defaultdict(list)
    frame: dict[int, tuple[int, str | None]] = {}
    # One join (a frame of 140,000 generations is not sent back as a list of ids).
    draws = CalibrationDraw.objects.filter(round__study=study).values_list(
        "generation_id", "probability", "generation__generator_id", "generation__procedure__topic__name"
    )
    for generation_id, p, generator, topic_name in draws:
        probabilities[generation_id].append(p)
        frame[generation_id] = (generator, topic_name)
    humans, pending, gold = _human_majorities(study)
    by_generator: dict[int, list[Example]] = defaultdict(list)
    pending_by_generator: dict[int, int] = defaultdict(int)
    for generation_id in sorted(frame):
        generator_pk, topic = frame[generation_id]
        by_generator[generator_pk].append(
            Example(
                generation_id,
                topic or NO_TOPIC,
                inclusion_after_rounds(probabilities[generation_id]),
                human=humans.get(generation_id),
                gold=generation_id in gold,
            )
        )
        pending_by_generator[generator_pk] += generation_id in pending
    return {g: Sample(study, examples, pending_by_generator[g]) for g, examples in by_generator.items()}


def _human_majorities(study: Study) -> tuple[dict[int, float], set[int], set[int]]:
    """The human label per generation of the study's complete items (module docstring: the majority, or the
    gold where there is one), the generations whose items are still collecting, and those whose label is the
    gold."""
    items = StudyItem.objects.filter(study=study).not_attention_checks()
    complete = items.filter(completed_count__gte=F("target_annotations"))
    pending = set(items.exclude(pk__in=complete.values("pk")).values_list("generation_id", flat=True))
    verdicts: dict[int, list[bool]] = defaultdict(list)
    for generation_id, has_failure in Annotation.objects.filter(item__in=complete).values_list(
        "item__generation_id", "has_failure"
    ):
        if has_failure is not None:
            verdicts[generation_id].append(has_failure)
    labels = {}
    for generation_id, values in verdicts.items():
        verdict = majority(values)
        labels[generation_id] = 0.5 if verdict is None else (0.0 if verdict else 1.0)
    gold = _gold_labels(study, set(complete.values_list("generation_id", flat=True)))
    return {**labels, **gold}, pending, set(gold)


def _gold_labels(study: Study, complete: set[int]) -> dict[int, float]:
    """The gold label (0 = a critical failure, 1 = none) of the complete items that have gold."""
    return {
        generation_id: 0.0 if has_failure else 1.0
        for generation_id, has_failure in gold_by_generation(study).items()
        if generation_id in complete
    }


def _judge_labels(
    judge: Judge, generation_ids: list[int], generator_pk: int | None = None
) -> dict[int, float]:
    """1 = no critical failure, 0 = a critical failure; parse failures left out (imputed by the caller).
    With `generator_pk` (the generator of every one of them), the judge's verdicts on that generator are
    read and those of these generations kept: a frame of 7,000 ids sent as a list took ~0.5 s a line."""
    rows = Judgment.objects.filter(judge=judge, parse_failed=False)
    if generator_pk is None:
        rows = rows.filter(generation_id__in=generation_ids)
    else:
        rows = rows.filter(generator_id=generator_pk)
    wanted = set(generation_ids)
    return {
        g: 0.0 if has_failure else 1.0
        for g, has_failure in rows.values_list("generation_id", "has_failure")
        if g in wanted
    }


def _line(judge: Judge, generator: Generator, score: How2Score, sample: Sample | None) -> CalibratedLine:
    interval = score.interval_percent
    head: dict[str, Any] = {
        "generator_id": generator.generator_id,
        "generator_pk": generator.pk,
        "generator_model": generator.model,
        "judge_id": judge.judge_id,
        "judge_model": judge.model,
        "judge_only": score.how2score if score.n_examples else None,
        "judge_low": interval[0] / 100 if interval else None,
        "judge_high": interval[1] / 100 if interval else None,
        "judge_n": score.n_examples,
    }
    if sample is None:
        reason = "no calibration sample has drawn this generator's examples"
        return CalibratedLine(**head, study_slug="", overall=_empty(0, 0, reason), stratified=None, topics=[],
                              reason=reason)  # fmt: skip
    examples = with_judge_labels(judge, sample.examples, generator_pk=generator.pk)
    common: dict[str, Any] = {
        **head,
        "study_slug": sample.study.slug,
        "study_title": sample.study.title,
        "n_pending": sample.n_pending,
        "n_ties": sum(e.human == 0.5 for e in examples),
        "n_imputed": sum(e.imputed for e in examples),
        "n_gold": sum(e.gold for e in examples),
        "examples": examples,
    }
    if not any(e.judge is not None for e in examples):
        reason = "undefined: the judge has no verdict on this generator's examples in the calibration sample"
        n = sum(e.human is not None for e in examples)
        overall = _empty(n, len(examples), reason)
        return CalibratedLine(**common, overall=overall, stratified=None, topics=[], reason=reason)
    return CalibratedLine(
        **common,
        overall=score_of(examples),
        stratified=stratified_of(examples),
        topics=topic_scores(examples),
    )


def with_judge_labels(
    judge: Judge, examples: list[Example], *, generator_pk: int | None = None
) -> list[Example]:
    """The examples with the judge's label, a missing verdict imputed with the judge's score on the parsed
    examples of the frame (judge None when it has none at all); `generator_pk`: their generator."""
    labels = _judge_labels(judge, [e.generation_id for e in examples], generator_pk)
    fill = sum(labels.values()) / len(labels) if labels else None
    return [
        Example(
            e.generation_id,
            e.topic,
            e.probability,
            labels.get(e.generation_id, fill),
            e.human,
            imputed=e.generation_id not in labels,
            gold=e.gold,
        )
        for e in examples
    ]


def _empty(n: int, big_n: int, reason: str) -> CalibratedScore:
    return CalibratedScore(None, None, None, None, n, big_n, None, None, None, None, None, undefined=reason)


def stratum_labels(examples: list[Example]) -> StratumLabels:
    """The estimator's inputs from examples with judge labels (weights only where the probabilities
    differ)."""
    judge = [e.judge if e.judge is not None else 0.5 for e in examples]
    labelled = [(e, j) for e, j in zip(examples, judge, strict=True) if e.human is not None]
    probabilities = [e.probability for e, _ in labelled]
    equal = len(probability_levels(probabilities)) <= 1
    return StratumLabels(
        human=[e.human for e, _ in labelled if e.human is not None],
        judge_labelled=[j for _, j in labelled],
        judge_all=judge,
        inclusion_probabilities=None if equal else probabilities,
    )


def score_of(examples: list[Example]) -> CalibratedScore:
    """The PPI++ score of these examples: over their design strata when their inclusion probabilities take a
    few values each with enough labels (h2e_site.stats.calibration.design_stratified_score's rule), else
    weighted by 1 / pi (unweighted when every pi is equal)."""
    s = stratum_labels(examples)
    if s.inclusion_probabilities is not None:
        stratified = design_stratified_score(_design_strata(examples))
        if stratified is not None:
            return stratified
    return calibrated_score(
        s.human, s.judge_labelled, s.judge_all, inclusion_probabilities=s.inclusion_probabilities
    )


def _design_strata(examples: list[Example]) -> list[tuple[StratumLabels, int]]:
    result = []
    for positions in probability_levels([e.probability for e in examples]).values():
        labels = stratum_labels([examples[i] for i in positions])
        result.append((replace(labels, inclusion_probabilities=None), len(positions)))
    return result


def _by_topic(examples: list[Example]) -> dict[str, list[Example]]:
    topics: dict[str, list[Example]] = defaultdict(list)
    for e in examples:
        topics[e.topic].append(e)
    return dict(sorted(topics.items()))


def topic_reason(n: int) -> str:
    """Why a topic with n counted items has no estimate of its own (the per-topic rule)."""
    return f"{n} human label(s) in this topic; a topic's own estimate needs {MIN_TOPIC_LABELS}"


def topic_scores(examples: list[Example]) -> list[TopicScore]:
    result = []
    for topic, members in _by_topic(examples).items():
        n = sum(e.human is not None for e in members)
        if n < MIN_TOPIC_LABELS:
            result.append(TopicScore(topic, None, n, len(members), topic_reason(n)))
        else:
            result.append(TopicScore(topic, score_of(members), n, len(members)))
    return result


def topic_strata(examples: list[Example]) -> dict[str, list[Example]]:
    """The strata of the topic-stratified estimate (module docstring): topics with MIN_TOPIC_LABELS counted
    items, the others pooled into OTHER_TOPICS, and that pool merged into the largest topic stratum when it
    has fewer than MIN_HUMAN_LABELS counted items."""
    strata: dict[str, list[Example]] = defaultdict(list)
    for topic, members in _by_topic(examples).items():
        enough = _counted(members) >= MIN_TOPIC_LABELS
        strata[topic if enough else OTHER_TOPICS].extend(members)
    pool = strata.get(OTHER_TOPICS)
    topics = [name for name in strata if name != OTHER_TOPICS]
    if pool is None or not topics or _counted(pool) >= MIN_HUMAN_LABELS:
        return dict(strata)
    largest = min(topics, key=lambda name: (-len(strata[name]), name))
    merged = {name: members for name, members in strata.items() if name not in {largest, OTHER_TOPICS}}
    merged[f"{largest} + {OTHER_TOPICS}"] = [*strata[largest], *pool]
    return merged


def _counted(examples: list[Example]) -> int:
    return sum(e.human is not None for e in examples)


def stratified_of(examples: list[Example]) -> StratifiedScore:
    """The topic-stratified estimate over topic_strata (module docstring)."""
    return stratified_score({name: stratum_labels(m) for name, m in topic_strata(examples).items()})
