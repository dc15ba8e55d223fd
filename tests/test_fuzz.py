"""Property-based fuzzing (Hypothesis) of every annotator POST endpoint and every filter parameter of the
staff pages and the API: arbitrary Unicode, control characters, huge and negative numbers, repeated and
missing fields. No request may get a 5xx, and a refused request (400/403/404/405/409/410) must change
nothing stored.

The number of generated requests is printed at the end (a few thousand; FUZZ_SCALE multiplies it). In CI the
examples are derandomized, so a run is repeatable; elsewhere Hypothesis explores new ones each time."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.base.models import AnnotatedFailure, Annotation, Assignment, Participant, StudyItem
from annotation.base.registry import StudyKind
from annotation.flow import services
from annotation.kinds.step_types.models import StepTypeLabel
from tests.annotation.conftest import make_study, pid, qualified
from tests.annotation.pairwise.helpers import make_pairwise_study
from tests.factories import make_procedure, make_scored_world, make_user
from tests.fuzzing import fuzz_settings

pytestmark = pytest.mark.django_db
REFUSALS = {400, 403, 404, 405, 409, 410}
SENT: dict[str, int] = {}

# Text a browser or a script can send: any Unicode scalar (no lone surrogates: they cannot be encoded),
# control characters and NUL included; numbers of every size and sign; the odd digits that break int().
ANY_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
NUMBERS = st.integers(min_value=-(10**30), max_value=10**30).map(str)
ODD = st.sampled_from(
    ["", " ", "--1", "²", "٣", "1.5", "1e400", "nan", "-0", "0x10", "\x00", "\u202e1", "0" * 40]
)
VALUE = st.one_of(ANY_TEXT, NUMBERS, ODD)
VALUES = st.lists(VALUE, max_size=4)  # a field sent 0 (missing), 1 or several times


def _examples(n: int) -> settings:
    return fuzz_settings(n)


def _stored() -> tuple[Any, ...]:
    """What a refused request must leave as it was."""
    return (
        tuple(
            Participant.objects.order_by("pk").values_list(
                "pk", "prolific_pid", "stage", "comprehension_attempts"
            )
        ),
        tuple(
            Assignment.objects.order_by("pk").values_list(
                "pk", "status", "n_revealed", "goal_acknowledged_at"
            )
        ),
        tuple(
            Annotation.objects.order_by("pk").values_list(
                "pk", "has_failure", "comments", "active_seconds", "answer"
            )
        ),
        tuple(
            AnnotatedFailure.objects.order_by("pk").values_list("pk", "description", "l1_steps", "l2_steps")
        ),
        tuple(StudyItem.objects.order_by("pk").values_list("pk", "assigned_count", "completed_count")),
        tuple(StepTypeLabel.objects.order_by("pk").values_list("pk", "holds", "expert")),
    )


def _send(name: str, client: Client, method: str, path: str, data: dict[str, Any]) -> int:
    before = _stored()
    response = client.get(path, data) if method == "get" else client.post(path, data)
    SENT[name] = SENT.get(name, 0) + 1
    assert response.status_code < 500, (method, path, data, response.status_code)
    if response.status_code in REFUSALS:
        assert _stored() == before, (method, path, data, response.status_code)
    return response.status_code


def fuzz_report() -> str:
    """The line tests/conftest.py prints in pytest's summary: how many requests were generated, per target."""
    by_target = ", ".join(f"{name} {n}" for name, n in sorted(SENT.items()))
    return f"fuzz: {sum(SENT.values())} generated requests, none answered 5xx ({by_target})"


# --- the annotator's POSTs ---------------------------------------------------------------------------------


def _participant_client(stage_n: int) -> tuple[Client, Any, Any]:
    study = make_study(n_items=3, k=3)
    participant = qualified(study, stage_n)
    client = Client()
    session = client.session
    session[f"annotation:participant:{study.slug}"] = participant.pk
    session.save()
    response = client.get(reverse("annotator:item", args=[study.slug]))
    return client, study, response.context["assignment"]


SUBMISSION = st.fixed_dictionaries(
    {},
    optional={
        "has_failure": st.one_of(st.sampled_from(["yes", "no"]), VALUE),
        "comments": VALUE,
        "active_seconds": VALUE,
        "failure-0-description": VALUE,
        "failure-0-l1": VALUES,
        "failure-0-l2": VALUES,
        "failure-1-description": VALUE,
        "failure-1-l2": VALUES,
        "failure-999-description": VALUE,
        "failure-٣-description": VALUE,
    },
)


