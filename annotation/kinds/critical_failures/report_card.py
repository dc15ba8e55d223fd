"""A judge's report card (issue #12 item 3): everything that says how far to trust its verdicts.

The judge-only figures (instrument failures, length bias, agreement with the other judges, cost, flips) come
from judge_figures.py beside it. This adds, for every study whose generations the judge judged, its agreement
with the human majority on those items (definitions below), which needs the human labels: so it lives in the
top layer.

Per study, on the items with a human majority (ties left out, as on the agreement pages) and a judge verdict
(parse failures left out):
- agreement overall and per class of the human majority (has a failure / has none), each k of n with a 95 %
  Wilson interval; Cohen's kappa and Gwet's AC1 of the judge x majority table (h2e_site/stats/agreement.py;
  undefined by h2e_site.stats' one rule, with the reason);
- the human ceiling on the same items (the items the humans tie on are left out of it as they are of the
  judge's agreement, and counted on the card): each annotator's leave-one-out agreement with the others'
  majority (h2e_site/stats/verdicts.py), as the band from the lowest to the highest annotator and pooled;
- trivial baselines on the same items: always "has failure", never "has failure", and a length-only rule:
  "has failure" when the generation is shorter than its reference by more than a share s of tokens, s fitted
  on these very items to agree best with the majority (so an optimistic baseline; items without token
  counts are left out of it).

**Agreement with adjudicated gold (#23)**, per study, on the items with gold as of now
(annotation/kinds/critical_failures/gold_events.py;
regular items, a cleared gold being none) and a judge verdict (parse failures left out), each k of n with its
95 % Wilson interval:
- agreement with gold: the items where the judge's has_failure equals the gold's;
- agreement with the human majority on the same items, those the humans tie on or have not labelled yet left
  out (and counted);
- the human majority's agreement with gold on those same items (ties and unlabelled left out, counted).
The human majority is the one above (every annotation of the item). A study with no gold item, or none with
a verdict of the judge, says so instead; a study without human labels (or none the judge judged) still shows
its gold agreement beside the reason it has no majority figures.

**Bias against people (#20)**, on the calibration samples
(annotation/kinds/critical_failures/calibration/calibrated.py: per generator the sample
the calibrated leaderboard uses) of every generator the judge judged: the labelled items (complete, human
majority Y with 0.5 for a tie) on which the judge has a verdict f (parse failures and unjudged items left
out: an imputed label would say nothing about the judge), pooled over the generators with weights 1 / pi.
h2e_site.stats.calibration_bias.judge_bias gives the bias (the Hajek mean of f - Y, its normal interval),
missed failures and false alarms with their intervals and contributions; per topic the bias where the topic
has at least MIN_TOPIC_LABELS such items, else the rule's reason.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.base.models import Study
from annotation.base.selectors import study_unlabelled_reason
from annotation.kinds.critical_failures import judge_figures
from annotation.kinds.critical_failures.agreement_data import study_labels
from annotation.kinds.critical_failures.calibration.calibrated import (
    MIN_TOPIC_LABELS,
    Example,
    generator_samples,
    interval_json,
    topic_reason,
    with_judge_labels,
)
from annotation.kinds.critical_failures.gold import gold_by_generation
from annotation.kinds.critical_failures.label_versions import calibration_version
from annotation.kinds.critical_failures.name import KIND
from h2e_site.stats import Share
from h2e_site.stats.calibration_bias import (
    ClassShare,
    JudgeBias,
    MeanDifference,
    judge_bias,
    weighted_mean_difference,
)
from h2e_site.stats.verdicts import (
    JudgeAgreement,
    Label,
    by_unit,
    human_ceiling,
    judge_agreement,
    majority,
    pooled,
)
from judging import versions
from judging.models import Generation, Judge, Judgment
from judging.probes.results import ProbeResults, judge_probes


@dataclass(frozen=True)
class Baseline:
    name: str
    agreement: Share
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "agreement": self.agreement.as_json(), "note": self.note}


NO_ITEM = Share(0, 0)  # a share over no item: rate and interval None


@dataclass(frozen=True)
class GoldComparison:
    """The judge, and the human majority, against one study's adjudicated gold (module docstring)."""

    agreement: Share = NO_ITEM  # judge x gold, on the gold items with a judge verdict
    majority_agreement: Share = NO_ITEM  # judge x human majority, on those with a majority
    crowd_agreement: Share = NO_ITEM  # human majority x gold, on the same items
    n_ties: int = 0  # gold items with a judge verdict on which the humans tie: left out of the last two
    n_unlabelled: int = 0  # ... that no annotator has labelled yet: left out of the last two
    undefined: str = ""  # why there is no gold figure ("" when there is)

    def as_json(self) -> dict[str, Any]:
        return {
            "gold_n_items": self.agreement.n,
            "gold_agreement": self.agreement.as_json(),
            "gold_majority_agreement": self.majority_agreement.as_json(),
            "crowd_gold_agreement": self.crowd_agreement.as_json(),
            "gold_n_human_ties": self.n_ties,
            "gold_n_unlabelled": self.n_unlabelled,
            "gold_undefined": self.undefined,
        }


