"""The seam between the shared annotation engine and one study kind (see annotation/kinds/__init__.py)."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotFound, QueryDict
from django.urls import URLPattern, URLResolver

from annotation.base.models import StudyItem
from annotation.base.types import KINDS_INDEX, subject_key
from h2e_site.inputs import BadInput

if TYPE_CHECKING:
    from annotation.base.beyond_majority import CategoricalQuestion
    from annotation.base.models import Annotation, Assignment, Participant, Study
    from annotation.base.types import Selection

# The kind's own fields of an attention check: (the seeded random source, the subject's pk, its number).
AttentionFields = Callable[[random.Random, int, int], dict[str, Any]]


class AnySubmission(Protocol):
    """What every kind's submission carries for the shared engine (the evidence fields)."""

    comments: str
    active_seconds: float | None
    user_agent: str


@dataclass
class KindForm:
    """An item form as the participant sent it: `values` re-fill the form when the submission is refused,
    `submission` is what the service checks and stores (None when `problem`: a field that did not parse)."""

    values: dict[str, Any]
    submission: Any = None
    problem: BadInput | None = None
    error_field: str = ""


@dataclass(frozen=True)
class AnnotationFields:
    """The kind's columns of the Annotation row."""

    has_failure: bool | None = None
    n_failures: int = 0
    answer: dict[str, Any] = field(default_factory=dict)
    attention_passed: bool | None = None

    def columns(self) -> dict[str, Any]:
        """The Annotation's keyword arguments these fields fill."""
        return {
            "has_failure": self.has_failure,
            "n_failures": self.n_failures,
            "answer": self.answer,
            "attention_passed": self.attention_passed,
        }


@dataclass(frozen=True)
class ReadingTexts:
    """What the reading gate says, in the kind's own words; the engine fills in the numbers. `before_goal`
    refuses a step revealed before the goal was acknowledged, `out_of_order` a step that is not the next one
    ({next}: the next step's number), `unacknowledged` a submission before the goal was acknowledged, `unread`
    one before every step was read ({read}, {total})."""

    before_goal: str
    out_of_order: str
    unacknowledged: str
    unread: str


