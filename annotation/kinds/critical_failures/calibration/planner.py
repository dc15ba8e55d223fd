"""The budget planner (issue #20 item 4): for a target half-width of a judge's calibrated How2Score (one
generator, each topic, or the difference between two generators), how many more human-labelled items are
needed, how many annotations and participants that is, how long it takes and what it costs; and, for the
labels already collected, the minimum detectable difference between generators.

Rules (docs/reference/statistics.md, "The budget planner", repeats them):
- **Labels needed** come from h2e_site.stats.calibration's closed form of the PPI++ variance:
labels_needed_from on
  the paired labels collected so far (annotation.kinds.critical_failures.calibration.calibrated's join),
  weighted by 1 / pi where their
  inclusion probabilities differ (the weighted estimator's design variance), or, with fewer than 2 of them,
  labels_needed from the assumptions (the human share, the judge's agreement with the human majority) and the
  judge's own share on the generator's examples. For a difference, labels_needed_for_difference with the
  same n for both generators. **More** = needed - counted so far, never negative (per generator for a
  difference; per topic summed for "per topic").
- **Assumptions** (each part's own judge share p_f): the human share defaults to the paper's 49 %; the
  agreement, left blank, is derived for each part from the shares: the paper judge's covariance with people
  as a fraction of the largest its shares allow (DEFAULT_AGREEMENT_FRACTION, 0.63), applied at this part's
  shares, so it always lies in the feasible range (h2e_site.stats.calibration_plan.agreement_range). An
  entered agreement outside that range is a PlanError naming agreement_pp, the part and the range (and the
  human shares that would allow it). Where the judge gives every example of a part one verdict (p_f 0 or 1)
  the agreement is fixed by the human share and carries nothing: that part is planned as for human labels
  alone (lam = 0), whatever agreement was entered, and its note says so.
- **Annotations** = more items x k (annotators per item); **participants** = ceil(annotations / items per
  participant). k and items per participant default to the generator's calibration study's, else the Study
  model's defaults.
- **Minutes per item**: the median over the study's annotations (attention checks left out) of the active
  seconds the browser reported, or the server's elapsed seconds where there is none, / 60; with no
  annotation yet, the study's estimated_item_minutes; with no study, the default estimate. The plan says
  which it used.
- **Cost** = annotator hours (annotations x minutes per item / 60) x the hourly rate x (1 + fee % / 100);
  the platform fee (Prolific's service fee) is only included as the fee % entered.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db.models import Avg, Case, Count, FloatField, Q, Value, When

from annotation.base.models import Study
from annotation.kinds.critical_failures.calibration.calibrated import (
    CalibratedLine,
    Example,
    calibrated_lines,
    stratum_labels,
)
from annotation.kinds.critical_failures.calibration.planner_time import (
    Timing,
    cost,
    minutes_per_item,
    study_default,
)
from h2e_site.stats.calibration import MIN_HUMAN_LABELS
from h2e_site.stats.calibration_plan import (
    DifferencePlan,
    LabelPlan,
    PlanMoments,
    agreement_range,
    covariance_fraction,
    default_agreement,
    degenerate,
    expected_half_widths,
    labels_needed,
    labels_needed_for_difference,
    labels_needed_from,
    minimum_detectable_difference,
)
from judging.models import Generator, Judge, Judgment

SCOPES = {
    "generator": "one generator",
    "topics": "each topic of one generator",
    "difference": "the difference between two generators",
}
CURRENCIES = ("GBP", "USD", "EUR")
# The paper's setting (paper_example): the pooled human How2Score of Table 10 (49.02), How2Judge's agreement
# with the human majority (§4.3) and its agreement on each class (§4.4).
PAPER_HUMAN_SHARE, PAPER_AGREEMENT, PAPER_ON_FAILURE, PAPER_ON_PASS = 0.49, 0.805, 0.796, 0.814
PAPER_JUDGE_SHARE = PAPER_HUMAN_SHARE * PAPER_ON_PASS + (1 - PAPER_HUMAN_SHARE) * (1 - PAPER_ON_FAILURE)
DEFAULT_HUMAN_SHARE = 100 * PAPER_HUMAN_SHARE  # %
DEFAULT_AGREEMENT = 100 * PAPER_AGREEMENT  # %: the paper's; the planner's default is derived from it per part
# The paper judge's covariance with people as a fraction of the largest its shares allow (0.626): the default
# agreement of a part is the agreement with this fraction at the part's shares (module docstring).
DEFAULT_AGREEMENT_FRACTION = covariance_fraction(PAPER_HUMAN_SHARE, PAPER_JUDGE_SHARE, PAPER_AGREEMENT)
# Bounds of the inputs (the page's form and the API's query serializer). A human share of 0 or 100 % would
# make every human label the same: no variance, nothing to plan.
BOUNDS: dict[str, tuple[float, float]] = {
    "half_width_pp": (0.1, 50.0),
    "hourly_rate": (0.0, 10_000.0),
    "fee_percent": (0.0, 100.0),
    "k": (1, 50),
    "items_per_participant": (1, 100_000),
    "human_share_pp": (0.1, 99.9),
    "agreement_pp": (0.0, 100.0),
}


def bound_messages(low: float, high: float) -> dict[str, str]:
    """The error of a value outside BOUNDS, naming the whole range (the form's and the serializer's)."""
    message = f"must lie between {low:g} and {high:g}"
    return {"min_value": message, "max_value": message}


class PlanError(ValueError):
    """An input the plan cannot use, with the field it names: a 400 on the page and in the API, or in the API
    a 404 where it names a judge or generator that does not exist (missing), as its other filters do."""

    def __init__(self, field_name: str, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.field = field_name
        self.message = message
        self.missing = missing


@dataclass(frozen=True)
class PlanInput:
    """The validated inputs (the page's form and the API's query serializer both produce this)."""

    judge: str
    generator: str
    scope: str = "generator"
    other_generator: str = ""
    half_width_pp: float = 5.0
    hourly_rate: float = 12.0
    currency: str = "GBP"
    fee_percent: float = 0.0
    k: int | None = None
    items_per_participant: int | None = None
    human_share_pp: float = DEFAULT_HUMAN_SHARE
    agreement_pp: float | None = None  # None: derived for each part (module docstring)


@dataclass(frozen=True)
class Part:
    """One planned unit: a generator, or a topic of it."""

    name: str
    N: int
    counted: int
    n_needed: int | None
    more: int | None
    lam: float | None
    source: str  # "labels" (collected) or "assumptions"
    within_N: bool
    note: str = ""
    assumed: Assumed | None = None  # the shares planned from (source "assumptions")


@dataclass(frozen=True)
class Assumed:
    """The shares a part was planned from, in %: the human share and agreement assumed (the agreement derived
    where none was entered), the judge's share on the part's examples."""

    human_share_pp: float
    agreement_pp: float
    judge_share_pp: float
    agreement_derived: bool

    @property
    def judge_constant(self) -> bool:
        """The judge gives every example one verdict: the agreement is fixed by the human share."""
        return degenerate(self.judge_share_pp / 100)


@dataclass(frozen=True)
class Detectable:
    """The minimum detectable difference (80 % power, 5 % level) between the plan's generator and another."""

    generator_id: str
    generator_model: str
    minimum: float | None
    undefined: str = ""

    @property
    def minimum_points(self) -> float | None:
        return None if self.minimum is None else 100 * self.minimum