def test_it_survives_any_submission() -> None:
    client, study, assignment = _participant_client(1)
    client.post(reverse("annotator:acknowledge_goal", args=[study.slug, assignment.pk]))
    for n in range(1, assignment.n_reading_steps + 1):
        client.post(reverse("annotator:reveal_step", args=[study.slug, assignment.pk, n]))
    Assignment.objects.filter(pk=assignment.pk).update(issued_at=timezone.now() - timedelta(minutes=5))

    @_examples(600)
    @given(data=SUBMISSION, pk=st.sampled_from([assignment.pk, assignment.pk + 10**6, 10**20]))
    def submit(data: dict[str, Any], pk: int) -> None:
        _send("submit", client, "post", f"/a/{study.slug}/item/{pk}/submit/", data)

    submit()


KEYS = ["sequential:0-1", "sequential:3-4", "interchangeable@0:1-2", "optional@2:3", "optional@3:4"]
STEP_TYPES_SUBMISSION = st.fixed_dictionaries(
    {},
    optional={
        "mark": st.lists(st.one_of(st.sampled_from(KEYS), VALUE), max_size=4),
        **{f"expert-{key}": st.one_of(st.sampled_from(["yes", "no"]), VALUES) for key in KEYS[:3]},
        "expert-sequential:9-10": VALUE,
        "expert_knowledge": st.one_of(st.sampled_from(["yes", "no"]), VALUE),
        "comments": VALUE,
        "active_seconds": VALUE,
    },
)


def _item_read(study: Any) -> tuple[Client, Any]:
    """A qualified participant's client on their first item of `study`, the goal acknowledged and every step
    read over HTTP, the item issued five minutes ago (past any dwell)."""
    participant = qualified(study, 1)
    client = Client()
    session = client.session
    session[f"annotation:participant:{study.slug}"] = participant.pk
    session.save()
    assignment = client.get(reverse("annotator:item", args=[study.slug])).context["assignment"]
    client.post(reverse("annotator:acknowledge_goal", args=[study.slug, assignment.pk]))
    for n in range(1, assignment.n_reading_steps + 1):
        client.post(reverse("annotator:reveal_step", args=[study.slug, assignment.pk, n]))
    Assignment.objects.filter(pk=assignment.pk).update(issued_at=timezone.now() - timedelta(minutes=5))
    return client, assignment


def test_it_survives_any_step_types_submission() -> None:
    for i in range(3):
        make_procedure(goal=f"Iron on a patch {i}", steps=["a", "b", "c", "d", "e"], topic="Home")
    study = services.study_create(
        title="Steps", slug="fuzz-steps", kind=StudyKind.STEP_TYPES, selection=services.Selection()
    )
    client, assignment = _item_read(study)

    @_examples(300)
    @given(data=STEP_TYPES_SUBMISSION)
    def submit(data: dict[str, Any]) -> None:
        _send("step-types submit", client, "post", f"/a/{study.slug}/item/{assignment.pk}/submit/", data)

    submit()


PAIRWISE_SUBMISSION = st.fixed_dictionaries(
    {},
    optional={
        "verdict": st.one_of(st.sampled_from(["left", "right", "both_none", "both_fail"]), VALUE),
        "failure-0-side": st.one_of(st.sampled_from(["left", "right"]), VALUE),
        "failure-0-description": VALUE,
        "failure-0-l1": VALUES,
        "failure-0-l2": VALUES,
        "failure-1-side": st.one_of(st.sampled_from(["left", "right"]), VALUE),
        "failure-1-description": VALUE,
        "failure-1-l2": VALUES,
        "failure-999-description": VALUE,
        "failure-٣-side": VALUE,
        "comments": VALUE,
        "active_seconds": VALUE,
    },
)


def test_it_survives_any_pairwise_submission() -> None:
    study = make_pairwise_study(n_goals=2, k=3)
    client, assignment = _item_read(study)

    @_examples(250)
    @given(data=PAIRWISE_SUBMISSION, pk=st.sampled_from([assignment.pk, assignment.pk + 10**6]))
    def submit(data: dict[str, Any], pk: int) -> None:
        _send("pairwise submit", client, "post", f"/a/{study.slug}/item/{pk}/submit/", data)

    submit()


