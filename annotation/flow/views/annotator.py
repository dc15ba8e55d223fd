"""The annotator's pages: no account, a Django session bound to the PROLIFIC_PID of the entry URL.

consent -> training -> comprehension check -> items -> Prolific completion URL. The session stores only the
participant's id; every assignment is fetched through `_assignment_for`, scoped to that participant. The item
page and its htmx updates (goal acknowledgement, the reading gate's step reveals) render the same `reading`
fragment; without JavaScript the same buttons post the form and come back to the page.

Refusals are answered in one place (`answers_refusals`): a Problem, a service's Refused or a BadInput becomes
a 4xx page saying what happened and what to do next, or for an htmx request the `reading` fragment with that
message where the participant clicked (htmx is configured to swap 4xx answers: annotator_base.html).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from annotation.base import codebook, posted
from annotation.base.models import Assignment, AssignmentStatus, Participant, Stage, Study
from annotation.base.prolific_ids import PID_PATTERN, PROLIFIC_ID_PATTERN
from annotation.base.registry import kind_for
from annotation.base.spec import KindForm
from annotation.flow import services
from h2e_site.inputs import BadInput, clean_text
from h2e_site.web import HtmxHttpRequest, staff_required, wants_fragment

# Read on their own pages only: left out of the participant lookup every request makes.
STAGE_TEXTS = ("consent_text", "training_text", "comprehension_questions", "selection")
STUDY_TEXTS = tuple(f"study__{name}" for name in STAGE_TEXTS)
STAGE_URLS = {
    Stage.CONSENT: "annotator:consent",
    Stage.TRAINING: "annotator:training",
    Stage.COMPREHENSION: "annotator:comprehension",
    Stage.ITEMS: "annotator:item",
    Stage.DONE: "annotator:done",
    Stage.SCREENED_OUT: "annotator:done",
}


class Problem(Exception):
    """A page the participant cannot use now, answered with a plain explanation."""

    def __init__(self, title: str, message: str, status: int) -> None:
        super().__init__(message)
        self.title, self.message, self.status = title, message, status


def _problem_page(request: HttpRequest, problem: Problem, *, next_url: str = "") -> HttpResponse:
    """The page (or, for htmx, the fragment where the participant acted) explaining a refusal."""
    context = {"title": problem.title, "message": problem.message, "next_url": next_url}
    if getattr(request, "htmx", False):
        return render(request, "annotation/problem.html#notice", context, status=problem.status)
    return render(request, "annotation/problem.html", context, status=problem.status)


def answers_refusals(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Every refusal of an annotator view becomes a 4xx answer with its reason, never a server error."""

    @wraps(view)
    def wrapped(request: HttpRequest, slug: str, *args: object, **kwargs: object) -> HttpResponse:
        try:
            return view(request, slug, *args, **kwargs)
        except Problem as problem:
            return _problem_page(request, problem)
        except services.Refused as refused:
            next_url = reverse("annotator:entry", args=[slug]) if refused.status == 409 else ""
            refusal = Problem("This could not be done", refused.message, refused.status)
            return _problem_page(request, refusal, next_url=next_url)
        except BadInput as bad:
            return _problem_page(request, Problem("Your answer could not be read", bad.message, 400))

    return wrapped


def _session_key(slug: str) -> str:
    return f"annotation:participant:{slug}"


def _participant_for(request: HttpRequest, slug: str) -> Participant:
    """The participant this session belongs to (one query, with the study), or a Problem (no session, study
    closed); 404 for an unknown study."""
    pk = request.session.get(_session_key(slug))
    participant = (
        Participant.objects.select_related("study")
        .defer(*STUDY_TEXTS)
        .filter(pk=pk, study__slug=slug)
        .first()
        if pk
        else None
    )
    if participant is None:
        get_object_or_404(Study, slug=slug)
        raise Problem(
            "Please start from Prolific",
            "We could not find your session. Open this study again from the link on Prolific.",
            400,
        )
    if (
        not participant.study.is_open
        and not participant.is_preview  # staff may preview a study before opening it
        and participant.stage not in {Stage.DONE, Stage.SCREENED_OUT}
    ):
        raise _closed()
    return participant