@dataclass(frozen=True)
class Plan:
    inputs: PlanInput
    judge_model: str
    study_slug: str
    parts: list[Part]
    more_items: int | None
    annotations: int | None
    participants: int | None
    k: int
    items_per_participant: int
    timing: Timing
    annotator_hours: float | None
    cost: float | None
    detectable: list[Detectable] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["fee_included"] = self.inputs.fee_percent > 0
        return data


def plan_input(data: dict[str, Any]) -> PlanInput:
    """PlanInput from validated data (the form's or the API serializer's); blanks take their defaults."""
    optional = {"fee_percent": 0.0, "human_share_pp": DEFAULT_HUMAN_SHARE}
    values = {name: default if data.get(name) is None else data[name] for name, default in optional.items()}
    return PlanInput(
        judge=data["judge"],
        generator=data["generator"],
        scope=data.get("scope") or "generator",
        other_generator=data.get("other_generator") or "",
        half_width_pp=data["half_width_pp"],
        hourly_rate=data["hourly_rate"],
        currency=data.get("currency") or "GBP",
        k=data.get("k"),
        items_per_participant=data.get("items_per_participant"),
        agreement_pp=data.get("agreement_pp"),
        **values,
    )


# --- the paper's setting ----------------------------------------------------------------------------------


def paper_example() -> dict[str, Any]:
    """The paper's setting (How2Everything, arXiv 2026): 200 items x 3 annotators with a human majority,
    How2Judge at 80.5 % agreement with it (79.6 % on has_failure, 81.4 % on no_failure, §4.4), N = 7,000
    examples per generator (How2Bench: 500 per topic x 14 topics, §3), a human share of 49 % (the pooled
    How2Score over the models of its Table 10, 49.02; the judge's share follows from the per-class
    agreement). The expected 95 % half-widths of expected_half_widths."""
    human, judge_share = PAPER_HUMAN_SHARE, PAPER_JUDGE_SHARE
    widths = expected_half_widths(
        n=200, N=7000, human_share=human, judge_share=judge_share, agreement=PAPER_AGREEMENT
    )
    return {
        "items": 200,
        "annotators_per_item": 3,
        "N": 7000,
        "agreement": PAPER_AGREEMENT,
        "human_share": human,
        "judge_share": round(judge_share, 4),
        "calibrated_half_width": widths.calibrated,
        "human_only_half_width": widths.human_only,
        "judge_only_half_width": widths.judge_only,
        "lam": widths.lam,
        "effective_n": widths.effective_n,
        "assumptions": [
            "200 items each labelled by 3 annotators; their majority is the human label (paper §4.3)",
            "How2Judge agrees with the human majority on 80.5 % of them: 79.6 % where the humans find a "
            "failure, 81.4 % where they find none (§4.4); the judge's share of 'no failure' follows",
            "N = 7,000 judged examples per generator: How2Bench, 500 per topic x 14 topics (§3)",
            "a human share of 49 % with no critical failure: the pooled How2Score of Table 10 (49.02)",
            "normal approximations; the judge-only half-width is about the judge's own score, which can sit "
            "several points from the human one whatever its width",
        ],
    }


