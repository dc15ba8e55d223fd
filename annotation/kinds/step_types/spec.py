"""The `step_types` kind (the SIO paper, §3 and appendix A.1): an item is a procedure (L1); the participant
reads every step, then marks the candidates that hold (adjacent pairs that must stay in order, pairs after
an anchor that can be swapped, steps after an anchor that can be skipped), says for each marked one whether
expert/domain knowledge is needed, and whether the task as a whole needs it.

Stored: one StepTypeLabel per candidate of the procedure (holds False where not marked) and the task-level
answer in Annotation.answer["expert_knowledge"]. An attention check is a procedure whose instruction names
the one candidate to mark (payload["expects"]): passed when exactly that one is marked, and said to need no
expert knowledge."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from importlib import import_module
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import URLPattern, reverse

from annotation.base.beyond_majority import CategoricalQuestion
from annotation.base.models import Annotation, Assignment, Study, StudyItem
from annotation.base.posted import posted_active_seconds
from annotation.base.spec import (
    AnnotationFields,
    AttentionFields,
    KindForm,
    ReadingTexts,
    StudyKindSpec,
    attention_items_create,
    subject_key,
)
from annotation.base.types import Refused, Selection
from annotation.kinds.step_types import guidelines
from annotation.kinds.step_types.candidates import Candidate, StepType, candidates
from annotation.kinds.step_types.exports import LABEL_FIELDS, study_label_rows
from annotation.kinds.step_types.models import StepCandidate, StepTypeLabel
from annotation.kinds.step_types.name import KIND
from annotation.kinds.step_types.questions import step_type_questions
from h2e_site.inputs import BadInput, clean_text, one_answer
from mining.models import Procedure, Split

# The kind's pages and routes, fetched by name where the engine asks for them (the spec imports no views).
VIEWS = f"{__package__}.views"
URLS = f"{__package__}.urls"

MAX_COMMENTS_CHARS = 10000
CONSENT = """This study is run by researchers studying how people and AI systems understand step-by-step \
instructions.

You will read the steps of a task and mark which steps must stay in order, which can be swapped and which \
can be skipped, and whether that takes expert knowledge.

Taking part is voluntary and you may stop at any time by returning the study on Prolific. What is recorded \
about you is listed below.

