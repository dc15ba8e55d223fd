"""The `pairwise` kind: an item is two L2s of the same goal from two generators, shown side by side under the
goal's L1. Which L2 is on the left is drawn per participant (balanced over the item's k participants) and
stored on the assignment. The participant reads both L2s (the reading gate covers every step of both), says
which has fewer critical failures (left, right, both have none, both fail equally) and lists each critical
failure, described and linked to the L1 steps and the steps of the L2 it is in.

Its items' pair of generations is this kind's own table (annotation/kinds/pairwise/models.py: PairwiseItem);
the
item's subject is "pair:<generation A>:<generation B>", A being the generation whose generator_id sorts
first (annotation/kinds/pairwise/comparisons.py's orientation). Its data, figures and API are in
annotation/kinds/pairwise/, its
pages (figures, its LLM twin: the pairwise judge job on the same pairs) in
annotation/kinds/pairwise/views.py."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from importlib import import_module
from itertools import combinations
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import URLPattern

from annotation.base import codebook
from annotation.base.beyond_majority import CategoricalQuestion
from annotation.base.models import Annotation, Assignment, Study, StudyItem
from annotation.base.posted import posted_active_seconds
from annotation.base.spec import (
    AnnotationFields,
    KindForm,
    ReadingTexts,
    StudyKindSpec,
    failure_entry_field,
    refused_entry_field,
    subject_key,
)
from annotation.base.types import Refused, Selection
from annotation.kinds.pairwise import data, guidelines
from annotation.kinds.pairwise.guidelines import SIDE_WORDS, VERDICTS
from annotation.kinds.pairwise.models import PairwiseItem, pair_of
from annotation.kinds.pairwise.name import KIND
from annotation.kinds.pairwise.questions import outcome_question
from h2e_site.inputs import BadInput, ascii_ints, clean_text, one_answer
from judging.models import Generation, Generator

# The kind's pages and routes, fetched by name where the engine asks for them (the spec imports no views).
VIEWS = f"{__package__}.views"
URLS = f"{__package__}.urls"

SIDES = ("left", "right")
MAX_DESCRIPTION_CHARS = 4000
MAX_COMMENTS_CHARS = 10000
MAX_FAILURES = 50
_FAILURE_KEY = re.compile(r"failure-([0-9]{1,3})-description", re.ASCII)


@dataclass(frozen=True)
class PairFailure:
    """A critical failure as the form shows it: in the left or the right L2, described, linked to steps."""

    index: int
    side: str
    description: str
    l1: set[int]
    l2: set[int]
    error: str = ""

    def with_error(self, error: str) -> PairFailure:
        return replace(self, error=error)


@dataclass
class PairSubmission:
    verdict: str
    left: str  # the generation shown on the left, "a" or "b" (the assignment's presentation)
    failures: list[PairFailure] = field(default_factory=list)
    comments: str = ""
    active_seconds: float | None = None
    user_agent: str = ""


def _blank_failure() -> PairFailure:
    return PairFailure(0, "", "", set(), set())


class Pairwise(StudyKindSpec):
    kind = KIND
    summary = "where they say which of two L2s of one goal has fewer critical failures"
    item_template = "annotation/item_pairwise.html"
    study_items_template = "annotation/kinds/_items_pairwise.html"
    study_page_template = "annotation/kinds/_study_pairwise.html"
    item_related = ("pair__generation_a__procedure", "pair__generation_b")
    item_page_fields = (
        "pair__generation_a__predicted_steps",
        "pair__generation_a__procedure__goal",
        "pair__generation_a__procedure__steps",
        "pair__generation_a__procedure__resources",
        "pair__generation_b__predicted_steps",
    )
    item_unshown = (
        "pair__generation_a__prompt",
        "pair__generation_a__model_completion",
        "pair__generation_a__procedure__source_text",
        "pair__generation_b__prompt",
        "pair__generation_b__model_completion",
    )
    item_listed = (
        "pair__generation_a__procedure",
        "pair__generation_a__generator",
        "pair__generation_b__generator",
    )
    nothing_selected = (
        "no goal with L2s (without an error) from two of the chosen generators. Generate L2 with at least "
        "two generators on the same goals first, or widen the selection."
    )
    reading = ReadingTexts(
        before_goal="Confirm that you have read the goal before reading the two L2s.",
        out_of_order="Read the steps in order, the first L2 first: the next one is step {next}.",
        unacknowledged="Confirm that you have read the goal before submitting.",
        unread="Read every step of both L2s before submitting ({read} of {total} read).",
    )

    def study_defaults(self) -> dict[str, Any]:
        return {
            "instructions": guidelines.GUIDELINES,
            "training_text": guidelines.TRAINING,
            "comprehension_questions": guidelines.default_comprehension_questions(),
        }

    # --- the study builder -------------------------------------------------------------------------------

    def builder_fields(self) -> dict[str, forms.Field]:
        return {
            "generators": forms.ModelMultipleChoiceField(
                Generator.objects.all(),
                help_text="two or more: each item pairs the L2s of two of them on one goal, balanced over "
                "the pairs of generators",
            )
        }

    def builder_clean(self, data: dict[str, Any]) -> None:
        if "generators" in data and len(data["generators"]) < 2:
            raise ValidationError({"generators": "Choose at least two generators to compare."})

    def selection_from(self, data: dict[str, Any]) -> dict[str, Any]:
        return {"generator_ids": [g.pk for g in data["generators"]]}

    def builder_names(self) -> dict[str, str]:
        return {"generator_ids": "generators"}

    def check_selection(self, selection: Selection) -> None:
        super().check_selection(selection)
        if len(set(selection.generator_ids)) < 2:
            raise ValidationError({"generator_ids": "a pairwise study compares at least two generators"})

    def items_create(self, study: Study, selection: Selection, attention_checks: int) -> int:
        pairs = pairs_selected(selection)
        items = StudyItem.objects.bulk_create(
            StudyItem(
                study=study,
                subject_key=subject_key("pair", a, b),
                position=i,
                target_annotations=study.annotators_per_item,
            )
            for i, (a, b) in enumerate(pairs, 1)
        )
        _attention_items_create(study, pairs, attention_checks)
        PairwiseItem.objects.bulk_create(
            PairwiseItem(item=item, generation_a_id=a, generation_b_id=b)
            for item, (a, b) in zip(items, pairs, strict=True)
        )
        return len(pairs)

    # --- reading and the item page -----------------------------------------------------------------------

    def presentation(self, item: StudyItem, slot: int) -> dict[str, Any]:
        """A on the left or on the right: a coin seeded by the item, alternating over its participants (so
        each item is shown both ways as evenly as k allows)."""
        first = random.Random(f"pairwise-{item.study_id}-{item.pk}").random() < 0.5
        a_left = first if slot % 2 == 0 else not first
        return {"left": "a" if a_left else "b"}

    def reading_steps(self, item: StudyItem, presentation: dict[str, Any]) -> list[str]:
        left, right = sides(item, presentation)
        return [str(step) for step in [*left.predicted_steps, *right.predicted_steps]]

    def item_context(self, assignment: Assignment) -> dict[str, Any]:
        item = assignment.item
        left, right = sides(item, assignment.presentation)
        procedure = pair_of(item).generation_a.procedure
        n_left = len(left.predicted_steps)
        return {
            "procedure": procedure,
            "l1_steps": [str(s) for s in procedure.steps],
            "l1_numbers": range(1, len(procedure.steps) + 1),
            "n_left": n_left,
            "right_offset": -n_left,
            "pair_numbers": range(1, max(n_left, len(right.predicted_steps)) + 1),
            "verdicts": VERDICTS,
            "guidelines": guidelines,
            "attention_instruction": _attention_instruction(item),
        }

    def empty_form(self, assignment: Assignment) -> dict[str, Any]:
        return {"verdict": "", "failures": [_blank_failure()], "comments": ""}

    def parse_form(self, post: QueryDict, assignment: Assignment, *, user_agent: str) -> KindForm:
        values: dict[str, Any] = {
            "verdict": post.get("verdict", ""),
            "failures": [],
            "comments": clean_text(post.get("comments", "")),
        }
        try:
            values["verdict"] = one_answer(post, "verdict")  # sent twice: refused, not read as its last value
            values["failures"] = _posted_failures(post, assignment)
            if values["verdict"] not in {"", *VERDICTS}:
                raise BadInput("verdict", values["verdict"], " or ".join(VERDICTS))
        except BadInput as problem:
            return KindForm(values, None, problem, failure_entry_field(problem.field))
        submission = PairSubmission(
            verdict=values["verdict"],
            left=assignment.presentation.get("left", "a"),
            failures=[f for f in values["failures"] if f.description or f.l1 or f.l2 or f.side],
            comments=values["comments"],
            active_seconds=posted_active_seconds(post),
            user_agent=clean_text(user_agent),
        )
        return KindForm(values, submission)

    def refused_form(self, form: KindForm, message: str, field: str) -> dict[str, Any]:
        failures = form.values["failures"] or [_blank_failure()]
        field = refused_entry_field(field, failures)
        failures = [f.with_error(message) if field == f"failure-{f.index}" else f for f in failures]
        return {**form.values, "failures": failures, "error_field": field}

    # --- submissions ---------------------------------------------------------------------------------------

    def check(self, submission: PairSubmission, item: StudyItem, assignment: Assignment) -> None:
        left, right = sides(item, assignment.presentation)
        n_steps = {"left": len(left.predicted_steps), "right": len(right.predicted_steps)}
        check_answer(submission, n_l1=len(pair_of(item).generation_a.procedure.steps), n_steps=n_steps)
        if not item.is_attention_check:
            check_consistent(submission)

    def annotation_fields(self, submission: PairSubmission, item: StudyItem) -> AnnotationFields:
        return AnnotationFields(
            n_failures=len(submission.failures),
            answer={
                "left": submission.left,
                "verdict": submission.verdict,
                "failures": [_stored(f) for f in submission.failures],
            },
            attention_passed=submission.verdict == item.payload.get("expects")
            if item.is_attention_check
            else None,
        )

    def store_details(self, annotation: Annotation, submission: PairSubmission, item: StudyItem) -> None:
        return None  # the answer (verdict, side shown left, failures) is the Annotation's `answer`

    # --- agreement, exports, pages -------------------------------------------------------------------------

    def agreement_page(self, request: HttpRequest, study: Study) -> HttpResponse:
        return import_module(VIEWS).agreement_page(request, study)

    def categorical_questions(self, study: Study) -> list[CategoricalQuestion]:
        return [outcome_question(study)]

    def study_page_context(
        self, request: HttpRequest, study: Study, refused: forms.Form | None
    ) -> dict[str, Any]:
        return import_module(VIEWS).study_section_context(study, refused)

    def export_rows(self, study: Study) -> Iterator[dict[str, Any]]:
        return data.export_rows(study)

    def export_fields(self) -> list[str]:
        return data.EXPORT_FIELDS

    def page_urls(self) -> list[URLPattern]:
        return import_module(URLS).page_urls

    def api_urls(self) -> list[URLPattern]:
        return import_module(URLS).api_urls


def sides(item: StudyItem, presentation: dict[str, Any]) -> tuple[Generation, Generation]:
    """(left, right) generations as the presentation shows them."""
    pair = pair_of(item)
    a, b = pair.generation_a, pair.generation_b
    return (a, b) if presentation.get("left", "a") == "a" else (b, a)


# --- the builder's pairs ------------------------------------------------------------------------------------


def pairs_selected(selection: Selection) -> list[tuple[int, int]]:
    """(generation A, generation B) pairs: on each goal, one L2 per chosen generator (its first without an
    error), every pair of generators with both; with a sample size, a seeded draw that takes the pairs of
    generators in turn (so each pair of generators is as equally represented as the goals allow)."""
    by_pair = _candidates(selection)
    rng = random.Random(selection.seed)
    queues = {key: rng.sample(pairs, len(pairs)) for key, pairs in sorted(by_pair.items())}
    limit = selection.sample_size if selection.sample_size is not None else sum(map(len, queues.values()))
    chosen: list[tuple[int, int]] = []
    while len(chosen) < limit and any(queues.values()):
        for queue in queues.values():
            if queue and len(chosen) < limit:
                chosen.append(queue.pop())
    return chosen


def _candidates(selection: Selection) -> dict[tuple[str, str], list[tuple[int, int]]]:
    generations = Generation.objects.filter(error="", generator_id__in=selection.generator_ids).exclude(
        predicted_steps=[]
    )
    if selection.topic_ids:
        generations = generations.filter(procedure__topic_id__in=selection.topic_ids)
    first: dict[int, dict[str, int]] = defaultdict(dict)
    rows = generations.order_by("pk").values_list("procedure_id", "generator__generator_id", "pk")
    for procedure_id, generator, pk in rows:
        first[procedure_id].setdefault(generator, pk)
    by_pair: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for procedure_id in sorted(first):
        of_goal = first[procedure_id]
        for a, b in combinations(sorted(of_goal), 2):
            by_pair[(a, b)].append((of_goal[a], of_goal[b]))
    return by_pair


def _attention_items_create(study: Study, pairs: list[tuple[int, int]], count: int) -> None:
    """Instructed-response items on pairs of the study, after its regular items: "choose the left L2" and
    "choose the right L2", alternately (seeded by the selection's seed)."""
    if not pairs or count <= 0:
        return
    rng = random.Random(f"attention-{study.selection.get('seed', 0)}")
    drawn = [rng.choice(pairs) for _ in range(count)]
    items = StudyItem.objects.bulk_create(
        StudyItem(
            study=study,
            subject_key=subject_key("pair", a, b),
            position=len(pairs) + i,
            target_annotations=0,
            is_attention_check=True,
            payload={"expects": SIDES[i % 2]},
        )
        for i, (a, b) in enumerate(drawn, 1)
    )
    PairwiseItem.objects.bulk_create(
        PairwiseItem(item=item, generation_a_id=a, generation_b_id=b)
        for item, (a, b) in zip(items, drawn, strict=True)
    )


def _attention_instruction(item: StudyItem) -> str:
    if not item.is_attention_check:
        return ""
    return codebook.ATTENTION_CHECK_INSTRUCTION.format(label=VERDICTS[item.payload.get("expects", "left")])


# --- the form ----------------------------------------------------------------------------------------------


def _posted_failures(post: QueryDict, assignment: Assignment) -> list[PairFailure]:
    indexes = sorted({int(m.group(1)) for key in post if (m := _FAILURE_KEY.fullmatch(key))})
    if len(indexes) > MAX_FAILURES:
        raise BadInput("failures", f"{len(indexes)} entries", f"at most {MAX_FAILURES} critical failures")
    left, right = sides(assignment.item, assignment.presentation)
    n_l1 = len(pair_of(assignment.item).generation_a.procedure.steps)
    n_l2 = max(len(left.predicted_steps), len(right.predicted_steps))
    return [_posted_failure(post, index, n_l1=n_l1, n_l2=n_l2) for index in indexes]


def _posted_failure(post: QueryDict, index: int, *, n_l1: int, n_l2: int) -> PairFailure:
    def steps(part: str, n: int) -> set[int]:
        name = f"failure-{index}-{part}"
        expected = f"an {part.upper()} step number (1 to {n})"
        return set(ascii_ints(name, post.getlist(name), minimum=1, maximum=n, expected=expected))

    side = one_answer(post, f"failure-{index}-side")
    if side not in {"", *SIDES}:
        raise BadInput(f"failure-{index}-side", side, "left or right")
    description = clean_text(one_answer(post, f"failure-{index}-description"))
    return PairFailure(index, side, description, steps("l1", n_l1), steps("l2", n_l2))


def _stored(failure: PairFailure) -> dict[str, Any]:
    return {
        "side": failure.side,
        "description": failure.description.strip(),
        "l1_steps": sorted(failure.l1),
        "l2_steps": sorted(failure.l2),
    }


# --- checks ----------------------------------------------------------------------------------------------


def check_answer(submission: PairSubmission, *, n_l1: int, n_steps: dict[str, int]) -> None:
    """A verdict, comments within bounds, and every failure described, in one L2, linked to its steps."""
    if submission.verdict not in VERDICTS:
        raise Refused("Choose which L2 has fewer critical failures.", field="verdict")
    if len(submission.comments) > MAX_COMMENTS_CHARS:
        raise Refused(
            f"The comments are too long (at most {MAX_COMMENTS_CHARS} characters).", field="comments"
        )
    for n, failure in enumerate(submission.failures, 1):
        _check_failure(n, failure, n_l1=n_l1, n_steps=n_steps)


def _check_failure(n: int, failure: PairFailure, *, n_l1: int, n_steps: dict[str, int]) -> None:
    field = f"failure:{n}"
    if failure.side not in SIDES:
        raise Refused(f"Critical failure {n}: say whether it is in the first or the second L2.", field=field)
    if not failure.description.strip():
        raise Refused(f"Critical failure {n} needs a description.", field=field)
    if len(failure.description) > MAX_DESCRIPTION_CHARS:
        raise Refused(
            f"The description of critical failure {n} is too long (at most {MAX_DESCRIPTION_CHARS} "
            "characters).",
            field=field,
        )
    if not failure.l1 and not failure.l2:
        raise Refused(f"Critical failure {n}: select the L1 and/or L2 step(s) it concerns.", field=field)
    if any(s > n_l1 for s in failure.l1) or any(s > n_steps[failure.side] for s in failure.l2):
        raise Refused(
            f"Critical failure {n} links to a step the {failure.side} L2 (or L1) does not have.", field=field
        )


def check_consistent(submission: PairSubmission) -> None:
    """The verdict says what the failures listed show: none for "both_none", as many on each side (at least
    one) for "both_fail", fewer on the chosen side (at least one on the other) for "left" and "right"."""
    counts = {side: sum(f.side == side for f in submission.failures) for side in SIDES}
    verdict = submission.verdict
    if verdict == "both_none" and submission.failures:
        raise Refused(
            "You listed critical failures: choose which L2 has fewer, or remove them.", field="verdict"
        )
    if verdict == "both_fail" and (min(counts.values()) == 0 or counts["left"] != counts["right"]):
        raise Refused(
            "“Both fail equally”: list as many critical failures for each L2 (at least one each).",
            field="verdict",
        )
    if verdict in SIDES:
        other = "right" if verdict == "left" else "left"
        if counts[other] == 0 or counts[verdict] >= counts[other]:
            raise Refused(
                f"You chose the {SIDE_WORDS[verdict]} L2: list the critical failures of the "
                f"{SIDE_WORDS[other]} L2 (more than the {SIDE_WORDS[verdict]} one has).",
                field="verdict",
            )


__all__ = ["KIND", "PairSubmission", "Pairwise", "check_answer", "pairs_selected", "sides"]