# --- planning ---------------------------------------------------------------------------------------------


def plan(inputs: PlanInput) -> Plan:
    """The plan for these inputs; PlanError naming the field for a judge, generator or assumption it cannot
    use."""
    judge = _judge(inputs.judge)
    lines = {line.generator_id: line for line in calibrated_lines(judge_ids=[judge.judge_id])}
    line = _line(lines, inputs.generator, "generator", judge)
    other = None
    if inputs.scope == "difference":
        if not inputs.other_generator:
            raise PlanError("other_generator", "a difference needs a second generator")
        if inputs.other_generator == inputs.generator:
            raise PlanError("other_generator", "the second generator must differ from the first")
        other = _line(lines, inputs.other_generator, "other_generator", judge)
    study = _study(line, other)
    k = inputs.k or (study.annotators_per_item if study else study_default("annotators_per_item"))
    per_participant, notes = _items_per_participant(inputs, study)
    if inputs.scope == "difference" and other is not None:
        parts = _difference_parts(inputs, line, other)
    elif inputs.scope == "topics":
        parts = _topic_parts(inputs, judge, line)
    else:
        parts = [_generator_part(inputs, line)]
    timing = minutes_per_item(study)
    more = None if any(p.more is None for p in parts) else sum(p.more or 0 for p in parts)
    annotations = None if more is None else more * k
    hours = None if annotations is None else annotations * timing.minutes_per_item / 60
    return Plan(
        inputs=inputs,
        judge_model=judge.model,
        study_slug=study.slug if study else "",
        parts=parts,
        more_items=more,
        annotations=annotations,
        participants=None if annotations is None else math.ceil(annotations / per_participant),
        k=k,
        items_per_participant=per_participant,
        timing=timing,
        annotator_hours=hours,
        cost=None if hours is None else cost(hours, inputs.hourly_rate, inputs.fee_percent),
        detectable=_detectable(line, other, lines),
        notes=notes,
    )