@dataclass(frozen=True)
class StudyCard:
    study: Study
    agreement: JudgeAgreement
    loo_band: tuple[float, float] | None
    loo_pooled: Share
    baselines: list[Baseline]
    gold: GoldComparison

    @property
    def overall(self) -> Share:
        return Share(self.agreement.overall.agreed, self.agreement.overall.n)

    @property
    def on_has_failure(self) -> Share:
        return Share(self.agreement.has_failure.agreed, self.agreement.has_failure.n)

    @property
    def on_no_failure(self) -> Share:
        return Share(self.agreement.no_failure.agreed, self.agreement.no_failure.n)

    def as_json(self) -> dict[str, Any]:
        low, high = self.loo_band or (None, None)
        return {
            "study": self.study.slug,
            "title": self.study.title,
            "n_items": self.overall.n,
            "n_human_ties": self.agreement.overall.ties,
            "agreement": self.overall.as_json(),
            "agreement_on_has_failure": self.on_has_failure.as_json(),
            "agreement_on_no_failure": self.on_no_failure.as_json(),
            "cohen_kappa": self.agreement.kappa.value,
            "cohen_kappa_undefined": self.agreement.kappa.undefined,
            "gwet_ac1": self.agreement.ac1.value,
            "gwet_ac1_undefined": self.agreement.ac1.undefined,
            "human_loo_low": low,
            "human_loo_high": high,
            "human_loo_pooled": self.loo_pooled.as_json(),
            "baselines": [b.as_json() for b in self.baselines],
            **self.gold.as_json(),
        }


@dataclass(frozen=True)
class SkippedStudy:
    """A study whose generations the judge judged but which has no figure yet, and the reason."""

    study: Study
    reason: str
    gold: GoldComparison

    def as_json(self) -> dict[str, Any]:
        return {
            "study": self.study.slug,
            "title": self.study.title,
            "reason": self.reason,
            **self.gold.as_json(),
        }


@dataclass
class ReportCard:
    judge: Judge
    instrument: judge_figures.Instrument
    length_bias: judge_figures.LengthBias
    other_judges: list[judge_figures.JudgePair]
    cost: judge_figures.Cost
    flips: Share
    studies: list[StudyCard] = field(default_factory=list)
    skipped: list[SkippedStudy] = field(default_factory=list)
    no_study_reason: str = ""  # why no study is compared at all ("" when one is, or skipped)
    bias: CalibrationBias | None = None  # None: no calibration sample of a generator it judged
    no_bias_reason: str = ""
    probes: list[ProbeResults] = field(default_factory=list)  # judging/probes: newest first

    def as_json(self) -> dict[str, Any]:
        return {
            "judge_id": self.judge.judge_id,
            "model": self.judge.model,
            "is_demo_model": self.judge.is_demo_model,
            "instrument": self.instrument.as_json(),
            "studies": [s.as_json() for s in self.studies],
            "studies_without_figures": [s.as_json() for s in self.skipped],
            "no_study_reason": self.no_study_reason,
            "length_bias": self.length_bias.as_json(),
            "other_judges": [p.as_json() for p in self.other_judges],
            "cost": self.cost.as_json(),
            "flips": self.flips.as_json(),
            "calibration_bias": self.bias.as_json() if self.bias else None,
            "no_calibration_bias_reason": self.no_bias_reason,
            "probes": [probe.as_json() for probe in self.probes],
        }


