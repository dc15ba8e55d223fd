"""The `critical_failures` kind (How2Score, paper C.1): an item is a generation (L2 with its L1); the
participant reads every L2 step, then says whether L2 has a critical failure and lists each one, described
and linked to the L1 and/or L2 steps it concerns."""

from __future__ import annotations

import random
from collections.abc import Iterator
from importlib import import_module
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import URLPattern, URLResolver, reverse

from annotation.base import codebook
from annotation.base.beyond_majority import CategoricalQuestion
from annotation.base.embedding import HUMAN_FAILURES
from annotation.base.models import AnnotatedFailure, Annotation, Assignment, Participant, Study, StudyItem
from annotation.base.spec import (
    AnnotationFields,
    KindForm,
    ReadingTexts,
    StudyKindSpec,
    attention_items_create,
    failure_entry_field,
    refused_entry_field,
)
from annotation.base.types import Selection
from annotation.kinds.critical_failures import exports, posted
from annotation.kinds.critical_failures.answer import check_answer
from annotation.kinds.critical_failures.calibration import sample as calibration_sample
from annotation.kinds.critical_failures.models import CalibrationDesign
from annotation.kinds.critical_failures.name import KIND
from annotation.kinds.critical_failures.posted import Submission
from annotation.kinds.critical_failures.questions import has_failure_question
from h2e_site.embeddings.jobs import embed_after
from judging.models import Generation, Generator, Judge, Judgment

# The kind's pages and routes, fetched by name where the engine asks for them (the spec imports no views).
VIEWS = f"{__package__}.views"
URLS = f"{__package__}.urls"