def _judge(judge_id: str) -> Judge:
    judge = Judge.objects.filter(judge_id=judge_id).first()
    if judge is None:
        raise PlanError("judge", f"no judge {judge_id!r}", missing=True)
    return judge


def _line(lines: dict[str, CalibratedLine], generator_id: str, name: str, judge: Judge) -> CalibratedLine:
    if generator_id in lines:
        return lines[generator_id]
    if Generator.objects.filter(generator_id=generator_id).exists():
        raise PlanError(name, f"judge {judge.judge_id!r} has not judged generator {generator_id!r}")
    raise PlanError(name, f"no generator {generator_id!r}", missing=True)


def _study(line: CalibratedLine, other: CalibratedLine | None) -> Study | None:
    slug = line.study_slug or (other.study_slug if other else "")
    return Study.objects.filter(slug=slug).first() if slug else None


def _items_per_participant(inputs: PlanInput, study: Study | None) -> tuple[int, list[str]]:
    if inputs.items_per_participant:
        return inputs.items_per_participant, []
    if study and study.items_per_participant:
        return study.items_per_participant, []
    default = int(study_default("items_per_participant"))
    if study:
        return default, [
            f"study {study.slug} gives each participant as many items as remain (0): participants are "
            f"counted at the default {default} items each"
        ]
    return default, []


def _shares(inputs: PlanInput, judge_share: float | None, where: str) -> tuple[float, float, float, Assumed]:
    """The human share, the judge's share and the agreement a part is planned from (module docstring,
    "Assumptions"); PlanError naming agreement_pp and its range for an agreement the shares cannot produce."""
    human = inputs.human_share_pp / 100
    judge = human if judge_share is None else judge_share
    entered = None if inputs.agreement_pp is None else inputs.agreement_pp / 100
    if degenerate(judge):
        agreement = agreement_range(human, judge)[0]  # a point: the human share or its complement
    elif entered is None:
        agreement = default_agreement(human, judge, DEFAULT_AGREEMENT_FRACTION)
    else:
        low, high = agreement_range(human, judge)
        if not low - 1e-9 <= entered <= high + 1e-9:
            raise PlanError("agreement_pp", _impossible_agreement(inputs, judge, where))
        agreement = entered
    assumed = Assumed(100 * human, 100 * agreement, 100 * judge, entered is None or degenerate(judge))
    return human, judge, agreement, assumed


def _impossible_agreement(inputs: PlanInput, judge: float, where: str) -> str:
    human, agreement = inputs.human_share_pp / 100, (inputs.agreement_pp or 0.0) / 100
    low, high = _inward(*agreement_range(human, judge))
    message = (
        f"an agreement of {inputs.agreement_pp:g} % is impossible with a human share of "
        f"{inputs.human_share_pp:g} % and the judge's share of {_percent(judge)} % on {where}: judge and "
        f"people agree on between {low} % (as opposed as these shares allow) and {high} % (as alike). "
        "Enter an agreement in that range"
    )
    shares = _human_shares(agreement, judge)
    if shares is not None:
        message += f", or a human share between {shares[0]} and {shares[1]} %"
    return message + ", or leave the agreement blank to derive it from the shares"


def _human_shares(agreement: float, judge: float) -> tuple[str, str] | None:
    """The human shares (within their bounds) with which this agreement is possible, as text; None when they
    are a point or none (an agreement of 0 or 100 %)."""
    bound_low, bound_high = (b / 100 for b in BOUNDS["human_share_pp"])
    low, high = agreement_range(agreement, judge)  # the same inequalities, solved for the human share
    low, high = max(low, bound_low), min(high, bound_high)
    return _inward(low, high) if high - low > 1e-9 else None