def _closed() -> Problem:
    return Problem(
        "This study is closed", "This study is not taking part any more. Please return it on Prolific.", 410
    )


def _resume(participant: Participant) -> HttpResponseRedirect:
    return redirect(STAGE_URLS[Stage(participant.stage)], slug=participant.study.slug)


def _bind(request: HttpRequest, study: Study, participant: Participant) -> None:
    """Bind the session to this participant; a new binding gets a new session key (no fixation)."""
    key = _session_key(study.slug)
    if request.session.get(key) != participant.pk:
        request.session.cycle_key()
        request.session[key] = participant.pk


def _check_entry_params(request: HttpRequest, study: Study) -> tuple[str, str, str]:
    pid = request.GET.get("PROLIFIC_PID", "").strip().lower()
    prolific_study = request.GET.get("STUDY_ID", "").strip()
    session = request.GET.get("SESSION_ID", "").strip()
    if not PID_PATTERN.fullmatch(pid):
        raise Problem(
            "Your Prolific ID is missing or not valid",
            "The link you followed has no valid PROLIFIC_PID. Please open the study from Prolific again; if "
            "this keeps happening, message the researchers on Prolific.",
            400,
        )
    if any(value and not PROLIFIC_ID_PATTERN.fullmatch(value) for value in (prolific_study, session)):
        raise Problem(
            "This link is not valid",
            "The STUDY_ID or SESSION_ID of the link is malformed. Please open the study from Prolific again.",
            400,
        )
    if study.prolific_study_id and prolific_study != study.prolific_study_id:
        raise Problem("This link is for another study", "Please open the study from Prolific again.", 400)
    return pid, prolific_study, session


@never_cache
@staff_required
@require_http_methods(["GET", "POST"])
def preview(request: HttpRequest, slug: str) -> HttpResponse:
    """A staff member walks the study as a participant would, from the consent on (open or closed): a new
    preview participant each time, whose answers are checked but never stored (services.preview_submit).
    The URL opened directly (GET) shows what a preview does and its button; only the POST starts one."""
    study = get_object_or_404(Study, slug=slug)
    if request.method == "GET":
        return render(request, "annotation/preview_start.html", {"study": study})
    participant = services.participant_preview_start(
        study=study, replacing=request.session.get(_session_key(slug))
    )
    request.session.pop(_answers_key(slug), None)
    _bind(request, study, participant)
    return _resume(participant)


@never_cache
@require_GET
def entry(request: HttpRequest, slug: str) -> HttpResponse:
    """The Prolific entry URL; without its parameters, the session's participant resumes."""
    study = get_object_or_404(Study, slug=slug)
    try:
        if "PROLIFIC_PID" not in request.GET:
            return _resume(_participant_for(request, slug))
        pid, prolific_study, session = _check_entry_params(request, study)
        known = services.participant_known(study=study, prolific_pid=pid)
        if not study.is_open and (known is None or known.stage not in {Stage.DONE, Stage.SCREENED_OUT}):
            raise _closed()
        participant = known or services.participant_enter(
            study=study,
            prolific_pid=pid,
            prolific_study_id=prolific_study,
            prolific_session_id=session,
            user_agent=clean_text(request.headers.get("User-Agent", "")),
        )
    except Problem as problem:
        return _problem_page(request, problem)
    _bind(request, study, participant)
    return _resume(participant)


def _stage_page(request: HttpRequest, slug: str, stage: Stage) -> Participant | HttpResponse:
    """The participant when they are at `stage`, else the response that sends them where they are."""
    try:
        participant = _participant_for(request, slug)
    except Problem as problem:
        return _problem_page(request, problem)
    if participant.stage != stage:
        return _resume(participant)
    return participant