def test_it_survives_any_reading_click() -> None:
    client, study, assignment = _participant_client(2)

    @_examples(250)
    @given(
        number=st.one_of(st.integers(0, 12), st.integers(10**9, 10**30)),
        pk=st.sampled_from([assignment.pk, 10**25]),
        goal_first=st.booleans(),
        extra=st.dictionaries(ANY_TEXT, VALUE, max_size=3),
    )
    def click(number: int, pk: int, goal_first: bool, extra: dict[str, Any]) -> None:
        if goal_first:
            _send("goal", client, "post", f"/a/{study.slug}/item/{pk}/goal/", extra)
        _send("step", client, "post", f"/a/{study.slug}/item/{pk}/steps/{number}/", extra)

    click()


def test_it_survives_any_entry_and_stage_post() -> None:
    study = make_study(n_items=2, k=2)

    @_examples(350)
    @given(
        pid_value=st.one_of(VALUE, st.just(pid(7)), st.just(pid(7).upper()), st.just(pid(10).upper())),
        study_id=VALUE,
        session_id=VALUE,
        answers=st.dictionaries(st.sampled_from(["q0", "q1", "q2", "q9", "q"]), VALUE, max_size=4),
        fresh=st.booleans(),
    )
    def walk(pid_value: str, study_id: str, session_id: str, answers: dict[str, Any], fresh: bool) -> None:
        client = Client()
        params = {"PROLIFIC_PID": pid_value, "STUDY_ID": study_id, "SESSION_ID": session_id}
        _send("entry", client, "get", f"/a/{study.slug}/", params)
        for stage in ("consent", "training") if fresh else ():
            _send(stage, client, "post", f"/a/{study.slug}/{stage}/", answers)
        _send("check", client, "post", f"/a/{study.slug}/check/", answers)

    walk()


# --- staff pages and the API: every filter parameter -----------------------------------------------------

PAGES: dict[str, tuple[str, ...]] = {
    "/": ("judge",),
    "/leaderboard.csv": ("judge",),
    "/leaderboard/topics/": ("judge", "score"),
    "/leaderboard/topics.csv": ("judge", "score"),
    "/judges/rank-correlation/": ("score",),
    "/failures/": ("topic", "generator", "judge", "study", "source", "q", "cursor", "failure"),
    "/jobs/": ("page",),
    "/studies/": ("page",),
    "/agreement/": ("study",),
    "/api/leaderboard/": ("judge", "generator", "page"),
    "/api/leaderboard/by-topic/": ("judge", "generator", "page"),
    "/api/judges/rank-correlation/": ("score", "judge"),
    "/api/failures/": ("topic", "generator", "judge", "study", "source", "q", "cursor", "counts"),
    "/api/procedures/": ("split", "topic", "source_example_id", "page"),
    "/api/generations/": ("generator", "procedure", "page"),
    "/api/judgments/": ("judge", "generator", "generation", "topic", "parse_failed", "has_failure", "page"),
    "/api/jobs/": ("kind", "status", "page"),
    "/api/agreement/": ("study",),
    "/api/mining/runs/": ("page", "status"),
}
PARAMS = st.sampled_from(sorted(PAGES)).flatmap(
    lambda path: st.tuples(
        st.just(path),
        st.dictionaries(st.sampled_from(PAGES[path]), st.one_of(VALUE, VALUES), max_size=len(PAGES[path])),
    )
)


def test_it_survives_any_filter_on_the_staff_pages_and_the_api() -> None:
    world = make_scored_world()
    client = Client()
    staff = make_user(is_staff=True)
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    generation = world["generations"][world["generators"][0]][0]
    detail_pages = [f"/generators/{world['generators'][0].pk}/", f"/generations/{generation.pk}/"]

    @_examples(750)
    @given(page=PARAMS, detail=st.sampled_from(detail_pages), query=st.one_of(VALUE, VALUES))
    def browse(page: tuple[str, dict[str, Any]], detail: str, query: Any) -> None:
        path, params = page
        _send(path, client, "get", path, params)
        _send("detail", client, "get", detail, {"page": query, "failure": query})

    browse()
