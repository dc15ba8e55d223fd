"""Annotator pages over HTTP (Django's client): entry and session binding, the flow, the gates, htmx
fragments, and what one participant can never do to another's assignment.
Researcher pages: staff only, exports."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.models import Annotation, Assignment, Participant, Stage, Study
from annotation.flow import services
from tests.annotation.conftest import make_study, pid
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def entry_url(study: Study, n: int = 1, **extra: str) -> str:
    params = {"PROLIFIC_PID": pid(n), "STUDY_ID": "studyabc", "SESSION_ID": "sess1", **extra}
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"{reverse('annotator:entry', kwargs={'slug': study.slug})}?{query}"


def qualify(client: Client, study: Study, n: int = 1) -> Participant:
    """Walk one browser session from the Prolific URL to the items."""
    assert client.get(entry_url(study, n)).status_code == 302
    client.post(reverse("annotator:consent", kwargs={"slug": study.slug}))
    client.post(reverse("annotator:training", kwargs={"slug": study.slug}))
    answers = {f"q{i}": q["answer"] for i, q in enumerate(study.comprehension_questions)}
    response = client.post(reverse("annotator:comprehension", kwargs={"slug": study.slug}), answers)
    assert response.status_code == 302 and response.url.endswith("/item/")
    return Participant.objects.get(study=study, prolific_pid=pid(n))


def current(client: Client, study: Study) -> Assignment:
    response = client.get(reverse("annotator:item", kwargs={"slug": study.slug}))
    assert response.status_code == 200
    return response.context["assignment"]


def url(name: str, study: Study, assignment: Assignment, *extra: int) -> str:
    return reverse(f"annotator:{name}", args=[study.slug, assignment.pk, *extra])


def read_all(client: Client, study: Study, assignment: Assignment) -> None:
    assert client.post(url("acknowledge_goal", study, assignment)).status_code == 302
    for n in range(1, assignment.n_reading_steps + 1):
        assert client.post(url("reveal_step", study, assignment, n)).status_code == 302


# --- Entry ---


def test_it_binds_a_session_to_the_pid_and_resumes_where_it_was(client: Client) -> None:
    study = make_study(n_items=2)
    response = client.get(entry_url(study))
    assert response.status_code == 302 and response.url == reverse("annotator:consent", args=[study.slug])
    client.post(reverse("annotator:consent", args=[study.slug]))
    participant = Participant.objects.get()
    assert participant.stage == Stage.TRAINING and participant.prolific_session_id == "sess1"
    other_browser = Client()
    resumed = other_browser.get(entry_url(study))
    assert resumed.url == reverse("annotator:training", args=[study.slug])
    assert Participant.objects.count() == 1
    # A page of another stage sends the participant back where they are.
    assert client.get(reverse("annotator:item", args=[study.slug])).url == reverse(
        "annotator:training", args=[study.slug]
    )


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?PROLIFIC_PID=",
        "?PROLIFIC_PID=abc",
        "?PROLIFIC_PID=<script>",
        f"?PROLIFIC_PID={'a' * 24}&SESSION_ID=a%20b",
    ],
)
def test_it_explains_a_missing_or_malformed_pid(client: Client, query: str) -> None:
    study = make_study(n_items=1)
    response = client.get(reverse("annotator:entry", args=[study.slug]) + query)
    assert response.status_code == 400
    assert b"Prolific" in response.content and not Participant.objects.exists()


def test_it_explains_a_closed_study(client: Client) -> None:
    study = make_study(n_items=1, is_open=False)
    response = client.get(entry_url(study))
    assert response.status_code == 410 and b"closed" in response.content


def test_it_refuses_a_link_for_another_prolific_study(client: Client) -> None:
    study = make_study(n_items=1, prolific_study_id="5f1e" * 6)
    assert client.get(entry_url(study)).status_code == 400
    assert client.get(entry_url(study, STUDY_ID="5f1e" * 6)).status_code == 302


def test_it_answers_404_for_an_unknown_study(client: Client) -> None:
    assert client.get("/a/no-such-study/?PROLIFIC_PID=" + pid(1)).status_code == 404


# --- Flow ---


def test_it_walks_from_the_prolific_url_to_the_completion_redirect(client: Client) -> None:
    study = make_study(n_items=2, items_per_participant=2)
    qualify(client, study)
    for _ in range(2):
        assignment = current(client, study)
        read_all(client, study, assignment)
        response = client.post(
            url("submit", study, assignment), {"has_failure": "no", "active_seconds": "3.5"}
        )
        assert response.status_code == 302
    response = client.get(response.url)
    assert response.status_code == 302
    assert response.url == "https://app.prolific.com/submissions/complete?cc=C0MPLETE"
    done = client.get(entry_url(study))
    assert done.url == reverse("annotator:done", args=[study.slug])
    page = client.get(done.url)
    assert b"C0MPLETE" in page.content
    assert Annotation.objects.filter(study=study).count() == 2


def test_failing_the_attention_checks_ends_with_their_code(client: Client) -> None:
    study = make_study(
        n_items=2,
        items_per_participant=2,
        attention_checks=2,
        attention_check_every=1,
        attention_fail_limit=1,
    )
    qualify(client, study)
    while (assignment := current(client, study)) is not None:
        read_all(client, study, assignment)
        item = assignment.item
        against = "no" if item.is_attention_check and item.attention_expects_failure else "yes"
        answer = {"has_failure": against if item.is_attention_check else "no", "active_seconds": "3.5"}
        if answer["has_failure"] == "yes":
            answer |= {"failure-0-description": "x", "failure-0-l1": "1"}
        response = client.post(url("submit", study, assignment), answer)
        assert response.status_code == 302
        response = client.get(response.url)
        if response.status_code == 302 and response.url.startswith("https://"):
            break
    assert response.url == "https://app.prolific.com/submissions/complete?cc=ATTENT10N"
    page = client.get(reverse("annotator:done", args=[study.slug]))
    assert b"ATTENT10N" in page.content and b"will be reviewed" in page.content


def test_it_screens_out_with_the_screenout_code_after_two_failed_checks(client: Client) -> None:
    study = make_study(n_items=1)
    client.get(entry_url(study))
    client.post(reverse("annotator:consent", args=[study.slug]))
    client.post(reverse("annotator:training", args=[study.slug]))
    check = reverse("annotator:comprehension", args=[study.slug])
    first = client.post(check, {"q0": "0", "q1": "1", "q2": "0"})
    assert first.status_code == 422 and b"1 attempt left" in first.content
    second = client.post(check, {"q0": "0"})
    assert second.url == reverse("annotator:done", args=[study.slug])
    page = client.get(second.url)
    assert b"SCREEN0UT" in page.content and b"not a rejection" in page.content


def test_it_stores_failures_posted_from_the_form(client: Client) -> None:
    study = make_study(n_items=1)
    qualify(client, study)
    assignment = current(client, study)
    read_all(client, study, assignment)
    form = {
        "has_failure": "yes",
        "failure-0-description": "L2 never rinses",
        "failure-0-l1": ["3"],
        "failure-0-l2": ["4"],
        "failure-3-description": "Too much oil",
        "failure-3-l2": ["1"],
        "comments": "ok",
    }
    assert client.post(url("submit", study, assignment), form).status_code == 302
    annotation = Annotation.objects.get()
    assert [(f.description, f.l1_steps, f.l2_steps) for f in annotation.failures.all()] == [
        ("L2 never rinses", [3], [4]),
        ("Too much oil", [], [1]),
    ]


# --- Gates over HTTP ---


def test_it_refuses_a_direct_post_before_the_dwell_time(client: Client) -> None:
    study = make_study(n_items=1, dwell=90)
    qualify(client, study)
    assignment = current(client, study)
    read_all(client, study, assignment)
    response = client.post(url("submit", study, assignment), {"has_failure": "no"})
    assert response.status_code == 400 and b"Submission opens 90 s" in response.content
    assert not Annotation.objects.exists()


def test_it_refuses_a_direct_post_without_every_step_read(client: Client) -> None:
    study = make_study(n_items=1)
    qualify(client, study)
    assignment = current(client, study)
    client.post(url("acknowledge_goal", study, assignment))
    client.post(url("reveal_step", study, assignment, 1))
    response = client.post(url("submit", study, assignment), {"has_failure": "no"})
    assert response.status_code == 400 and b"1 of 4 read" in response.content


def test_it_keeps_what_was_typed_when_a_submission_is_refused(client: Client) -> None:
    study = make_study(n_items=1)
    qualify(client, study)
    assignment = current(client, study)
    read_all(client, study, assignment)
    response = client.post(
        url("submit", study, assignment),
        {"has_failure": "yes", "failure-0-description": "", "failure-0-l2": ["2"], "comments": "hmm"},
    )
    assert response.status_code == 400 and b"needs a description" in response.content
    assert b"hmm</textarea>" in response.content


def test_it_accepts_a_double_submit_once(client: Client) -> None:
    study = make_study(n_items=2)
    qualify(client, study)
    assignment = current(client, study)
    read_all(client, study, assignment)
    for _ in range(2):
        assert client.post(url("submit", study, assignment), {"has_failure": "no"}).status_code == 302
    assert Annotation.objects.count() == 1


def test_it_refuses_the_wrong_method(client: Client) -> None:
    study = make_study(n_items=1)
    qualify(client, study)
    assignment = current(client, study)
    assert client.get(url("submit", study, assignment)).status_code == 405
    assert client.get(url("reveal_step", study, assignment, 1)).status_code == 405
    assert client.put(reverse("annotator:consent", args=[study.slug])).status_code == 405


def test_it_answers_htmx_with_the_reading_fragment(client: Client) -> None:
    study = make_study(n_items=1)
    qualify(client, study)
    assignment = current(client, study)
    response = client.post(url("acknowledge_goal", study, assignment), headers={"HX-Request": "true"})
    assert response.status_code == 200 and b"<html" not in response.content
    assert b'id="reading"' in response.content and b"Reading progress: 0/4 steps (0%)" in response.content
    response = client.post(url("reveal_step", study, assignment, 1), headers={"HX-Request": "true"})
    assert b"Reading progress: 1/4 steps (25%)" in response.content
    assert b"Measure 1 tablespoon" in response.content and b"Rinse with water" not in response.content
    skipped = client.post(url("reveal_step", study, assignment, 4), headers={"HX-Request": "true"})
    assert skipped.status_code == 400 and b"next one is step 2" in skipped.content


def test_it_shows_l2_steps_only_once_revealed(client: Client) -> None:
    study = make_study(n_items=1, dwell=90)
    qualify(client, study)
    page = client.get(reverse("annotator:item", args=[study.slug]))
    assert b"Measure 1 tablespoon" not in page.content and b"Place a spoonful" in page.content
    assert b"until submission becomes open" in page.content and b"1:30" in page.content


# --- Security ---


def test_it_never_lets_a_participant_fetch_or_write_anothers_assignment() -> None:
    study = make_study(n_items=2)
    alice, bob = Client(), Client()
    qualify(alice, study, 1)
    qualify(bob, study, 2)
    alices = current(alice, study)
    for name, extra in (("acknowledge_goal", ()), ("reveal_step", (1,)), ("submit", ())):
        response = bob.post(url(name, study, alices, *extra), {"has_failure": "no"})
        assert response.status_code == 404
    alices.refresh_from_db()
    assert alices.goal_acknowledged_at is None and not Annotation.objects.exists()


def test_it_ignores_a_participant_id_sent_by_the_client(client: Client) -> None:
    study = make_study(n_items=2)
    qualify(client, study, 1)
    other = services.participant_enter(
        study=study, prolific_pid=pid(2), prolific_study_id="", prolific_session_id="", user_agent=""
    )
    page = client.get(reverse("annotator:item", args=[study.slug]) + f"?participant={other.pk}")
    assert page.context["participant"].prolific_pid == pid(1)


def test_it_refuses_annotator_pages_without_a_session(client: Client) -> None:
    study = make_study(n_items=1)
    for name in ("consent", "training", "comprehension", "item", "done"):
        response = client.get(reverse(f"annotator:{name}", args=[study.slug]))
        assert response.status_code == 400 and b"start from Prolific" in response.content


def test_it_shows_procedure_html_as_text(client: Client) -> None:
    study = make_study(n_items=1, l1=["<script>alert('l1')</script>"], l2=["<img src=x onerror=alert(1)>"])
    qualify(client, study)
    assignment = current(client, study)
    client.post(url("acknowledge_goal", study, assignment))
    page = client.get(reverse("annotator:item", args=[study.slug]))
    assert b"<script>alert" not in page.content and b"&lt;script&gt;alert(&#x27;l1&#x27;)" in page.content
    assert b"<img src=x" not in page.content and b"&lt;img src=x onerror=alert(1)&gt;" in page.content


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("study_list", []),
        ("study_create", []),
        ("study_detail", ["SLUG"]),
        ("study_export_jsonl", ["SLUG"]),
        ("study_export_csv", ["SLUG"]),
    ],
)
def test_it_refuses_researcher_pages_to_annotators_and_non_staff(
    client: Client, name: str, args: list[str]
) -> None:
    study = make_study(n_items=1)
    path = reverse(f"annotation:{name}", args=[study.slug if a == "SLUG" else a for a in args])
    qualify(client, study)  # an annotator's session
    response = client.get(path)
    assert response.status_code == 302 and "/accounts/login/" in response.url
    client.force_login(make_user(is_staff=False))
    assert client.get(path).status_code == 403


# --- Researcher pages ---


def test_it_creates_a_study_from_the_form(staff: Client) -> None:
    make_study(n_items=3)
    form: dict[str, Any] = {
        "title": "Pilot",
        "slug": "pilot",
        "seed": "1",
        "sample_size": "2",
        "annotators_per_item": "3",
        "items_per_participant": "10",
        "min_dwell_seconds": "90",
        "estimated_item_minutes": "2",
        "attention_checks": "1",
        "attention_check_every": "5",
        "instructions": "Aim for 1-2 minutes.",
        "consent_text": "ok",
        "training_text": "## Hi",
        "comprehension_questions": json.dumps([{"question": "?", "choices": ["a", "b"], "answer": 1}]),
    }
    response = staff.post(reverse("annotation:study_create"), form)
    assert response.status_code == 302
    study = Study.objects.get(slug="pilot")
    assert study.lease_minutes == 9 and study.completion_code and study.screenout_code
    assert study.items.filter(is_attention_check=False).count() == 2
    assert study.selection["seed"] == 1
    assert staff.get(reverse("annotation:study_create")).status_code == 200


def test_it_shows_progress_per_item_and_per_annotator(staff: Client) -> None:
    study = make_study(n_items=2, k=2)
    participant_client = Client()
    qualify(participant_client, study)
    assignment = current(participant_client, study)
    read_all(participant_client, study, assignment)
    participant_client.post(url("submit", study, assignment), {"has_failure": "no"})
    page = staff.get(reverse("annotation:study_detail", args=[study.slug]))
    assert page.status_code == 200
    assert pid(1).encode() in page.content and b"1 / 4" in page.content


def test_it_lists_studies_in_a_fixed_number_of_queries(staff: Client, django_assert_num_queries: Any) -> None:
    for _ in range(4):
        make_study(n_items=2, k=3)
    with django_assert_num_queries(3):  # session, user, studies with their counts
        page = staff.get(reverse("annotation:study_list"))
    assert page.status_code == 200 and b"0 / 6" in page.content


def test_it_labels_each_study_by_its_kind_and_counts_the_kinds_in_the_lede(staff: Client) -> None:
    """#31 item 4: a pairwise study was listed as "Critical failures" and the lede said "two kinds"."""
    from django.utils.html import escape

    from annotation.base.registry import KINDS

    for name in KINDS:
        Study.objects.create(slug=f"study-{name.replace('_', '-')}", title=f"A {name} study", kind=name)
    page = staff.get(reverse("annotation:study_list")).content.decode()
    rows = {row.split('class="id">')[1].split("<")[0]: row for row in page.split("<tr>")[2:]}
    for name, kind in KINDS.items():
        assert f"<td>{escape(kind.label)}</td>" in rows[f"study-{name.replace('_', '-')}"], name
        assert f"<strong>{escape(kind.label.lower())}</strong>, {escape(kind.summary)}" in page
    assert "Prolific studies of four kinds:" in page and len(KINDS) == 4