@never_cache
@require_http_methods(["GET", "POST"])
@answers_refusals
def consent(request: HttpRequest, slug: str) -> HttpResponse:
    participant = _stage_page(request, slug, Stage.CONSENT)
    if isinstance(participant, HttpResponse):
        return participant
    if request.method == "POST":
        return _resume(services.participant_consent(participant=participant))
    recorded = [sentence for sentence, _ in codebook.RECORDED_ABOUT_YOU]
    context = {"study": participant.study, "recorded": recorded, "preview": participant.is_preview}
    return render(request, "annotation/consent.html", context)


@never_cache
@require_http_methods(["GET", "POST"])
@answers_refusals
def training(request: HttpRequest, slug: str) -> HttpResponse:
    """The training; read again during the comprehension check (the check's answers are in it)."""
    participant = _participant_for(request, slug)
    rereading = participant.stage == Stage.COMPREHENSION
    if participant.stage != Stage.TRAINING and not rereading:
        return _resume(participant)
    if request.method == "POST":
        return _resume(services.participant_finish_training(participant=participant))
    blocks = codebook.training_blocks(participant.study.training_text)
    context = {
        "study": participant.study,
        "blocks": blocks,
        "rereading": rereading,
        "preview": participant.is_preview,
    }
    return render(request, "annotation/training.html", context)


def _answers_key(slug: str) -> str:
    return f"annotation:answers:{slug}"


@never_cache
@require_http_methods(["GET", "POST"])
@answers_refusals
def comprehension(request: HttpRequest, slug: str) -> HttpResponse:
    """The comprehension check: all right opens the items; wrong on every attempt ends with the screen-out
    code. The answers given stay selected (in the session) while the participant rereads the training."""
    participant = _stage_page(request, slug, Stage.COMPREHENSION)
    if isinstance(participant, HttpResponse):
        return participant
    study = participant.study
    context: dict[str, Any] = {"study": study, "preview": participant.is_preview}
    if request.method == "POST":
        try:
            answers = posted.posted_answers(request.POST, study.comprehension_questions)
            result = services.comprehension_grade(participant=participant, answers=answers)
        except services.Refused:  # graded already by a request sent at the same moment
            participant.refresh_from_db(fields=["stage"])
            return _resume(participant)
        if result.passed or result.attempts_left == 0:
            participant.refresh_from_db(fields=["stage"])
            return _resume(participant)
        request.session[_answers_key(slug)] = {str(k): v for k, v in answers.items()}
        context.update(result=result, attempts_left=result.attempts_left)
        context["questions"] = _questions(study, answers)
        return render(request, "annotation/comprehension.html", context, status=422)
    kept = request.session.get(_answers_key(slug), {})
    answers = {int(k): v for k, v in kept.items() if k.isascii() and k.isdigit()}
    context["questions"] = _questions(study, answers)
    context["attempts_left"] = study.comprehension_attempts - participant.comprehension_attempts
    return render(request, "annotation/comprehension.html", context)


def _questions(study: Study, answers: dict[int, int]) -> list[dict[str, Any]]:
    """The check's questions, each with the option the participant chose last (kept across a reread)."""
    return [{**q, "selected": answers.get(i)} for i, q in enumerate(study.comprehension_questions)]


@never_cache
@require_GET
@answers_refusals
def done(request: HttpRequest, slug: str) -> HttpResponse:
    """A finished participant's completion code (or a screened-out participant's screen-out code)."""
    try:
        participant = _participant_for(request, slug)
    except Problem as problem:
        return _problem_page(request, problem)
    if participant.stage not in {Stage.DONE, Stage.SCREENED_OUT}:
        return _resume(participant)
    study = participant.study
    meaning, code = services.participant_code(participant)
    context = {
        "study": study,
        "screened_out": meaning == services.SCREENED_OUT,
        "attention_failed": meaning == services.ATTENTION_FAILED,
        "code": code,
        "prolific_url": codebook.PROLIFIC_COMPLETE_URL.format(code=code),
        "preview": participant.is_preview,
    }
    return render(request, "annotation/done.html", context)


# --- Items ---