def _inward(low: float, high: float) -> tuple[str, str]:
    """low and high (shares) as percentages with as many decimals as keep them apart, rounded inwards so
    that both printed values are feasible."""
    for places in range(1, 10):
        scale = 10**places
        shown_low = math.ceil(100 * low * scale - 1e-6) / scale  # 1e-6: floating-point noise is no step
        shown_high = math.floor(100 * high * scale + 1e-6) / scale
        if shown_low < shown_high:
            return f"{shown_low:.{places}f}", f"{shown_high:.{places}f}"
    return f"{100 * low:.10g}", f"{100 * high:.10g}"


def _percent(share: float) -> str:
    """A share as a percentage, with decimals enough not to print 100 or 0 for a share that is neither."""
    for places in range(1, 10):
        text = f"{100 * share:.{places}f}"
        if not degenerate(share) and float(text) in {0.0, 100.0}:
            continue
        return text
    return f"{100 * share:.10g}"


def _judge_share(examples: list[Example]) -> float | None:
    parsed = [e.judge for e in examples if e.judge is not None]
    return sum(parsed) / len(parsed) if parsed else None


def _part(
    inputs: PlanInput, name: str, examples: list[Example], big_n: int, judge_share: float | None, where: str
) -> Part:
    half_width = inputs.half_width_pp / 100
    labels = stratum_labels(examples) if examples else None
    counted = len(labels.human) if labels else 0
    assumed = None
    if labels and counted >= MIN_HUMAN_LABELS:
        label_plan: LabelPlan = labels_needed_from(
            labels.human,
            labels.judge_labelled,
            N=big_n,
            half_width=half_width,
            inclusion_probabilities=labels.inclusion_probabilities,
        )
        source, note = "labels", _weights_note(labels.inclusion_probabilities)
    else:
        human, judge, agreement, assumed = _shares(inputs, judge_share, where)
        label_plan = labels_needed(
            half_width=half_width, human_share=human, judge_share=judge, agreement=agreement, N=big_n
        )
        source = "assumptions"
        note = _assumptions_note(inputs, counted, assumed)
    needed = label_plan.n_needed
    return Part(
        name=name,
        N=big_n,
        counted=counted,
        n_needed=needed,
        more=None if needed is None else max(0, needed - counted),
        lam=label_plan.lam,
        source=source,
        within_N=label_plan.within_N,
        note=label_plan.undefined or note,
        assumed=assumed,
    )


def _weights_note(inclusion: Sequence[float] | None) -> str:
    if inclusion is None:
        return ""
    weights = [1 / p for p in inclusion]
    effective = sum(weights) ** 2 / sum(w * w for w in weights)
    return (
        f"weighted by 1/π (inclusion probabilities {min(inclusion):.3g} to {max(inclusion):.3g}; "
        f"{effective:.1f} effective of {len(weights)} labels): planned with the weighted estimator's variance"
    )


def _assumptions_note(inputs: PlanInput, counted: int, assumed: Assumed) -> str:
    note = f"{counted} human label(s) so far (fewer than {MIN_HUMAN_LABELS}): planned from the assumptions"
    if assumed.judge_constant:
        unused = "" if inputs.agreement_pp is None else "; the agreement entered is not used"
        return (
            f"{note}. The judge gives every example here the same verdict (its share "
            f"{assumed.judge_share_pp:g} %): its agreement with people is fixed by the human share and its "
            f"labels add nothing, so this is planned as for human labels alone (λ = 0){unused}"
        )
    if assumed.agreement_derived:
        return (
            f"{note}; the agreement is derived from the shares: the paper judge's covariance with people, "
            f"{DEFAULT_AGREEMENT_FRACTION:.2f} of the largest they allow"
        )
    return note


