"""The annotator's pages: no account, a Django session bound to the PROLIFIC_PID of the entry URL.

consent -> training -> comprehension check -> items -> Prolific completion URL. The session stores only the
participant's id; every assignment is fetched through `_assignment_for`, scoped to that participant. The item
page and its htmx updates (goal acknowledgement, L2 step reveals) render the same `reading` fragment; without
JavaScript the same buttons post the form and come back to the page.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from h2e_site.web import HtmxHttpRequest, wants_fragment

from .. import codebook, services
from ..models import Assignment, AssignmentStatus, Participant, Stage, Study

PID_PATTERN = re.compile(r"[0-9a-fA-F]{24}")
PROLIFIC_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
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


def _problem_page(request: HttpRequest, problem: Problem) -> HttpResponse:
    context = {"title": problem.title, "message": problem.message}
    return render(request, "annotation/problem.html", context, status=problem.status)


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
    if not participant.study.is_open and participant.stage not in {Stage.DONE, Stage.SCREENED_OUT}:
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
    pid = request.GET.get("PROLIFIC_PID", "").strip()
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
@require_GET
def entry(request: HttpRequest, slug: str) -> HttpResponse:
    """The Prolific entry URL; without its parameters, the session's participant resumes."""
    study = get_object_or_404(Study, slug=slug)
    try:
        if "PROLIFIC_PID" not in request.GET:
            return _resume(_participant_for(request, slug))
        pid, prolific_study, session = _check_entry_params(request, study)
        known = Participant.objects.filter(study=study, prolific_pid=pid).first()
        if not study.is_open and (known is None or known.stage not in {Stage.DONE, Stage.SCREENED_OUT}):
            raise _closed()
        participant = known or services.participant_enter(
            study=study,
            prolific_pid=pid,
            prolific_study_id=prolific_study,
            prolific_session_id=session,
            user_agent=request.headers.get("User-Agent", ""),
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
def consent(request: HttpRequest, slug: str) -> HttpResponse:
    participant = _stage_page(request, slug, Stage.CONSENT)
    if isinstance(participant, HttpResponse):
        return participant
    if request.method == "POST":
        return _resume(services.participant_consent(participant=participant))
    return render(request, "annotation/consent.html", {"study": participant.study})


@never_cache
@require_http_methods(["GET", "POST"])
def training(request: HttpRequest, slug: str) -> HttpResponse:
    participant = _stage_page(request, slug, Stage.TRAINING)
    if isinstance(participant, HttpResponse):
        return participant
    if request.method == "POST":
        return _resume(services.participant_finish_training(participant=participant))
    blocks = codebook.training_blocks(participant.study.training_text)
    return render(request, "annotation/training.html", {"study": participant.study, "blocks": blocks})


def _answers(request: HttpRequest, n_questions: int) -> dict[int, int]:
    answers = {}
    for i in range(n_questions):
        value = request.POST.get(f"q{i}", "")
        if value.isdigit():
            answers[i] = int(value)
    return answers


@never_cache
@require_http_methods(["GET", "POST"])
def comprehension(request: HttpRequest, slug: str) -> HttpResponse:
    """The comprehension check: all right opens the items; wrong twice ends with the screen-out code."""
    participant = _stage_page(request, slug, Stage.COMPREHENSION)
    if isinstance(participant, HttpResponse):
        return participant
    study = participant.study
    context: dict[str, Any] = {"study": study, "questions": study.comprehension_questions}
    if request.method == "POST":
        result = services.comprehension_grade(
            participant=participant, answers=_answers(request, len(study.comprehension_questions))
        )
        if result.passed or result.attempts_left == 0:
            participant.refresh_from_db(fields=["stage"])
            return _resume(participant)
        context.update(result=result, attempts_left=result.attempts_left)
        return render(request, "annotation/comprehension.html", context, status=422)
    context["attempts_left"] = study.comprehension_attempts - participant.comprehension_attempts
    return render(request, "annotation/comprehension.html", context)


@never_cache
@require_GET
def done(request: HttpRequest, slug: str) -> HttpResponse:
    """A finished participant's completion code (or a screened-out participant's screen-out code)."""
    try:
        participant = _participant_for(request, slug)
    except Problem as problem:
        return _problem_page(request, problem)
    if participant.stage not in {Stage.DONE, Stage.SCREENED_OUT}:
        return _resume(participant)
    study = participant.study
    screened = participant.stage == Stage.SCREENED_OUT
    code = study.screenout_code if screened else study.completion_code
    context = {
        "study": study,
        "screened_out": screened,
        "code": code,
        "prolific_url": codebook.PROLIFIC_COMPLETE_URL.format(code=code),
    }
    return render(request, "annotation/done.html", context)


# --- Items ---


def _assignment_for(participant: Participant, pk: int) -> Assignment:
    """The only way views fetch an assignment: one of this participant's, or 404."""
    return get_object_or_404(
        services.assignments_for_item_page(),
        pk=pk,
        participant=participant,
    )


@dataclass(frozen=True)
class FailureEntry:
    """A critical-failure entry as the form shows it (posted values kept when a submission is refused)."""

    index: int
    description: str
    l1: set[int]
    l2: set[int]


@dataclass(frozen=True)
class L2Step:
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
    study, item = participant.study, assignment.item
    procedure = item.generation.procedure
    l2 = list(item.generation.predicted_steps)[: assignment.n_l2_steps]
    revealed = zip(l2, assignment.step_revealed_at, strict=False)
    shown = [L2Step(n, str(text), at) for n, (text, at) in enumerate(revealed, 1)]
    if assignment.goal_acknowledged_at and not assignment.all_steps_revealed:
        shown.append(L2Step(assignment.n_revealed + 1, str(l2[assignment.n_revealed]), None))
    elapsed = (timezone.now() - assignment.issued_at).total_seconds()
    until_open = max(0, math.ceil(study.min_dwell_seconds - elapsed))
    expected = codebook.FAILURE_LABEL if item.attention_expects_failure else codebook.NO_FAILURE_LABEL
    return {
        "study": study,
        "participant": participant,
        "assignment": assignment,
        "item": item,
        "procedure": procedure,
        "l1_steps": [str(s) for s in procedure.steps],
        "l2_shown": shown,
        "l2_numbers": range(1, assignment.n_l2_steps + 1),
        "l1_numbers": range(1, len(procedure.steps) + 1),
        "percent_read": reading_percent(assignment.n_revealed, assignment.n_l2_steps),
        "elapsed_seconds": int(elapsed),
        "elapsed_clock": clock(elapsed),
        "seconds_until_open": until_open,
        "until_open_clock": clock(until_open),
        "attention_instruction": codebook.ATTENTION_CHECK_INSTRUCTION.format(label=expected)
        if item.is_attention_check
        else "",
        "text": codebook,
        "items_done": participant.items_completed,
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
    context = _item_context(participant, assignment)
    context.update(error=error, notice=notice)
    context.update(posted or {"choice": "", "failures": [FailureEntry(0, "", set(), set())]})
    return render(request, "annotation/item.html", context, status=status)


@never_cache
@require_GET
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
    code = participant.study.completion_code
    return redirect(codebook.PROLIFIC_COMPLETE_URL.format(code=code))


def _reading_response(
    request: HtmxHttpRequest,
    participant: Participant,
    assignment: Assignment,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    if not wants_fragment(request):
        if error:
            return _render_item(request, participant, assignment, error=error, status=status)
        return redirect("annotator:item", slug=participant.study.slug)
    context = {**_item_context(participant, assignment), "reading_error": error}
    return render(request, "annotation/item.html#reading", context, status=status)


def _item_action(request: HttpRequest, slug: str, pk: int) -> tuple[Participant, Assignment] | HttpResponse:
    try:
        participant = _participant_for(request, slug)
    except Problem as problem:
        return _problem_page(request, problem)
    return participant, _assignment_for(participant, pk)


@never_cache
@require_POST
@vary_on_headers("HX-Request")
def acknowledge_goal(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    found = _item_action(request, slug, pk)
    if isinstance(found, HttpResponse):
        return found
    participant, assignment = found
    try:
        assignment = services.assignment_acknowledge_goal(assignment=assignment)
    except services.Refused as refused:
        return _reading_response(request, participant, assignment, refused.message, refused.status)
    return _reading_response(request, participant, assignment)


@never_cache
@require_POST
@vary_on_headers("HX-Request")
def reveal_step(request: HtmxHttpRequest, slug: str, pk: int, number: int) -> HttpResponse:
    found = _item_action(request, slug, pk)
    if isinstance(found, HttpResponse):
        return found
    participant, assignment = found
    try:
        assignment = services.assignment_reveal_step(assignment=assignment, number=number)
    except services.Refused as refused:
        return _reading_response(request, participant, assignment, refused.message, refused.status)
    return _reading_response(request, participant, assignment)


def _int_list(values: list[str]) -> list[int]:
    return [int(v) for v in values if v.strip().lstrip("-").isdigit()][:100]


def _posted_failures(request: HttpRequest) -> list[FailureEntry]:
    indexes = sorted(
        {
            int(m.group(1))
            for key in request.POST
            if (m := re.fullmatch(r"failure-(\d{1,3})-description", key))
        }
    )
    return [
        FailureEntry(
            index=i,
            description=request.POST.get(f"failure-{i}-description", ""),
            l1=set(_int_list(request.POST.getlist(f"failure-{i}-l1"))),
            l2=set(_int_list(request.POST.getlist(f"failure-{i}-l2"))),
        )
        for i in indexes
    ]


def _submission(request: HttpRequest, failures: list[FailureEntry]) -> services.Submission:
    choice = request.POST.get("has_failure", "")
    try:
        active = float(request.POST.get("active_seconds", ""))
    except ValueError:
        active = None
    return services.Submission(
        has_failure={"yes": True, "no": False}.get(choice),
        failures=[services.FailureInput(f.description, sorted(f.l1), sorted(f.l2)) for f in failures],
        comments=request.POST.get("comments", ""),
        active_seconds=active if active is not None and 0 <= active < 10**6 else None,
        user_agent=request.headers.get("User-Agent", ""),
    )


@never_cache
@require_POST
def submit(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Store the annotation if the server's gates hold (else 4xx with the reason) and go to the next item."""
    found = _item_action(request, slug, pk)
    if isinstance(found, HttpResponse):
        return found
    participant, assignment = found
    failures = _posted_failures(request)
    try:
        services.annotation_submit(assignment=assignment, submission=_submission(request, failures))
    except services.Refused as refused:
        if refused.status == 409:  # the lease ran out and the item went to someone else
            return _problem_page(request, Problem("This item is closed", refused.message, refused.status))
        posted = {
            "choice": request.POST.get("has_failure", ""),
            "failures": failures or [FailureEntry(0, "", set(), set())],
            "comments": request.POST.get("comments", ""),
        }
        return _render_item(
            request, participant, assignment, error=refused.message, status=refused.status, posted=posted
        )
    return redirect("annotator:item", slug=slug)