def _assignment_for(participant: Participant, pk: int) -> Assignment:
    """The only way views fetch an assignment: one of this participant's, or 404."""
    return get_object_or_404(
        services.assignments_for_item_page(participant.study),
        pk=pk,
        participant=participant,
    )


@dataclass(frozen=True)
class ReadingStep:
    """One text the reading gate shows (one of the kind's `reading_steps`)."""

    number: int
    text: str
    revealed_at: str | None  # None: the next step to read


def reading_percent(read: int, total: int) -> int:
    """7 of 8 steps: 88 (halves round up, as the figures show)."""
    return math.floor(100 * read / total + 0.5) if total else 100


def clock(seconds: float) -> str:
    """1:05 for 65 seconds."""
    minutes, rest = divmod(max(0, int(seconds)), 60)
    return f"{minutes}:{rest:02d}"


def _item_context(participant: Participant, assignment: Assignment) -> dict[str, Any]:
    """The item page's context: the engine's part (reading, dwell, progress) and the study kind's part."""
    study = participant.study
    spec = kind_for(study)
    steps = spec.reading_steps(assignment.item, assignment.presentation)[: assignment.n_reading_steps]
    revealed = zip(steps, assignment.step_revealed_at, strict=False)
    shown = [ReadingStep(n, text, at) for n, (text, at) in enumerate(revealed, 1)]
    if assignment.goal_acknowledged_at and not assignment.all_steps_revealed:
        shown.append(ReadingStep(assignment.n_revealed + 1, steps[assignment.n_revealed], None))
    elapsed = (timezone.now() - assignment.issued_at).total_seconds()
    until_open = max(0, math.ceil(study.min_dwell_seconds - elapsed))
    return {
        "study": study,
        "participant": participant,
        "assignment": assignment,
        "item": assignment.item,
        "reading_shown": shown,
        "reading_numbers": range(1, assignment.n_reading_steps + 1),
        "percent_read": reading_percent(assignment.n_revealed, assignment.n_reading_steps),
        "elapsed_seconds": int(elapsed),
        "elapsed_clock": clock(elapsed),
        "seconds_until_open": until_open,
        "until_open_clock": clock(until_open),
        "text": codebook,
        "items_done": participant.items_completed,
        "preview": participant.is_preview,
        **spec.item_context(assignment),
    }


def _render_item(
    request: HttpRequest,
    participant: Participant,
    assignment: Assignment,
    *,
    error: str = "",
    status: int = 200,
    posted: dict[str, Any] | None = None,
    notice: str = "",
) -> HttpResponse:
    spec = kind_for(participant.study)
    context = _item_context(participant, assignment)
    context.update(error=error, notice=notice)
    context.update(posted or spec.empty_form(assignment))
    return render(request, spec.item_template, context, status=status)


@never_cache
@require_GET
@answers_refusals
def item(request: HttpRequest, slug: str) -> HttpResponse:
    """The participant's current item (resumed as it was), or a new one; none left: completion."""
    participant = _stage_page(request, slug, Stage.ITEMS)
    if isinstance(participant, HttpResponse):
        return participant
    assignment = services.assignment_next(participant=participant)
    if assignment is None:
        return _finish(request, participant)
    notice = _lease_lost_notice(request, participant, assignment)
    return _render_item(request, participant, assignment, notice=notice)


def _lease_lost_notice(request: HttpRequest, participant: Participant, assignment: Assignment) -> str:
    """Say so when the item this session was last shown has been reclaimed (its lease ran out)."""
    key = f"annotation:shown:{participant.study.slug}"
    shown: int = request.session.get(key, 0)
    if shown == assignment.pk:
        return ""
    request.session[key] = assignment.pk
    lost = Assignment.objects.filter(pk=shown, participant=participant, status=AssignmentStatus.EXPIRED)
    if shown and lost.exists():
        return (
            "Your time for the previous item ran out and it was given to someone else, so here is a new one. "
            "Nothing is held against you."
        )
    return ""