def _generator_part(inputs: PlanInput, line: CalibratedLine) -> Part:
    big_n = len(line.examples) or line.judge_n
    share = _judge_share(line.examples) if line.examples else line.judge_only
    where = f"generator {line.generator_id}'s examples"
    return _part(inputs, line.generator_id, line.examples, max(big_n, 1), share, where)


def _topic_parts(inputs: PlanInput, judge: Judge, line: CalibratedLine) -> list[Part]:
    if line.examples:
        topics: dict[str, list[Example]] = defaultdict(list)
        for example in line.examples:
            topics[example.topic].append(example)
        return [
            _part(inputs, topic, members, len(members), _judge_share(members), f"topic {topic!r}")
            for topic, members in sorted(topics.items())
        ]
    return [
        _part(inputs, topic, [], size, share, f"topic {topic!r}")
        for topic, size, share in _judged_topics(judge, line.generator_id)
    ]


def _judged_topics(judge: Judge, generator_id: str) -> Iterable[tuple[str, int, float | None]]:
    """Without a calibration sample: the judge's examples of the generator per topic, with its share."""
    rows = (
        Judgment.objects.filter(judge=judge, generation__generator__generator_id=generator_id)
        .values("generation__procedure__topic__name")
        .annotate(
            size=Count("pk"),
            failed=Avg(
                Case(When(has_failure=True, then=Value(1.0)), default=Value(0.0), output_field=FloatField()),
                filter=Q(parse_failed=False),
            ),
        )
        .order_by("generation__procedure__topic__name")
    )
    for row in rows:
        share = None if row["failed"] is None else 1 - float(row["failed"])
        yield row["generation__procedure__topic__name"] or "(no topic)", row["size"], share


def _moments(inputs: PlanInput, line: CalibratedLine) -> tuple[PlanMoments, int, str, Assumed | None]:
    labels = stratum_labels(line.examples) if line.examples else None
    counted = len(labels.human) if labels else 0
    if labels and counted >= MIN_HUMAN_LABELS:
        moments = PlanMoments.from_labels(
            labels.human, labels.judge_labelled, inclusion_probabilities=labels.inclusion_probabilities
        )
        return moments, counted, "labels", None
    share = _judge_share(line.examples) if line.examples else line.judge_only
    human, judge, agreement, assumed = _shares(inputs, share, f"generator {line.generator_id}'s examples")
    moments = PlanMoments.from_shares(human_share=human, judge_share=judge, agreement=agreement)
    return moments, counted, "assumptions", assumed


def _difference_parts(inputs: PlanInput, first: CalibratedLine, second: CalibratedLine) -> list[Part]:
    (m1, c1, s1, a1), (m2, c2, s2, a2) = _moments(inputs, first), _moments(inputs, second)
    n1, n2 = max(len(first.examples) or first.judge_n, 1), max(len(second.examples) or second.judge_n, 1)
    result: DifferencePlan = labels_needed_for_difference(
        half_width=inputs.half_width_pp / 100, first=m1, second=m2, N_first=n1, N_second=n2
    )
    needed = result.n_needed
    lams = result.lams or (None, None)
    return [
        Part(
            name=line.generator_id,
            N=big_n,
            counted=counted,
            n_needed=needed,
            more=None if needed is None else max(0, needed - counted),
            lam=lam,
            source=source,
            within_N=needed is not None and needed <= big_n,
            note=result.undefined or ("" if assumed is None else _assumptions_note(inputs, counted, assumed)),
            assumed=assumed,
        )
        for line, big_n, counted, source, lam, assumed in (
            (first, n1, c1, s1, lams[0], a1),
            (second, n2, c2, s2, lams[1], a2),
        )
    ]


def _detectable(
    line: CalibratedLine, other: CalibratedLine | None, lines: dict[str, CalibratedLine]
) -> list[Detectable]:
    others = [other] if other else [o for o in lines.values() if o.generator_id != line.generator_id]
    result = []
    for o in others:
        difference = minimum_detectable_difference(line.overall, o.overall)
        result.append(Detectable(o.generator_id, o.generator_model, difference.minimum, difference.undefined))
    return result