class CriticalFailures(StudyKindSpec):
    kind = KIND
    summary = "where people label L1/L2 pairs the way the judges do (any critical failure, and which ones)"
    on_overview = True
    item_template = "annotation/item.html"
    # An item is a generation: its L2 (the steps read) under its procedure's L1 (goal, steps, resources).
    item_related = ("generation__procedure",)
    item_page_fields = (
        "attention_expects_failure",
        "generation__predicted_steps",
        "generation__procedure__goal",
        "generation__procedure__steps",
        "generation__procedure__resources",
    )
    item_unshown = (
        "generation__prompt",
        "generation__model_completion",
        "generation__procedure__source_text",
    )
    item_listed = ("generation__generator", "generation__procedure")
    study_items_template = "annotation/kinds/_items_critical_failures.html"
    study_page_template = "annotation/kinds/_study_critical_failures.html"  # the calibration sample
    participant_columns = (("Say failure", "n_with_failure"),)
    nothing_selected = (
        "no generation (L2 without an error) of the chosen topics and generators"
        " (and, with judges chosen, that they disagree on). Generate L2 first, or widen the selection."
    )
    reading = ReadingTexts(
        before_goal="Confirm that you have read the goal before reading the L2 steps.",
        out_of_order="Read the L2 steps in order: the next one is step {next}.",
        unacknowledged="Confirm that you have read the goal before submitting.",
        unread="Read every L2 step before submitting ({read} of {total} read).",
    )

    def study_defaults(self) -> dict[str, Any]:
        return {}  # the Study model's defaults are this kind's codebook

    def check_selection(self, selection: Selection) -> None:
        calibration_sample.check_selection(selection)

    def annotate_items(self, items: QuerySet[StudyItem, StudyItem]) -> QuerySet[StudyItem, StudyItem]:
        failing = (
            Annotation.objects.filter(item=OuterRef("pk"), has_failure=True)
            .order_by()
            .values("item")
            .annotate(n=Count("pk"))
            .values("n")
        )  # a subquery per item shown (the study page shows a page of them)
        return items.annotate(n_with_failure=Coalesce(Subquery(failing), 0))

    def annotate_participants(self, participants: QuerySet[Participant, Participant]) -> QuerySet[Any, Any]:
        return participants.annotate(n_with_failure=_n_with_failure(distinct=False))

    def study_page_context(
        self, request: HttpRequest, study: Study, refused: forms.Form | None
    ) -> dict[str, Any]:
        """The calibration sample's section: its rounds and the form of the next (refused: with errors)."""
        return import_module(VIEWS).calibration_section_context(request, study, refused)

    def study_page_post(self, request: HttpRequest, study: Study) -> HttpResponse | forms.Form:
        return import_module(VIEWS).calibration_round_post(request, study)

    def builder_fields(self) -> dict[str, forms.Field]:
        return {
            "generators": forms.ModelMultipleChoiceField(
                Generator.objects.all(), required=False, help_text="none: any generator"
            ),
            "disagreeing_judges": forms.ModelMultipleChoiceField(
                Judge.objects.all(),
                required=False,
                help_text="two or more: only generations these judges disagree on",
            ),
            "calibration_design": forms.ChoiceField(
                choices=[
                    ("", "none: the items are the selection (or its seeded sample)"),
                    *CalibrationDesign.choices,
                ],
                required=False,
                label="Calibration sample",
                help_text="draw the items with known inclusion probabilities (stored), so the human labels "
                "can calibrate the judges' How2Score; the sample size is the round's n. Not with a topic "
                "filter or “disagreeing judges”",
            ),
            "calibration_judges": forms.ModelMultipleChoiceField(
                Judge.objects.all(),
                required=False,
                label="Judges of the disagreement design",
                help_text="their verdicts (and re-runs' flips) give each generation's uncertainty: two or "
                "more, or one judge with re-run verdicts",
            ),
        }

    def builder_clean(self, data: dict[str, Any]) -> None:
        if len(data.get("disagreeing_judges", ())) == 1:
            raise ValidationError({"disagreeing_judges": "Choose at least two judges, or none."})

    def selection_from(self, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "generator_ids": [g.pk for g in data["generators"]],
            "disagreeing_judge_ids": [j.pk for j in data["disagreeing_judges"]],
            "calibration_design": data["calibration_design"],
            "calibration_judge_ids": [j.pk for j in data["calibration_judges"]],
        }

    def builder_names(self) -> dict[str, str]:
        return {
            "generator_ids": "generators",
            "disagreeing_judge_ids": "disagreeing_judges",
            "calibration_judge_ids": "calibration_judges",
        }

    def items_create(self, study: Study, selection: Selection, attention_checks: int) -> int:
        """The generations selected; with a calibration design, those round 1 draws from the frame (its
        probabilities stored: annotation/kinds/critical_failures/calibration/sample.py)."""
        if selection.calibration_design:
            generation_ids = calibration_sample.first_round(study, selection)
        else:
            generation_ids = generations_selected(selection=selection)
            calibration_sample.items_add(study, generation_ids)
        # Instructed "failure" and "no failure", alternately.
        attention_items_create(
            study, "generation", generation_ids, attention_checks,
            lambda rng, pk, i: {"attention_expects_failure": bool(i % 2)},
        )  # fmt: skip
        return len(generation_ids)

    def reading_steps(self, item: StudyItem, presentation: dict[str, Any]) -> list[str]:
        assert item.generation is not None
        return [str(step) for step in item.generation.predicted_steps]

    def item_context(self, assignment: Assignment) -> dict[str, Any]:
        item = assignment.item
        assert item.generation is not None
        procedure = item.generation.procedure
        expected = codebook.FAILURE_LABEL if item.attention_expects_failure else codebook.NO_FAILURE_LABEL
        return {
            "procedure": procedure,
            "l1_steps": [str(s) for s in procedure.steps],
            "l1_numbers": range(1, len(procedure.steps) + 1),
            "attention_instruction": codebook.ATTENTION_CHECK_INSTRUCTION.format(label=expected)
            if item.is_attention_check
            else "",
        }

    def empty_form(self, assignment: Assignment) -> dict[str, Any]:
        return {"choice": "", "failures": [posted.FailureEntry(0, "", set(), set())]}

    def parse_form(self, post: QueryDict, assignment: Assignment, *, user_agent: str) -> KindForm:
        assert assignment.item.generation is not None
        procedure = assignment.item.generation.procedure
        form = posted.posted_item(post, n_l1=len(procedure.steps), n_l2=assignment.n_reading_steps)
        values = {"choice": form.choice, "failures": form.failures, "comments": form.comments}
        if form.problem is not None:
            return KindForm(values, None, form.problem, failure_entry_field(form.problem.field))
        return KindForm(values, posted.submission(form, post, user_agent=user_agent))

    def refused_form(self, form: KindForm, message: str, field: str) -> dict[str, Any]:
        failures = form.values["failures"] or [posted.FailureEntry(0, "", set(), set())]
        field = refused_entry_field(field, failures)
        failures = [f.with_error(message) if field == f"failure-{f.index}" else f for f in failures]
        return {**form.values, "failures": failures, "error_field": field}

    def check(self, submission: Submission, item: StudyItem, assignment: Assignment) -> None:
        assert item.generation is not None
        n_l1 = len(item.generation.procedure.steps)
        check_answer(submission, n_l1=n_l1, n_l2=assignment.n_reading_steps)

    def annotation_fields(self, submission: Submission, item: StudyItem) -> AnnotationFields:
        has_failure = bool(submission.has_failure)
        return AnnotationFields(
            has_failure=has_failure,
            n_failures=len(submission.failures) if has_failure else 0,
            attention_passed=has_failure == item.attention_expects_failure
            if item.is_attention_check
            else None,
        )

    def store_details(self, annotation: Annotation, submission: Submission, item: StudyItem) -> None:
        failures = submission.failures if submission.has_failure else []
        AnnotatedFailure.objects.bulk_create(
            AnnotatedFailure(
                annotation=annotation,
                order=i,
                description=f.description.strip(),
                l1_steps=sorted(set(f.l1_steps)),
                l2_steps=sorted(set(f.l2_steps)),
            )
            for i, f in enumerate(failures)
        )
        if failures and not item.is_attention_check:  # its similar failures and patterns need the vector
            embed_after(HUMAN_FAILURES)

    def study_links(self, study: Study) -> list[tuple[str, str]]:
        return [("Adjudicate", reverse("annotation:adjudication_queue", args=[study.slug]))]

    def page_urls(self) -> list[URLPattern]:
        return import_module(URLS).page_urls

    def api_urls(self) -> list[URLPattern]:
        return import_module(URLS).api_urls

    def api_routes(self) -> list[URLPattern]:
        return import_module(URLS).api_routes

    def site_urls(self) -> list[URLPattern | URLResolver]:
        return import_module(URLS).site_urls

    def site_urls_after_apps(self) -> list[URLPattern | URLResolver]:
        return import_module(URLS).site_urls_after_apps

    def agreement_page(self, request: HttpRequest, study: Study) -> HttpResponse:
        return import_module(VIEWS).study_agreement_page(request, study)

    def agreement_overview(self, request: HttpRequest) -> str:
        return import_module(VIEWS).overview_section(request)

    def categorical_questions(self, study: Study) -> list[CategoricalQuestion]:
        return [has_failure_question(study)]

    def judge_disagreements_page(self, request: HttpRequest, study: Study, judge_id: str) -> HttpResponse:
        return import_module(VIEWS).judge_disagreements_page(request, study, judge_id)

    def export_rows(self, study: Study) -> Iterator[dict[str, Any]]:
        return exports.annotations_export(study=study)

    def export_fields(self) -> list[str]:
        return exports.EXPORT_FIELDS