def report_card(judge: Judge) -> ReportCard:
    version = versions.judgments_version(judge_ids=[judge.judge_id])
    instrument, length_bias, other_judges, flips = versions.cached(
        f"judge-figures:{judge.pk}", lambda: _judgment_figures(judge), version=version
    )
    # The studies' figures and the bias on the calibration samples take seconds over a 10,000-item study
    # (its agreement's bootstrap, a 140,000-generation frame): cached for the version of what they read (the
    # judge's judgments and the human side: label_versions.calibration_version).
    humans = f"{version}|{calibration_version()}"
    rows = versions.cached(
        f"judge-studies:{judge.pk}",
        lambda: [study_card(judge, study) for study in _studies_judged(judge)],
        version=humans,
    )
    bias = versions.cached(
        f"judge-calibration-bias:{judge.pk}", lambda: calibration_bias(judge), version=humans
    )
    return ReportCard(
        judge=judge,
        instrument=instrument,
        length_bias=length_bias,
        other_judges=other_judges,
        cost=judge_figures.cost(judge),
        flips=flips,
        studies=[row for row in rows if isinstance(row, StudyCard)],
        skipped=[row for row in rows if isinstance(row, SkippedStudy)],
        no_study_reason="" if rows else no_study_reason(judge),  # a row per study judged
        bias=bias if isinstance(bias, CalibrationBias) else None,
        no_bias_reason=bias if isinstance(bias, str) else "",
        probes=judge_probes(judge.pk),  # not cached: a probe's job writes its items as it runs
    )


# --- bias against people on the calibration samples ----------------------------------------------------


@dataclass(frozen=True)
class TopicBias:
    topic: str
    n: int
    bias: MeanDifference | None
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "n": self.n,
            "bias": _difference_json(self.bias),
            "undefined": self.reason,
        }


@dataclass(frozen=True)
class CalibrationBias:
    """The judge's bias (judge - human) on the calibration samples (module docstring)."""

    bias: JudgeBias
    topics: list[TopicBias]
    studies: list[str]
    n_generators: int
    n_no_verdict: int  # labelled items without the judge's verdict, left out

    def as_json(self) -> dict[str, Any]:
        return {
            "bias": _difference_json(self.bias.overall),
            "missed_failures": _class_json(self.bias.missed),
            "false_alarms": _class_json(self.bias.false_alarms),
            "n_ties": self.bias.n_ties,
            "ties_contribution": self.bias.ties_contribution,
            "topics": [t.as_json() for t in self.topics],
            "studies": self.studies,
            "n_generators": self.n_generators,
            "n_no_verdict": self.n_no_verdict,
        }