def test_it_exports_jsonl_and_csv(staff: Client) -> None:
    study = make_study(n_items=1)
    annotator = Client()
    qualify(annotator, study)
    assignment = current(annotator, study)
    read_all(annotator, study, assignment)
    annotator.post(
        url("submit", study, assignment),
        {"has_failure": "yes", "failure-0-description": 'No rinse, "really"', "failure-0-l2": ["4"]},
    )
    jsonl = staff.get(reverse("annotation:study_export_jsonl", args=[study.slug])).content
    rows = [json.loads(line) for line in jsonl.splitlines()]
    assert rows[0]["critical_failures"] == [
        {"failure": 'No rinse, "really"', "L1_steps": [], "L2_steps": [4]}
    ]
    assert rows[0]["prolific_pid"] == pid(1)
    raw = staff.get(reverse("annotation:study_export_csv", args=[study.slug])).content
    table = list(csv.DictReader(io.StringIO(raw.decode())))
    assert len(table) == 1 and json.loads(table[0]["critical_failures"])[0]["L2_steps"] == [4]


def test_it_closes_and_reopens_a_study(staff: Client) -> None:
    study = make_study(n_items=1)
    staff.post(reverse("annotation:study_toggle_open", args=[study.slug]))
    study.refresh_from_db()
    assert not study.is_open