def _n_with_failure(*, distinct: bool) -> Count:
    """The annotations saying the L2 has a critical failure."""
    return Count("annotations", filter=Q(annotations__has_failure=True), distinct=distinct)


def generations_selected(*, selection: Selection) -> list[int]:
    """Ids of generations with L2 steps matching the selection (a seeded random sample if sample_size)."""
    generations = Generation.objects.filter(error="").exclude(predicted_steps=[])
    if selection.topic_ids:
        generations = generations.filter(procedure__topic_id__in=selection.topic_ids)
    if selection.generator_ids:
        generations = generations.filter(generator_id__in=selection.generator_ids)
    if selection.disagreeing_judge_ids:
        generations = generations.filter(pk__in=_judge_disagreements(selection.disagreeing_judge_ids))
    ids = sorted(generations.values_list("pk", flat=True))
    if selection.sample_size is not None and selection.sample_size < len(ids):
        ids = sorted(random.Random(selection.seed).sample(ids, selection.sample_size))
    return ids


def _judge_disagreements(judge_ids: list[int]) -> QuerySet[Judgment, Any]:
    """Generations the given judges all judged (parsed) without giving the same has_failure verdict."""
    return (
        Judgment.objects.filter(judge_id__in=judge_ids, parse_failed=False)
        .values("generation_id")
        .annotate(
            n_judges=Count("judge_id", distinct=True),
            n_fail=Count("pk", filter=Q(has_failure=True)),
        )
        .filter(n_judges=len(set(judge_ids)), n_fail__gt=0)
        .exclude(n_fail=F("n_judges"))
        .values("generation_id")
    )


__all__ = ["CriticalFailures", "check_answer", "generations_selected"]