class StudyKindSpec(ABC):
    """One kind of study. The engine calls these; a kind never re-implements leasing, gates or codes."""

    kind: str  # its name, as registered (annotation/kinds/<kind>/__init__.py, with its label and description)
    summary: str  # the studies list's lede: "where people ...", what a participant does, in a clause
    item_template: str  # the participant's item page; it has a {% partialdef reading %} the engine swaps
    nothing_selected: str  # why a selection can have no item, for the builder's refusal
    reading: ReadingTexts  # the reading gate's refusals, in the kind's words
    on_overview: bool = False  # whether the agreement overview (/agreement/) has a part for the kind
    # What the engine loads with an item, as StudyItem paths: the relations the item page, the reading gate
    # and `check` read (joined in the same query); the fields of them the item page reads (the rest stays
    # unloaded); the long texts under those relations no item-page step reads (deferred when leasing); and
    # the relations the study page's item list shows.
    item_related: tuple[str, ...] = ()
    item_page_fields: tuple[str, ...] = ()
    item_unshown: tuple[str, ...] = ()
    item_listed: tuple[str, ...] = ()
    # The study page: the item table's head and body (a template given `items`, annotated by
    # `annotate_items`), the kind's own part above it (a template given `study_page_context`, "" for none),
    # and the annotator table's extra columns: (header, the name `annotate_participants` gives its value).
    study_items_template: str = ""
    study_page_template: str = ""
    participant_columns: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """'Step types': the kind's label as registered, the one every page shows."""
        return KINDS_INDEX[self.kind].label

    @property
    def description(self) -> str:
        """The builder's tab and Study.kind's choice: what the kind asks, in a line (as registered)."""
        return KINDS_INDEX[self.kind].description

    @property
    def agreement_api(self) -> str:
        """The URL name of the API endpoint with the kind's agreement ("" for none), as registered."""
        return KINDS_INDEX[self.kind].agreement_api

    @property
    def noun(self) -> str:
        """'a step-types study': the kind's name in a sentence."""
        return KINDS_INDEX[self.kind].noun

    # --- studies -----------------------------------------------------------------------------------------

    @abstractmethod
    def study_defaults(self) -> dict[str, Any]:
        """Study fields this kind fills unless the builder gives them (texts, comprehension questions)."""

    def check_selection(self, selection: Selection) -> None:
        """Raise ValidationError naming the selection field this kind cannot take. The default refuses a
        calibration sample: a kind whose items are drawn from generations overrides this to take one."""
        if selection.calibration_design:
            raise ValidationError(
                {
                    "calibration_design": f"{selection.calibration_design!r}: a calibration sample is drawn "
                    f"from generations, for critical-failures studies only, not for a {self.noun} study"
                }
            )

    # --- the study builder -----------------------------------------------------------------------------

    def builder_fields(self) -> dict[str, forms.Field]:
        """The kind's own selection fields on the study builder, in order, new instances on every call (the
        builder shows them after the shared topics); their names are the form's."""
        return {}

    def builder_clean(self, data: dict[str, Any]) -> None:
        """Raise ValidationError({field: message}) on the kind's builder fields (`data`: the form's cleaned
        data; a field that did not clean is missing). The default has nothing to refuse."""
        return None

    def selection_from(self, data: dict[str, Any]) -> dict[str, Any]:
        """The kind's part of the Selection (its keyword arguments) from the builder's cleaned data."""
        return {}

    def builder_names(self) -> dict[str, str]:
        """The builder's field of a Selection field this kind's refusals name, where the names differ."""
        return {}

    @abstractmethod
    def items_create(self, study: Study, selection: Selection, attention_checks: int) -> int:
        """Create the study's items (and `attention_checks` instructed-response items); returns how many
        regular items. study_create refuses a selection of none (saying `nothing_selected`)."""

    # --- the study page, URLs -----------------------------------------------------------------------------

    def annotate_items(self, items: QuerySet[StudyItem, StudyItem]) -> QuerySet[StudyItem, StudyItem]:
        """The study page's items with what the kind's item table shows beyond the engine's counters."""
        return items

    def annotate_participants(self, participants: QuerySet[Participant, Participant]) -> QuerySet[Any, Any]:
        """The study page's participants with the values of `participant_columns`."""
        return participants

    def study_links(self, study: Study) -> list[tuple[str, str]]:
        """(label, URL) of the kind's own pages of a study, shown beside Export and Agreement."""
        return []

    def study_page_context(
        self, request: HttpRequest, study: Study, refused: forms.Form | None
    ) -> dict[str, Any]:
        """What `study_page_template` needs; `refused`: the kind's form of that part when a POST to it was
        refused (shown again with its errors)."""
        return {}

    def study_page_post(self, request: HttpRequest, study: Study) -> HttpResponse | forms.Form:
        """A POST of the form in the kind's part of the study page (`study_page_template`), at the URL the
        kind mounts for it (its `page_urls`: the flow's `study_page_post` view, which checked staff and POST
        and found the study): a response (a redirect) when it was accepted, else the form with its errors,
        which the engine shows on the study page again (a 400; `study_page_context` gets it as `refused`).
        The default: a 404, for a kind whose part has no form."""
        return HttpResponseNotFound(
            f"A {self.noun} study's page has no form to post ({study.slug}).",
            content_type="text/plain; charset=utf-8",
        )

    # The URL hooks: the kind's routes, which annotation/mounting/urls/ mounts for every registered kind. A
    # kind returns the lists of its own URL module (annotation/kinds/<kind>/urls.py), fetched by name
    # (importlib.import_module) when the URL conf is built: the spec, loaded at app start, imports no views.

    def page_urls(self) -> list[URLPattern]:
        """The kind's own pages of a study, mounted under /studies/ before the flow's (URL names in the
        "annotation" namespace)."""
        return []

    def agreement_urls(self) -> list[URLPattern]:
        """The kind's own agreement pages, mounted under /agreement/ before the flow's `<slug>/` (URL names in
        the "agreement" namespace)."""
        return []

    def api_urls(self) -> list[URLPattern]:
        """The kind's own API endpoints, mounted under /api/ (in the OpenAPI schema; URL names without a
        namespace)."""
        return []

    def api_routes(self) -> list[URLPattern]:
        """The kind's own API endpoints in the "api" namespace (under /api/, beside every app's)."""
        return []

    def site_urls(self) -> list[URLPattern | URLResolver]:
        """The kind's own pages at the site's root (each with its prefix), mounted with the annotation app's
        pages, before judging's."""
        return []

    def site_urls_after_apps(self) -> list[URLPattern | URLResolver]:
        """The kind's own pages at the site's root that another app's routes must come before (a prefix both
        use: /judges/<judge_id>/ after judging's /judges/rank-correlation/), mounted last."""
        return []

    # --- reading and the item page -----------------------------------------------------------------------

    def presentation(self, item: StudyItem, slot: int) -> dict[str, Any]:
        """How one participant is shown the item, drawn when it is issued and stored on the Assignment
        (`slot`: how many participants were issued the item before). The default shows it one way."""
        return {}

    @abstractmethod
    def reading_steps(self, item: StudyItem, presentation: dict[str, Any]) -> list[str]:
        """The steps a participant must reveal, in order, before submitting (the "every step read" gate),
        as `presentation` shows them."""

    @abstractmethod
    def item_context(self, assignment: Assignment) -> dict[str, Any]:
        """What the kind's item template needs beyond the engine's context."""

    @abstractmethod
    def empty_form(self, assignment: Assignment) -> dict[str, Any]:
        """The form's values before anything was answered."""

    @abstractmethod
    def parse_form(self, post: QueryDict, assignment: Assignment, *, user_agent: str) -> KindForm:
        """The POSTed form parsed (ASCII numbers in range, known keys, clean text) into a submission."""

    @abstractmethod
    def refused_form(self, form: KindForm, message: str, field: str) -> dict[str, Any]:
        """The form's values with a refusal shown next to the part `field` names."""

    # --- submissions ---------------------------------------------------------------------------------------

    @abstractmethod
    def check(self, submission: Any, item: StudyItem, assignment: Assignment) -> None:
        """Raise study_types.Refused (with its field) when the answer is incomplete or inconsistent."""

    @abstractmethod
    def annotation_fields(self, submission: Any, item: StudyItem) -> AnnotationFields:
        """The kind's columns of the Annotation, including whether an attention check was passed."""

    @abstractmethod
    def store_details(self, annotation: Annotation, submission: Any, item: StudyItem) -> None:
        """The rows the annotation owns (failures, step-type labels), in the submission's transaction."""

    # --- agreement -----------------------------------------------------------------------------------------

    @abstractmethod
    def agreement_page(self, request: HttpRequest, study: Study) -> HttpResponse:
        """The study's agreement page, /agreement/<slug>/ (the caller checked staff and GET and found the
        study)."""

    def agreement_overview(self, request: HttpRequest) -> str:
        """The kind's part of the agreement overview, rendered; "" when it has nothing to show (a kind
        `on_overview` overrides this)."""
        return ""

    def categorical_questions(self, study: Study) -> list[CategoricalQuestion]:
        """The study's categorical labels (regular items only), one question each, that Dawid-Skene is
        fitted on beside the majority (annotation/base/beyond_majority.py); the default: none."""
        return []

    def judge_disagreements_page(self, request: HttpRequest, study: Study, judge_id: str) -> HttpResponse:
        """The items where a judge and the study's humans disagree, /agreement/<slug>/judges/<judge_id>/
        (the caller checked staff and GET and found the study; the kind finds the judge). The default: a
        404 saying why, for a kind whose items no judge gives verdicts on."""
        return HttpResponseNotFound(
            f"No judge gives verdicts on the items of a {self.noun} study ({study.slug}).",
            content_type="text/plain; charset=utf-8",
        )

    # --- exports -------------------------------------------------------------------------------------------

    @abstractmethod
    def export_rows(self, study: Study) -> Iterator[dict[str, Any]]:
        """The study's annotations as flat rows (JSONL and CSV share them)."""

    def export_fields(self) -> list[str]:
        """The CSV columns of export_rows, in order."""
        return []