def test_it_asks_for_the_stated_answer_on_an_attention_check(client: Client) -> None:
    study = make_study(n_items=2, k=1, attention_checks=1, attention_check_every=1, items_per_participant=0)
    qualify(client, study)
    first = current(client, study)
    read_all(client, study, first)
    client.post(url("submit", study, first), {"has_failure": "no"})
    page = client.get(reverse("annotator:item", args=[study.slug]))
    check = page.context["assignment"]
    assert check.item.is_attention_check
    expected = (
        "Critical failures identified" if check.item.attention_expects_failure else "No critical failures"
    )
    assert (
        f"Attention check: whatever you think of L2, please answer this question with “{expected}".encode()
        in (page.content)
    )


def test_it_refuses_the_wrong_method_on_researcher_pages(staff: Client) -> None:
    study = make_study(n_items=1)
    assert staff.get(reverse("annotation:study_toggle_open", args=[study.slug])).status_code == 405
    assert staff.post(reverse("annotation:study_detail", args=[study.slug])).status_code == 405
    assert staff.post(reverse("annotation:study_export_csv", args=[study.slug])).status_code == 405


def test_it_refuses_to_close_a_study_for_non_staff(client: Client) -> None:
    study = make_study(n_items=1)
    client.force_login(make_user(is_staff=False))
    assert client.post(reverse("annotation:study_toggle_open", args=[study.slug])).status_code == 403
    study.refresh_from_db()
    assert study.is_open