Click "I agree" to take part."""
MIN_STEPS = 3  # fewer steps have no interchangeable or optional candidate
EXPERT_ANSWERS = {"yes": True, "no": False}
TYPE_QUESTIONS = {
    StepType.SEQUENTIAL: "Which step pairs must stay in this order (the task fails if they are swapped)?",
    StepType.INTERCHANGEABLE: "At each anchor step, which two following steps can be done in either order?",
    StepType.OPTIONAL: "At each anchor step, which following step can be skipped (going on with the next)?",
}
GOAL_ACKNOWLEDGEMENT = (
    "I've read the task and understand that I judge how its steps relate: which must stay in order, "
    "which can be swapped and which can be skipped."
)
ATTENTION_INSTRUCTION = (
    "This is an attention check. Mark only the {label} candidate {steps}, say that it needs no expert "
    "knowledge, and mark nothing else."
)


@dataclass(frozen=True)
class StepTypesSubmission:
    """What the participant's browser sent: marked candidate key -> expert knowledge needed (None: not
    answered), and the task-level answer (None: not answered)."""

    marks: dict[str, bool | None]
    expert_knowledge: bool | None
    comments: str = ""
    active_seconds: float | None = None
    user_agent: str = ""


@dataclass(frozen=True)
class CandidateRow:
    """One candidate as the form lists it."""

    key: str
    step_type: str
    label: str  # "Steps 2 → 3", "At step 1: steps 2 and 3", "At step 1: step 2"
    marked: bool
    expert: str  # "yes", "no" or "" (not answered)
    error: str = ""
    steps_text: str = ""  # the texts of the steps it is about, shortened


@dataclass
class TypeGroup:
    step_type: str
    title: str
    question: str
    rows: list[CandidateRow] = field(default_factory=list)


def candidate_label(candidate: Candidate) -> str:
    """How the form names a candidate, with the steps numbered as the page shows them (0-based, as the
    paper's annotators saw them)."""
    if candidate.step_type is StepType.SEQUENTIAL:
        return f"Step {candidate.steps[0]} → step {candidate.steps[1]}"
    if candidate.step_type is StepType.INTERCHANGEABLE:
        return f"At step {candidate.anchor}: steps {candidate.steps[0]} and {candidate.steps[1]}"
    return f"At step {candidate.anchor}: step {candidate.steps[0]}"


def procedure_candidates(procedure: Procedure) -> list[StepCandidate]:
    """The procedure's StepCandidate rows, created on first use (idempotent)."""
    wanted = candidates(len(procedure.steps))
    StepCandidate.objects.bulk_create(
        [
            StepCandidate(
                procedure=procedure,
                step_type=c.step_type.value,
                key=c.key,
                anchor=c.anchor,
                first=c.steps[0],
                second=c.steps[1] if len(c.steps) > 1 else None,
                position=i,
            )
            for i, c in enumerate(wanted)
        ],
        ignore_conflicts=True,
    )
    return list(StepCandidate.objects.filter(procedure=procedure).order_by("position"))


def procedures_selected(selection: Selection) -> list[int]:
    """Ids of procedures with at least MIN_STEPS steps matching the selection (a seeded sample if asked)."""
    ids = [
        pk
        for pk, steps in _filtered(Procedure.objects.all(), selection).values_list("pk", "steps")
        if isinstance(steps, list) and len(steps) >= MIN_STEPS
    ]
    ids.sort()
    if selection.sample_size is not None and selection.sample_size < len(ids):
        ids = sorted(random.Random(selection.seed).sample(ids, selection.sample_size))
    return ids


def _filtered(procedures: Any, selection: Selection) -> Any:
    if selection.topic_ids:
        procedures = procedures.filter(topic_id__in=selection.topic_ids)
    if selection.splits:
        procedures = procedures.filter(split__in=selection.splits)
    return procedures


class StepTypes(StudyKindSpec):
    kind = KIND
    summary = (
        "where they mark which steps of a procedure must stay in order, can be swapped or can be skipped"
    )
    on_overview = True
    item_template = "annotation/item_step_types.html"
    study_items_template = "annotation/kinds/_items_step_types.html"
    # An item is a procedure: its steps are read and typed.
    item_related = ("procedure",)
    item_page_fields = ("procedure__goal", "procedure__steps", "procedure__resources", "procedure__topic_id")
    item_listed = ("procedure__topic",)
    nothing_selected = (
        f"no procedure of the chosen topics and splits has {MIN_STEPS} steps or more (fewer have no "
        "step type to mark). Choose other topics or splits."
    )
    reading = ReadingTexts(
        before_goal="Confirm that you have read the goal before reading the steps.",
        out_of_order="Read the steps in order: the next one is step {next}.",
        unacknowledged="Confirm that you have read the goal before submitting.",
        unread="Read every step before submitting ({read} of {total} read).",
    )

    def study_links(self, study: Study) -> list[tuple[str, str]]:
        return [("Models (F1)", reverse("annotation:step_type_models", args=[study.slug]))]

    def study_defaults(self) -> dict[str, Any]:
        return {
            "instructions": guidelines.GUIDELINES,
            "training_text": guidelines.TRAINING,
            "comprehension_questions": guidelines.default_comprehension_questions(),
            "consent_text": CONSENT,
        }

    def builder_fields(self) -> dict[str, forms.Field]:
        return {
            "splits": forms.MultipleChoiceField(
                choices=Split.choices,
                required=False,
                widget=forms.CheckboxSelectMultiple,
                help_text="procedures of these splits; none: any split",
            )
        }

    def selection_from(self, data: dict[str, Any]) -> dict[str, Any]:
        return {"splits": list(data["splits"])}

    def items_create(self, study: Study, selection: Selection, attention_checks: int) -> int:
        procedure_ids = procedures_selected(selection)
        StudyItem.objects.bulk_create(
            StudyItem(
                study=study,
                procedure_id=p,
                subject_key=subject_key("procedure", p),
                position=i,
                target_annotations=study.annotators_per_item,
            )
            for i, p in enumerate(procedure_ids, 1)
        )
        fields = _attention_fields(procedure_ids, attention_checks)
        attention_items_create(study, "procedure", procedure_ids, attention_checks, fields)
        return len(procedure_ids)

    def reading_steps(self, item: StudyItem, presentation: dict[str, Any]) -> list[str]:
        assert item.procedure is not None
        return [str(step) for step in item.procedure.steps]

    def item_context(self, assignment: Assignment) -> dict[str, Any]:
        item = assignment.item
        assert item.procedure is not None
        instruction = ""
        if item.is_attention_check:
            expected = Candidate.from_key(item.payload["expects"])
            instruction = ATTENTION_INSTRUCTION.format(
                label=expected.step_type.value, steps=f"“{candidate_label(expected)}”"
            )
        return {
            "procedure": item.procedure,
            "steps": [str(s) for s in item.procedure.steps],
            "attention_instruction": instruction,
            "type_questions": TYPE_QUESTIONS,
            "goal_acknowledgement": GOAL_ACKNOWLEDGEMENT,
        }

    def empty_form(self, assignment: Assignment) -> dict[str, Any]:
        return {"groups": _groups(assignment, set(), {}), "expert_knowledge": "", "comments": ""}

    def parse_form(self, post: QueryDict, assignment: Assignment, *, user_agent: str) -> KindForm:
        keys = {c.key for c in candidates(assignment.n_reading_steps)}
        marked = [clean_text(value) for value in post.getlist("mark")]
        experts = {key: clean_text(post.get(f"expert-{key}", "")) for key in keys}
        task = clean_text(post.get("expert_knowledge", ""))
        comments = clean_text(post.get("comments", ""))
        values = {
            "groups": _groups(assignment, set(marked) & keys, experts),
            "expert_knowledge": task,
            "comments": comments,
        }
        try:
            _check_posted(post, marked, keys, experts, task)
        except BadInput as problem:
            return KindForm(values, None, problem, problem.field)
        submission = StepTypesSubmission(
            marks={key: EXPERT_ANSWERS.get(experts[key]) for key in marked},
            expert_knowledge=EXPERT_ANSWERS.get(task),
            comments=comments,
            active_seconds=posted_active_seconds(post),
            user_agent=clean_text(user_agent),
        )
        return KindForm(values, submission)

    def refused_form(self, form: KindForm, message: str, field: str) -> dict[str, Any]:
        groups = [
            TypeGroup(
                g.step_type,
                g.title,
                g.question,
                [replace(r, error=message) if field == f"expert-{r.key}" else r for r in g.rows],
            )
            for g in form.values["groups"]
        ]
        return {**form.values, "groups": groups, "error_field": field}

    def check(self, submission: StepTypesSubmission, item: StudyItem, assignment: Assignment) -> None:
        if len(submission.comments) > MAX_COMMENTS_CHARS:
            raise Refused(
                f"The comments are too long (at most {MAX_COMMENTS_CHARS} characters).", field="comments"
            )
        keys = {c.key for c in candidates(assignment.n_reading_steps)}
        unknown = sorted(set(submission.marks) - keys)
        if unknown:
            raise Refused(f"{unknown[0]!r} is not a candidate of this procedure.", field="mark")
        for candidate in candidates(assignment.n_reading_steps):
            if candidate.key in submission.marks and submission.marks[candidate.key] is None:
                raise Refused(
                    f"{candidate_label(candidate)} ({candidate.step_type.value}): say whether it needs "
                    "expert or domain knowledge.",
                    field=f"expert-{candidate.key}",
                )
        if submission.expert_knowledge is None:
            raise Refused(
                "Say whether the task as a whole needs expert or domain knowledge.", field="expert_knowledge"
            )

    def annotation_fields(self, submission: StepTypesSubmission, item: StudyItem) -> AnnotationFields:
        passed = None
        if item.is_attention_check:  # exactly the named candidate, said to need no expert knowledge
            passed = submission.marks == {item.payload["expects"]: False}
        return AnnotationFields(
            answer={"expert_knowledge": submission.expert_knowledge}, attention_passed=passed
        )

    def store_details(self, annotation: Annotation, submission: StepTypesSubmission, item: StudyItem) -> None:
        assert item.procedure is not None
        pid = annotation.participant.prolific_pid
        StepTypeLabel.objects.bulk_create(
            StepTypeLabel(
                candidate=candidate,
                annotation=annotation,
                annotator=pid,
                holds=candidate.key in submission.marks,
                expert=submission.marks.get(candidate.key),
            )
            for candidate in procedure_candidates(item.procedure)
        )

    def page_urls(self) -> list[URLPattern]:
        return import_module(URLS).page_urls

    def agreement_urls(self) -> list[URLPattern]:
        return import_module(URLS).agreement_urls

    def api_urls(self) -> list[URLPattern]:
        """A study's or a label set's Table 6 figures (annotation/kinds/step_types/agreement_api.py)."""
        return import_module(URLS).api_urls

    def api_routes(self) -> list[URLPattern]:
        return import_module(URLS).api_routes

    def agreement_page(self, request: HttpRequest, study: Study) -> HttpResponse:
        return import_module(VIEWS).study_agreement_page(request, study)

    def agreement_overview(self, request: HttpRequest) -> str:
        return import_module(VIEWS).overview_section(request)

    def categorical_questions(self, study: Study) -> list[CategoricalQuestion]:
        return step_type_questions(study)

    def export_rows(self, study: Study) -> Iterator[dict[str, Any]]:
        return study_label_rows(study)

    def export_fields(self) -> list[str]:
        return LABEL_FIELDS


def _check_posted(
    post: QueryDict, marked: list[str], keys: set[str], experts: dict[str, str], task: str
) -> None:
    """BadInput (a 400 naming the field and value) for a candidate that does not exist, a mark or an answer
    sent twice, an answer that is not yes or no, or an expert answer for a candidate that is not marked."""
    for name in ("expert_knowledge", *(f"expert-{key}" for key in sorted(keys))):
        one_answer(post, name)
    for key in marked:
        if key not in keys:
            raise BadInput("mark", key, "a candidate of this procedure")
    if len(set(marked)) != len(marked):
        raise BadInput("mark", ",".join(marked)[:80], "a candidate marked once")
    for name in post:
        if name.startswith("expert-") and name.removeprefix("expert-") not in keys:
            raise BadInput(name, post.get(name, ""), "an expert answer for a candidate of this procedure")
    for key, answer in experts.items():
        if answer not in {"", *EXPERT_ANSWERS}:
            raise BadInput(f"expert-{key}", answer, "yes or no")
        if answer and key not in marked:
            raise BadInput(f"expert-{key}", answer, "an answer here: the candidate is not marked")
    if task not in {"", *EXPERT_ANSWERS}:
        raise BadInput("expert_knowledge", task, "yes or no")


def _groups(assignment: Assignment, marked: set[str], experts: dict[str, str]) -> list[TypeGroup]:
    """The form's candidates by type, each with the texts of the steps it is about."""
    steps = assignment.item.procedure.steps if assignment.item.procedure else []
    groups = {t: TypeGroup(t.value, t.value.capitalize(), TYPE_QUESTIONS[t]) for t in StepType}
    for candidate in candidates(assignment.n_reading_steps):
        key = candidate.key
        texts = " / ".join(_short(str(steps[i])) for i in candidate.steps if i < len(steps))
        label = candidate_label(candidate)
        row = CandidateRow(
            key, candidate.step_type.value, label, key in marked, experts.get(key, ""), "", texts
        )
        groups[candidate.step_type].rows.append(row)
    return [group for group in groups.values() if group.rows]


def _short(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _attention_fields(procedure_ids: list[int], count: int) -> AttentionFields:
    """The one candidate an attention check names: a sequential pair, or an optional step, alternately."""
    steps = dict(Procedure.objects.filter(pk__in=procedure_ids).values_list("pk", "steps")) if count else {}

    def fields(rng: random.Random, pk: int, i: int) -> dict[str, Any]:
        wanted = StepType.OPTIONAL if i % 2 else StepType.SEQUENTIAL
        options = [c for c in candidates(len(steps[pk])) if c.step_type is wanted]
        return {"payload": {"expects": rng.choice(options).key}}

    return fields


__all__ = [
    "StepTypes",
    "StepTypesSubmission",
    "candidate_label",
    "procedure_candidates",
    "procedures_selected",
]