def _finish(request: HttpRequest, participant: Participant) -> HttpResponse:
    if participant.items_completed == 0:
        problem = Problem(
            "No items are available",
            "All items are being annotated by other participants at the moment. Please return the study on "
            "Prolific; you will not be penalised.",
            409,
        )
        return _problem_page(request, problem)
    services.participant_finish(participant=participant)
    if participant.is_preview:  # the preview's end: the completion page, not Prolific
        return redirect("annotator:done", slug=participant.study.slug)
    _, code = services.participant_code(participant)
    return redirect(codebook.PROLIFIC_COMPLETE_URL.format(code=code))


def _reading_response(
    request: HtmxHttpRequest,
    participant: Participant,
    assignment: Assignment,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    """After a goal or step click: the reading fragment (htmx) or the page; a refusal is shown in the
    fragment, where the participant clicked, with a way on when the item is gone."""
    if not wants_fragment(request):
        if error:
            return _render_item(request, participant, assignment, error=error, status=status)
        return redirect("annotator:item", slug=participant.study.slug)
    spec = kind_for(participant.study)
    context = {
        **_item_context(participant, assignment),
        **spec.empty_form(assignment),
        "reading_error": error,
    }
    if status == 409:  # the lease ran out: this item is closed for them
        context["reading_next_url"] = reverse("annotator:item", args=[participant.study.slug])
    return render(request, f"{spec.item_template}#reading", context, status=status)


def _reading_action(
    request: HtmxHttpRequest, slug: str, pk: int, act: Callable[[Assignment], Assignment]
) -> HttpResponse:
    participant = _participant_for(request, slug)
    assignment = _assignment_for(participant, pk)
    try:
        assignment = act(assignment)
    except services.Refused as refused:
        return _reading_response(request, participant, assignment, refused.message, refused.status)
    return _reading_response(request, participant, assignment)


@never_cache
@require_POST
@vary_on_headers("HX-Request")
@answers_refusals
def acknowledge_goal(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    return _reading_action(
        request, slug, pk, lambda assignment: services.assignment_acknowledge_goal(assignment=assignment)
    )


@never_cache
@require_POST
@vary_on_headers("HX-Request")
@answers_refusals
def reveal_step(request: HtmxHttpRequest, slug: str, pk: int, number: int) -> HttpResponse:
    return _reading_action(
        request,
        slug,
        pk,
        lambda assignment: services.assignment_reveal_step(assignment=assignment, number=number),
    )


def _refused_item(
    request: HttpRequest,
    participant: Participant,
    assignment: Assignment,
    form: KindForm,
    *,
    message: str,
    status: int,
    field: str,
) -> HttpResponse:
    """The item again with the posted answers, the reason at the top and next to the part it concerns."""
    values = kind_for(participant.study).refused_form(form, message, field)
    return _render_item(request, participant, assignment, error=message, status=status, posted=values)


@never_cache
@require_POST
@answers_refusals
def submit(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Store the annotation if the server's gates hold (else 4xx with the reason, shown next to the answer it
    concerns) and go to the next item."""
    participant = _participant_for(request, slug)
    assignment = _assignment_for(participant, pk)
    user_agent = request.headers.get("User-Agent", "")
    form = kind_for(participant.study).parse_form(request.POST, assignment, user_agent=user_agent)
    if form.problem is not None:
        return _refused_item(
            request, participant, assignment, form,
            message=form.problem.message, status=400, field=form.error_field,
        )  # fmt: skip
    store = services.preview_submit if participant.is_preview else services.annotation_submit
    try:
        store(assignment=assignment, submission=form.submission)
    except services.Refused as refused:
        if refused.status == 409:  # the lease ran out and the item went to someone else
            closed = Problem("This item is closed", refused.message, refused.status)
            return _problem_page(request, closed, next_url=reverse("annotator:item", args=[slug]))
        return _refused_item(
            request, participant, assignment, form,
            message=refused.message, status=refused.status, field=refused.field,
        )  # fmt: skip
    return redirect("annotator:item", slug=slug)