def test_it_explains_a_submission_on_a_reclaimed_item(client: Client) -> None:
    from datetime import timedelta

    from django.utils import timezone

    study = make_study(n_items=2, lease_minutes=5)
    qualify(client, study)
    assignment = current(client, study)
    read_all(client, study, assignment)
    services.leases_reclaim(study=study, now=timezone.now() + timedelta(minutes=6))
    response = client.post(url("submit", study, assignment), {"has_failure": "no"})
    assert response.status_code == 409 and b"given to someone else" in response.content
    assert not Annotation.objects.exists()
    page = client.get(reverse("annotator:item", args=[study.slug]))
    assert page.context["assignment"].pk != assignment.pk  # the next item, never the same one again
    assert b"Your time for the previous item ran out" in page.content
    assert (
        b"Your time for the previous item"
        not in client.get(reverse("annotator:item", args=[study.slug])).content
    )


def test_it_closes_the_items_of_a_study_that_was_closed(client: Client) -> None:
    study = make_study(n_items=1)
    qualify(client, study)
    Study.objects.filter(pk=study.pk).update(is_open=False)
    response = client.get(reverse("annotator:item", args=[study.slug]))
    assert response.status_code == 410 and b"This study is closed" in response.content


def test_it_shows_reading_progress_and_clocks_as_the_paper_does() -> None:
    from annotation.flow.views.annotator import clock, reading_percent

    assert (reading_percent(7, 8), reading_percent(1, 8), reading_percent(0, 4), reading_percent(0, 0)) == (
        88,
        13,
        0,
        100,
    )
    assert (clock(35), clock(96), clock(0)) == ("0:35", "1:36", "0:00")