def refusal_on_form(form: forms.Form, refused: ValidationError, names: dict[str, str]) -> None:
    """A service's refusal shown next to the fields it names (`names`: the form's name of a service's field
    where they differ; the others above the form)."""
    for service_name, errors in refused.message_dict.items():
        name = names.get(service_name, service_name)
        if name in form.fields:
            form.add_error(name, errors)
        else:
            form.add_error(None, [e if name == NON_FIELD_ERRORS else f"{name}: {e}" for e in errors])


def attention_items_create(
    study: Study, subject: str, subject_ids: list[int], count: int, fields: AttentionFields
) -> None:
    """`count` instructed-response items (Prolific's rule: the item itself tells which answer to give), after
    the study's regular items, each on a subject (`subject`: generation, procedure or example) drawn from
    `subject_ids` with a source seeded by the selection's seed; `fields`: the kind's instructed answer."""
    if not subject_ids or count <= 0:
        return
    rng = random.Random(f"attention-{study.selection.get('seed', 0)}")
    items = []
    for i in range(1, count + 1):
        pk = rng.choice(subject_ids)
        items.append(
            StudyItem(
                study=study,
                position=len(subject_ids) + i,
                target_annotations=0,
                is_attention_check=True,
                subject_key=subject_key(subject, pk),
                **{f"{subject}_id": pk},
                **fields(rng, pk, i),
            )
        )
    StudyItem.objects.bulk_create(items)


class FailureEntryLike(Protocol):
    """A failure entry of a kind's form: its `index` names its fields ("failure-<index>-...")."""

    index: int


def failure_entry_field(name: str) -> str:
    """The form's "failure-<index>" for a field of a failure entry ("failure-<index>-<part>"), else the
    field's own name: where a refusal of a value that did not parse is shown."""
    parts = name.split("-")
    return "-".join(parts[:2]) if parts[0] == "failure" and len(parts) == 3 else name


def refused_entry_field(field: str, entries: Sequence[FailureEntryLike]) -> str:
    """A service refusal's "failure:<n>" (the n-th failure, 1-based) as the form's "failure-<index>"."""
    kind, _, n = field.partition(":")
    if kind == "failure" and n.isascii() and n.isdigit() and 0 < int(n) <= len(entries):
        return f"failure-{entries[int(n) - 1].index}"
    return field


__all__ = [
    "AnnotationFields",
    "AnySubmission",
    "KindForm",
    "ReadingTexts",
    "StudyKindSpec",
    "attention_items_create",
    "failure_entry_field",
    "refusal_on_form",
    "refused_entry_field",
    "subject_key",
]