def _difference_json(d: MeanDifference | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {
        **interval_json(d),
        "weighted": d.weighted,
        "undefined": d.undefined,
    }


def _class_json(c: ClassShare) -> dict[str, Any]:
    return {
        "k": c.k,
        "n": c.n,
        "rate": c.rate,
        "ci_low": c.ci_low,
        "ci_high": c.ci_high,
        "contribution": c.contribution,
        "weighted": c.weighted,
    }


def calibration_bias(judge: Judge) -> CalibrationBias | str:
    """The judge's bias on the calibration samples of the generators it judged, or why there is none."""
    generator_pks = set(Judgment.objects.filter(judge=judge).values_list("generator_id", flat=True))
    samples = {g: s for g, s in generator_samples().items() if g in generator_pks}
    if not samples:
        return (
            "No calibration sample covers a generator this judge judged: build a study with a calibration "
            "sample (Studies, New study) and have it labelled to measure its bias against people."
        )
    items: list[Example] = []
    n_no_verdict = 0
    for generator_pk, sample in samples.items():
        labelled = with_judge_labels(judge, sample.examples, generator_pk=generator_pk)
        examples = [e for e in labelled if e.human is not None]
        n_no_verdict += sum(e.imputed for e in examples)
        items.extend(e for e in examples if not e.imputed)
    if not items:
        return (
            f"None of the {n_no_verdict} labelled item(s) of the calibration samples has a verdict of this "
            "judge yet (parse failures are no verdict)."
        )
    return CalibrationBias(
        bias=_judge_bias(items),
        topics=_topic_biases(items),
        studies=sorted({s.study.slug for s in samples.values()}),
        n_generators=len(samples),
        n_no_verdict=n_no_verdict,
    )


def _pairs(items: list[Example]) -> tuple[list[float], list[float], list[float] | None]:
    """(judge labels, human labels, inclusion probabilities or None when they are all equal)."""
    probabilities = [e.probability for e in items]
    equal = len({round(p, 12) for p in probabilities}) <= 1
    judge = [e.judge if e.judge is not None else 0.0 for e in items]
    return judge, [e.human if e.human is not None else 0.0 for e in items], None if equal else probabilities


def _judge_bias(items: list[Example]) -> JudgeBias:
    judge, human, probabilities = _pairs(items)
    return judge_bias(judge, human, inclusion_probabilities=probabilities)


def _topic_biases(items: list[Example]) -> list[TopicBias]:
    topics: dict[str, list[Example]] = {}
    for e in items:
        topics.setdefault(e.topic, []).append(e)
    result = []
    for topic, members in sorted(topics.items()):
        if len(members) < MIN_TOPIC_LABELS:
            result.append(TopicBias(topic, len(members), None, topic_reason(len(members))))
            continue
        judge, human, probabilities = _pairs(members)
        result.append(
            TopicBias(
                topic,
                len(members),
                weighted_mean_difference(judge, human, inclusion_probabilities=probabilities),
            )
        )
    return result


def no_study_reason(judge: Judge) -> str:
    """Why the judge is compared with no study (the card asks only when no study has a judged item)."""
    studies = Study.objects.filter(kind=KIND)
    n_studies = studies.count()
    if not n_studies:
        return (
            "No critical-failures annotation study exists yet: create one on the Studies page and have it "
            "labelled to compare this judge with humans."
        )
    parse_failed = Judgment.objects.filter(
        judge=judge, parse_failed=True, generation__study_items__study__in=studies
    ).exists()
    plural = "study" if n_studies == 1 else f"{n_studies} studies"
    if parse_failed:
        return (
            f"Every verdict of this judge on the generations of the annotation {plural} failed to parse: "
            "a parse failure is no verdict. Re-judge its parse failures to compare it with the humans."
        )
    return (
        f"This judge has judged no generation of the annotation {plural} yet: judge a study's generations "
        "to compare it with the humans."
    )


def _judgment_figures(
    judge: Judge,
) -> tuple[judge_figures.Instrument, judge_figures.LengthBias, list[judge_figures.JudgePair], Share]:
    """The figures that read every judgment of the judge (cached for the judgments' version)."""
    return (
        judge_figures.instrument(judge),
        judge_figures.length_bias(judge_figures.length_bias_rows(judge)),
        judge_figures.other_judges(judge),
        judge_figures.flips(judge),
    )


def _studies_judged(judge: Judge) -> list[Study]:
    judged = Judgment.objects.filter(judge=judge, parse_failed=False).values("generation_id")
    return list(
        Study.objects.filter(items__generation_id__in=judged).distinct().order_by("-created_at", "-pk")
    )


def study_card(judge: Judge, study: Study) -> StudyCard | SkippedStudy:
    """The judge against the humans of one study, on the items both labelled, or why there is no such item.
    The human ceiling is computed on the items the judge's agreement counts: those with a human majority."""
    labels = study_labels(study)
    gold = gold_comparison(judge, study, labels)
    if not labels:
        return SkippedStudy(study, study_unlabelled_reason(study=study), gold)
    verdicts = _verdicts(judge, {label.unit for label in labels})
    shared = [label for label in labels if label.unit in verdicts]
    if not shared:
        return SkippedStudy(study, _no_overlap_reason(judge, study, labels), gold)
    loo = human_ceiling(shared)
    rates = [a.rate for a in loo.values() if a.rate is not None]
    loo_all = pooled(loo.values())
    return StudyCard(
        study=study,
        agreement=judge_agreement(shared, verdicts),
        loo_band=(min(rates), max(rates)) if rates else None,
        loo_pooled=Share(loo_all.agreed, loo_all.n),
        baselines=baselines(shared),
        gold=gold,
    )


def _verdicts(judge: Judge, generation_ids: Iterable[Hashable]) -> dict[Hashable, bool]:
    """Generation id -> the judge's has_failure, parse failures left out."""
    rows = Judgment.objects.filter(judge=judge, parse_failed=False, generation_id__in=list(generation_ids))
    return dict(rows.values_list("generation_id", "has_failure"))


def gold_comparison(judge: Judge, study: Study, labels: list[Label]) -> GoldComparison:
    """The judge and the human majority (of `labels`, the study's) against the study's gold as of now, on
    the gold items with a judge verdict, or why there is no such item."""
    gold = gold_by_generation(study)
    if not gold:
        return GoldComparison(undefined="no item of this study has adjudicated gold yet")
    verdicts = _verdicts(judge, gold)
    items = [unit for unit in gold if unit in verdicts]
    if not items:
        items_word = "item" if len(gold) == 1 else "items"
        why = f"none of the {len(gold)} gold {items_word} has a verdict of this judge"
        return GoldComparison(undefined=f"{why} (parse failures are no verdict)")
    majorities = {
        unit: majority(label.has_failure for label in group) for unit, group in by_unit(labels).items()
    }
    decided = [unit for unit in items if majorities.get(unit) is not None]
    return GoldComparison(
        agreement=_agreed(items, verdicts, gold),
        majority_agreement=_agreed(decided, verdicts, majorities),
        crowd_agreement=_agreed(decided, majorities, gold),
        n_ties=sum(unit in majorities and majorities[unit] is None for unit in items),
        n_unlabelled=sum(unit not in majorities for unit in items),
    )


def _agreed(units: Sequence[Hashable], a: Mapping[Any, bool | None], b: Mapping[Any, bool | None]) -> Share:
    """On these units, k = where a and b say the same, of n = all of them."""
    return Share(sum(a[unit] == b[unit] for unit in units), len(units))


def _no_overlap_reason(judge: Judge, study: Study, labels: list[Label]) -> str:
    n_labelled = len({label.unit for label in labels})
    n_judged = (
        Judgment.objects.filter(judge=judge, parse_failed=False, generation__study_items__study=study)
        .values("generation_id")
        .distinct()
        .count()
    )
    items = "item" if n_labelled == 1 else "items"
    return (
        f"The annotators have labelled {n_labelled} {items} of this study, none of them among the "
        f"{n_judged} this judge has a verdict on (parse failures are no verdict)."
    )


def baselines(labels: list[Label]) -> list[Baseline]:
    """Always / never "has failure" and the fitted length rule, against the majority of these labels."""
    majorities = {
        unit: majority(label.has_failure for label in group) for unit, group in by_unit(labels).items()
    }
    decided = {unit: m for unit, m in majorities.items() if m is not None}
    n_fail = sum(decided.values())
    return [
        Baseline('always "has failure"', Share(n_fail, len(decided))),
        Baseline('never "has failure"', Share(len(decided) - n_fail, len(decided))),
        length_rule(decided),
    ]


def length_rule(majorities: dict[Hashable, bool]) -> Baseline:
    """ "has failure" when gen tokens < (1 - s) x ref tokens, s chosen to agree best with the majority."""
    ratios = {
        pk: (gen or 0) / (ref or 1)  # both set: filtered above
        for pk, gen, ref in Generation.objects.filter(
            pk__in=list(majorities), n_tokens__isnull=False, procedure__n_tokens__gt=0
        ).values_list("pk", "n_tokens", "procedure__n_tokens")
    }
    items = [(ratios[unit], majorities[unit]) for unit in majorities if unit in ratios]
    if not items:
        return Baseline("length rule", Share(0, 0), note="no item has token counts")
    best_threshold, best = fit_length_threshold(items)
    share = 100.0 * (1.0 - best_threshold) if best_threshold != float("inf") else None
    note = (
        f'"has failure" when the generation is shorter than its reference by more than {share:.0f} % of '
        "its tokens (fitted on these items)"
        if share is not None
        else '"has failure" always (no length threshold does better on these items)'
    )
    return Baseline("length rule", Share(best, len(items)), note=note)


def fit_length_threshold(items: list[tuple[float, bool]]) -> tuple[float, int]:
    """The threshold t on gen/ref (rule: has failure iff ratio < t) that agrees with most labels, and how
    many it agrees with; t ranges over the observed ratios and +inf, the smallest best one wins."""
    candidates = [*sorted({ratio for ratio, _ in items}), float("inf")]
    best_threshold, best = candidates[0], -1
    for threshold in candidates:
        agreed = sum((ratio < threshold) == has_failure for ratio, has_failure in items)
        if agreed > best:
            best_threshold, best = threshold, agreed
    return best_threshold, best


__all__ = [
    "Baseline",
    "CalibrationBias",
    "GoldComparison",
    "ReportCard",
    "SkippedStudy",
    "StudyCard",
    "baselines",
    "calibration_bias",
    "fit_length_threshold",
    "gold_comparison",
    "no_study_reason",
    "report_card",
    "study_card",
]
