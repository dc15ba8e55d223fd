"""The `multiple_choice` kind (the wikiHow goal-step paper, §3.4 and appendix E): an item is one example of
a task set's test split (goal_step.TaskExample); three workers choose the most likely candidate, or the HIT's
last option ("None of the above is likely"; for Step Ordering, "Neutral"). Nothing to reveal step by step:
the prompt is acknowledged, then answered. The answer is stored in Annotation.answer as {"choice": index or
"none", "correct": bool}; the validation (annotation/kinds/multiple_choice/validation.py) keeps the examples
that every
worker answered correctly. An attention check names the candidate to choose."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import URLPattern, reverse
from django.utils.html import format_html

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
from annotation.kinds.multiple_choice import guidelines
from annotation.kinds.multiple_choice.name import KIND
from annotation.kinds.multiple_choice.questions import choice_questions
from goal_step.models import GoalStepTask, TaskExample, TaskSet, TaskSplit
from goal_step.options import MAX_CANDIDATES, option_letter
from h2e_site.inputs import BadInput, ascii_int, clean_text

# The kind's pages and routes, fetched by name where the engine asks for them (the spec imports no views).
VIEWS = f"{__package__}.views"
URLS = f"{__package__}.urls"

MAX_COMMENTS_CHARS = 10000
NONE = "none"
ATTENTION_INSTRUCTION = (
    "This is an attention check: choose option {letter} (“{text}”), whatever the question."
)


@dataclass(frozen=True)
class MultipleChoiceSubmission:
    choice: int | str | None  # a candidate's index, NONE, or None when nothing was chosen
    comments: str = ""
    active_seconds: float | None = None
    user_agent: str = ""


def examples_selected(selection: Selection) -> list[int]:
    """Ids of the test examples of the selection's task set (of its tasks, if named), a seeded sample when
    asked. ValueError naming the task set when there is none."""
    task_set = TaskSet.objects.filter(name=selection.task_set).first()
    if task_set is None:
        raise ValueError(f"task_set: no task set named {selection.task_set!r}")
    examples = TaskExample.objects.filter(task_set=task_set, split=TaskSplit.TEST)
    if selection.tasks:
        examples = examples.filter(task__in=selection.tasks)
    if selection.topic_ids:
        examples = examples.filter(topic_id__in=selection.topic_ids)
    ids = sorted(examples.values_list("pk", flat=True))
    if selection.sample_size is not None and selection.sample_size < len(ids):
        ids = sorted(random.Random(selection.seed).sample(ids, selection.sample_size))
    _check_options(task_set, ids)
    return ids


def _check_options(task_set: TaskSet, example_ids: list[int]) -> None:
    """ValidationError on task_set naming the first selected example whose candidates are not 2 to
    MAX_CANDIDATES texts (the options are lettered A to Z); the study builder shows it on the field."""
    rows = TaskExample.objects.filter(pk__in=example_ids).order_by("task", "position")
    for task, position, candidates in rows.values_list("task", "position", "candidates").iterator():
        if not (
            isinstance(candidates, list)
            and 2 <= len(candidates) <= MAX_CANDIDATES
            and all(isinstance(text, str) for text in candidates)
        ):
            n = len(candidates) if isinstance(candidates, list) else "no list of"
            raise ValidationError(
                {
                    "task_set": f"{task} example {position} of {task_set.name!r} has {n} candidates; a "
                    f"multiple-choice item shows 2 to {MAX_CANDIDATES} texts (options A to Z)"
                }
            )


def is_correct(example: TaskExample, choice: int | str | None) -> bool:
    return isinstance(choice, int) and choice == example.answer


NO_STEPS = "This question has no steps to reveal: read it and choose one of the options."


class MultipleChoice(StudyKindSpec):
    kind = KIND
    summary = (
        "where they answer a task set's goal-step inference and step-ordering examples, to validate them"
    )
    item_template = "annotation/item_multiple_choice.html"
    study_items_template = "annotation/kinds/_items_multiple_choice.html"
    # An item is a task set's example: its prompt and candidates.
    item_related = ("example",)
    item_page_fields = ("example__task", "example__prompt", "example__candidates", "example__answer")
    item_listed = ("example__task_set",)
    nothing_selected = (
        "the task set has no test example of the chosen tasks and topics. Choose other tasks or topics, "
        "or another task set."
    )
    reading = ReadingTexts(  # no steps to reveal: the question and its options are shown whole
        before_goal=NO_STEPS,
        out_of_order=NO_STEPS,
        unacknowledged="Confirm that you have read the question before choosing an answer.",
        unread="Read the question before choosing an answer.",
    )

    def study_defaults(self) -> dict[str, Any]:
        return {
            "instructions": guidelines.GUIDELINES,
            "training_text": guidelines.TRAINING,
            "comprehension_questions": guidelines.default_comprehension_questions(),
            "consent_text": guidelines.CONSENT,
            "min_dwell_seconds": 5,  # the HIT's 20 s a task, 15 or 30 tasks in 5 minutes
            "estimated_item_minutes": 0.4,
        }

    def builder_fields(self) -> dict[str, forms.Field]:
        names = list(TaskSet.objects.order_by("-created_at").values_list("name", flat=True))
        task_set = forms.ChoiceField(
            choices=[(name, name) for name in names],
            help_text="the task set whose test examples are validated",
        )
        if not names:
            task_set.help_text = format_html(
                'No task set yet: <a href="{}">build one on the Tasks page</a> (or import a BIG-bench '
                "task with <code>manage.py import_bigbench</code>), then come back.",
                reverse("mining:task_sets") + "#build",
            )
        tasks = forms.MultipleChoiceField(
            choices=GoalStepTask.choices,
            required=False,
            widget=forms.CheckboxSelectMultiple,
            help_text="none: every task of the set",
        )
        return {"task_set": task_set, "tasks": tasks}

    def selection_from(self, data: dict[str, Any]) -> dict[str, Any]:
        return {"task_set": data["task_set"], "tasks": list(data["tasks"])}

    def items_create(self, study: Study, selection: Selection, attention_checks: int) -> int:
        example_ids = examples_selected(selection)
        StudyItem.objects.bulk_create(
            StudyItem(
                study=study,
                example_id=e,
                subject_key=subject_key("example", e),
                position=i,
                target_annotations=study.annotators_per_item,
            )
            for i, e in enumerate(example_ids, 1)
        )
        fields = _attention_fields(example_ids, attention_checks)
        attention_items_create(study, "example", example_ids, attention_checks, fields)
        return len(example_ids)

    def reading_steps(self, item: StudyItem, presentation: dict[str, Any]) -> list[str]:
        return []  # the prompt and its candidates are short: acknowledged, not revealed one by one

    def item_context(self, assignment: Assignment) -> dict[str, Any]:
        """Never fails, whatever the example holds (the participant holds the item's lease by now): the
        options are lettered A to Z, then AA, AB, ... should an example have more than MAX_CANDIDATES."""
        example = _example(assignment.item)
        options = [(i, option_letter(i), str(text)) for i, text in enumerate(_candidates(example))]
        instruction = ""
        if assignment.item.is_attention_check:
            expected = assignment.item.payload.get("expects")
            if isinstance(expected, int) and 0 <= expected < len(options):
                _, letter, text = options[expected]
                instruction = ATTENTION_INSTRUCTION.format(letter=letter, text=text)
        return {
            "example": example,
            "question": guidelines.QUESTIONS[example.task],
            "prompt_label": guidelines.PROMPT_LABELS[example.task],
            "none_label": guidelines.NONE_LABELS[example.task],
            "options": options,
            "attention_instruction": instruction,
            "goal_acknowledgement": "I've read the question and will choose the most likely answer.",
        }

    def empty_form(self, assignment: Assignment) -> dict[str, Any]:
        return {"choice": "", "comments": ""}

    def parse_form(self, post: QueryDict, assignment: Assignment, *, user_agent: str) -> KindForm:
        example = _example(assignment.item)
        chosen = [clean_text(value) for value in post.getlist("choice")]
        comments = clean_text(post.get("comments", ""))
        values = {"choice": chosen[0] if len(chosen) == 1 else "", "comments": comments}
        try:
            choice = _parse_choice(chosen, len(_candidates(example)))
        except BadInput as problem:
            return KindForm(values, None, problem, "choice")
        submission = MultipleChoiceSubmission(
            choice, comments, posted_active_seconds(post), clean_text(user_agent)
        )
        return KindForm(values, submission)

    def refused_form(self, form: KindForm, message: str, field: str) -> dict[str, Any]:
        return {**form.values, "error_field": field}

    def check(self, submission: MultipleChoiceSubmission, item: StudyItem, assignment: Assignment) -> None:
        if submission.choice is None:
            raise Refused("Choose one of the options.", field="choice")
        if len(submission.comments) > MAX_COMMENTS_CHARS:
            raise Refused(
                f"The comments are too long (at most {MAX_COMMENTS_CHARS} characters).", field="comments"
            )

    def annotation_fields(self, submission: MultipleChoiceSubmission, item: StudyItem) -> AnnotationFields:
        example = _example(item)
        passed = submission.choice == item.payload["expects"] if item.is_attention_check else None
        answer = {"choice": submission.choice, "correct": is_correct(example, submission.choice)}
        return AnnotationFields(answer=answer, attention_passed=passed)

    def store_details(
        self, annotation: Annotation, submission: MultipleChoiceSubmission, item: StudyItem
    ) -> None:
        return None  # everything is in Annotation.answer

    def agreement_urls(self) -> list[URLPattern]:
        return import_module(URLS).agreement_urls

    def agreement_page(self, request: HttpRequest, study: Study) -> HttpResponse:
        """The validation page: which examples every worker answered correctly, and the models on them."""
        return import_module(VIEWS).study_validation_page(request, study)

    def categorical_questions(self, study: Study) -> list[CategoricalQuestion]:
        return choice_questions(study)

    def export_rows(self, study: Study) -> Iterator[dict[str, Any]]:
        annotations = (
            Annotation.objects.filter(study=study)
            .select_related("participant", "item__example__task_set", "item__example__topic")
            .order_by("item__position", "submitted_at", "pk")
        )
        for annotation in annotations.iterator(chunk_size=500):
            example = _example(annotation.item)
            yield {
                "study": study.slug,
                "item": annotation.item.position,
                "is_attention_check": annotation.item.is_attention_check,
                "attention_passed": annotation.attention_passed,
                "task_set": example.task_set.name,
                "task": example.task,
                "example": example.position,
                "topic": example.topic.name if example.topic else None,
                "prompt": example.prompt,
                "candidates": example.candidates,
                "answer": example.answer,
                "choice": annotation.answer.get("choice"),
                "correct": annotation.answer.get("correct"),
                "prolific_pid": annotation.participant.prolific_pid,
                "comments": annotation.comments,
                "submitted_at": annotation.submitted_at.isoformat(),
                "elapsed_seconds": round(annotation.elapsed_seconds, 3),
                "active_seconds": annotation.active_seconds,
            }

    def export_fields(self) -> list[str]:
        return [
            "study", "item", "is_attention_check", "attention_passed", "task_set", "task", "example", "topic",
            "prompt", "candidates", "answer", "choice", "correct", "prolific_pid", "comments", "submitted_at",
            "elapsed_seconds", "active_seconds",
        ]  # fmt: skip


def _example(item: StudyItem) -> TaskExample:
    assert item.example is not None  # a multiple-choice study's item
    return item.example


def _candidates(example: TaskExample) -> list[Any]:
    """The example's candidates as a list (an admin edit may have stored something else: no options)."""
    return example.candidates if isinstance(example.candidates, list) else []


def _parse_choice(chosen: list[str], n_candidates: int) -> int | str | None:
    """One chosen option: a candidate's index (ASCII digits in range) or NONE; None when nothing was
    chosen; BadInput for several or an option that does not exist."""
    if not chosen:
        return None
    if len(chosen) > 1:
        raise BadInput("choice", ", ".join(chosen), "one option (several were chosen)")
    if chosen[0] == NONE:
        return NONE
    expected = f"an option: 0 to {n_candidates - 1}, or {NONE}"
    return ascii_int("choice", chosen[0], minimum=0, maximum=n_candidates - 1, expected=expected)


def _attention_fields(example_ids: list[int], count: int) -> AttentionFields:
    """The option an attention check names, drawn among the example's candidates."""
    rows = TaskExample.objects.filter(pk__in=example_ids).values_list("pk", "candidates") if count else []
    sizes = {pk: len(candidates) for pk, candidates in rows}  # 2 or more: examples_selected checked them

    def fields(rng: random.Random, pk: int, i: int) -> dict[str, Any]:
        return {"payload": {"expects": rng.randrange(sizes[pk])}}

    return fields


__all__ = [
    "NONE",
    "MultipleChoice",
    "MultipleChoiceSubmission",
    "examples_selected",
    "is_correct",
]
