"""What a hostile or careless participant found (issue #11), one class per test group: odd input gets a 4xx
naming the field and the value (never a 500), nothing is silently accepted or dropped, the flow keeps the
participant's answers, one Prolific ID is one participant whatever its letter case, the consent page says
what is recorded, and an unlinked failure never counts as "no failure" in the step-set alpha."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.base import codebook
from annotation.base.models import AnnotatedFailure, Annotation, Assignment, Participant, Stage, Study
from annotation.kinds.critical_failures.exports import EXPORT_FIELDS
from h2e_site.inputs import BadInput, ascii_int, clean_text
from h2e_site.stats.verdicts import Label, alpha_binary, alpha_step_sets, masi_distance
from tests.annotation.conftest import make_study, pid
from tests.annotation.test_views import current, entry_url, qualify, read_all, url

pytestmark = pytest.mark.django_db


def ready_item(client: Client, study: Study) -> Assignment:
    """The participant's current item, read through and open for submission (shown two minutes ago)."""
    qualify(client, study)
    assignment = current(client, study)
    read_all(client, study, assignment)
    Assignment.objects.filter(pk=assignment.pk).update(issued_at=timezone.now() - timedelta(minutes=2))
    return assignment


def failure_post(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "has_failure": "yes",
        "failure-0-description": "Skips rinsing",
        "failure-0-l1": ["2"],
        "failure-0-l2": ["3"],
        "comments": "",
        "active_seconds": "30",
    }
    data.update(overrides)
    return data


# --- 1. server errors on odd input ---------------------------------------------------------------------


@pytest.mark.parametrize("step", ["--1", "²", "٣", "1.5", "abc", "-1", "0", "99", "1e3", " ", "१"])
def test_it_refuses_a_step_reference_that_is_not_a_step_naming_field_and_value(
    client: Client, step: str
) -> None:
    study = make_study(n_items=1)
    assignment = ready_item(client, study)
    response = client.post(url("submit", study, assignment), failure_post(**{"failure-0-l2": [step]}))
    assert response.status_code == 400
    assert (
        "failure-0-l2" in response.content.decode()
        and "is not an L2 step number" in response.content.decode()
    )
    assert not Annotation.objects.exists()


@pytest.mark.parametrize(
    "repeated",
    [
        {"has_failure": ["yes", "no"]},
        {"has_failure": ["no", "no"]},
        {"failure-0-description": ["Skips rinsing", "Something else"]},
        {"comments": ["a", "b"]},
    ],
)
def test_it_refuses_a_field_sent_twice_instead_of_taking_the_last(
    client: Client, repeated: dict[str, list[str]]
) -> None:
    """#31 item 17: has_failure=yes&has_failure=no was read as "no" (the last value)."""
    study = make_study(n_items=1)
    assignment = ready_item(client, study)
    response = client.post(url("submit", study, assignment), failure_post(**repeated))
    assert response.status_code == 400
    name = next(iter(repeated))
    assert f"{name}: &#x27;{','.join(repeated[name])}&#x27; is not one answer" in response.content.decode()
    assert not Annotation.objects.exists()


@pytest.mark.parametrize("answer", ["²", "٣", "--1", "7", "0.0", "x"])
def test_it_refuses_a_comprehension_answer_that_is_not_an_option(client: Client, answer: str) -> None:
    study = make_study(n_items=1)
    client.get(entry_url(study))
    client.post(reverse("annotator:consent", args=[study.slug]))
    client.post(reverse("annotator:training", args=[study.slug]))
    response = client.post(reverse("annotator:comprehension", args=[study.slug]), {"q0": answer})
    assert response.status_code == 400 and "q0" in response.content.decode()
    participant = Participant.objects.get()
    assert participant.comprehension_attempts == 0 and participant.stage == Stage.COMPREHENSION


def test_it_stores_text_without_nul_and_control_characters(client: Client) -> None:
    study = make_study(n_items=1)
    assignment = ready_item(client, study)
    data = failure_post(
        **{"failure-0-description": "Skips\x00 rinsing\x07\r\nfor real", "comments": "ok\x00\x1b[31m"}
    )
    response = client.post(url("submit", study, assignment), data)
    assert response.status_code == 302
    annotation = Annotation.objects.get()
    assert annotation.comments == "ok[31m"
    assert AnnotatedFailure.objects.get().description == "Skips rinsing\nfor real"


def test_it_cleans_text_and_parses_integers_in_one_place() -> None:
    assert clean_text("a\x00b\tc\r\nd\x85e\u200b") == "ab\tc\nde\u200b"
    assert ascii_int("n", " 7 ", minimum=1, maximum=9) == 7
    with pytest.raises(BadInput, match=r"n: '²' is not a whole number from 1 to 9"):
        ascii_int("n", "²", minimum=1, maximum=9)


@pytest.mark.django_db(transaction=True)
def test_it_sends_a_participant_graded_by_a_simultaneous_request_where_they_are(client: Client) -> None:
    """Two answers sent at the same moment: while this request waits for the participant's row, the other
    one passes the check; the service then refuses this one (409) and the view sends the participant on to
    their items instead of failing."""
    study = make_study(n_items=1)
    client.get(entry_url(study))
    client.post(reverse("annotator:consent", args=[study.slug]))
    client.post(reverse("annotator:training", args=[study.slug]))
    answers = {f"q{i}": q["answer"] for i, q in enumerate(study.comprehension_questions)}
    participant = Participant.objects.get()
    other = connection.copy()  # the other request's session holds the row, grading it
    other.set_autocommit(False)
    with other.cursor() as cursor:
        cursor.execute("SELECT 1 FROM annotation_participant WHERE id = %s FOR UPDATE", [participant.pk])
        cursor.execute("UPDATE annotation_participant SET stage = 'items' WHERE id = %s", [participant.pk])
    responses: list[Any] = []
    thread = threading.Thread(
        target=lambda: responses.append(
            client.post(reverse("annotator:comprehension", args=[study.slug]), answers)
        )
    )
    thread.start()
    time.sleep(1.0)  # it reads the stage (still the check), then waits for the row lock
    other.commit()
    other.close()
    thread.join(timeout=30)
    assert responses and responses[0].status_code == 302
    assert responses[0].url == reverse("annotator:item", args=[study.slug])
    assert Participant.objects.get().comprehension_attempts == 0  # graded once, by the other request


# --- 2. silent acceptance --------------------------------------------------------------------------------


def test_it_refuses_a_failure_linked_to_no_step_next_to_that_failure(client: Client) -> None:
    study = make_study(n_items=1)
    assignment = ready_item(client, study)
    data = failure_post(**{"failure-0-l1": [], "failure-0-l2": []})
    data |= {"failure-3-description": "Second one", "failure-3-l2": ["1"]}
    response = client.post(url("submit", study, assignment), data)
    html = response.content.decode()
    assert response.status_code == 400 and not Annotation.objects.exists()
    assert "Critical failure 1: select the L1 and/or L2 step(s) it concerns." in html
    entry = html[html.index('id="failure-0-anchor"') : html.index('id="failure-3-anchor"')]
    assert "field-error" in entry and "select the L1 and/or L2 step(s)" in entry
    assert "Second one" in html  # the other entry is kept as typed


def test_it_bounds_active_time_by_the_servers_clock(client: Client) -> None:
    study = make_study(n_items=1)
    assignment = ready_item(client, study)
    response = client.post(url("submit", study, assignment), failure_post(active_seconds="999999"))
    assert response.status_code == 302
    annotation = Annotation.objects.get()
    assert annotation.active_seconds is not None
    assert annotation.active_seconds <= annotation.elapsed_seconds < 200


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "1e400", "x"])
def test_it_stores_no_active_time_for_a_value_that_is_not_a_time(client: Client, value: str) -> None:
    study = make_study(n_items=1)
    assignment = ready_item(client, study)
    assert (
        client.post(url("submit", study, assignment), failure_post(active_seconds=value)).status_code == 302
    )
    assert Annotation.objects.get().active_seconds is None


@pytest.mark.parametrize(
    ("params", "field", "status"),
    [
        ("source=xyz", "source", 400),  # not a source at all
        ("judge=nope", "judge", 404),  # a judge, topic or study that is not there: nothing to list
        ("topic=Nowhere", "topic", 404),
        ("study=none", "study", 404),
    ],
)
def test_it_answers_an_unknown_filter_value_with_4xx_naming_it(
    admin_client: Client, params: str, field: str, status: int
) -> None:
    response = admin_client.get(f"/api/failures/?{params}")
    assert response.status_code == status and field in response.json()
    page = admin_client.get(f"{reverse('failures:failure_list')}?{params}").content.decode()
    assert f"Filter {field}:" in page


# --- 4. flow and consent ---------------------------------------------------------------------------------


def test_it_lets_a_participant_reread_the_training_and_keeps_their_answers(client: Client) -> None:
    study = make_study(n_items=1)
    client.get(entry_url(study))
    client.post(reverse("annotator:consent", args=[study.slug]))
    client.post(reverse("annotator:training", args=[study.slug]))
    wrong = {
        f"q{i}": (q["answer"] + 1) % len(q["choices"]) for i, q in enumerate(study.comprehension_questions)
    }
    assert client.post(reverse("annotator:comprehension", args=[study.slug]), wrong).status_code == 422
    training = client.get(reverse("annotator:training", args=[study.slug]))
    assert training.status_code == 200 and "Back to the check" in training.content.decode()
    check = client.get(reverse("annotator:comprehension", args=[study.slug])).content.decode()
    for i, answer in wrong.items():
        assert f'name="{i}" value="{answer}" required checked' in check


def test_it_says_on_the_consent_page_everything_a_study_records() -> None:
    covered = {name for _, fields in codebook.RECORDED_ABOUT_YOU for name in fields}
    about_the_item = {
        "study",
        "item",
        "is_attention_check",
        "generation_pk",
        "generator_id",
        "source_example_id",
    }
    assert set(EXPORT_FIELDS) - about_the_item <= covered
    participant_fields = {f.name for f in Participant._meta.get_fields() if f.concrete}
    bookkeeping = {"id", "study", "stage", "items_completed", "is_preview", "created_at"}
    assert participant_fields - bookkeeping <= covered


def test_it_shows_what_is_recorded_on_the_consent_page(client: Client) -> None:
    study = make_study(n_items=1)
    client.get(entry_url(study))
    html = client.get(reverse("annotator:consent", args=[study.slug])).content.decode()
    assert (
        "User-Agent" in html and "session IDs" in html and "nothing else about you is collected" not in html
    )


# --- 5. identity -----------------------------------------------------------------------------------------


def test_it_treats_a_prolific_id_in_upper_case_as_the_same_participant(client: Client) -> None:
    study = make_study(n_items=2)
    assert client.get(entry_url(study, 10)).status_code == 302  # ...00a
    upper = Client()
    response = upper.get(entry_url(study, 10).replace(pid(10), pid(10).upper()))
    assert pid(10).upper() != pid(10) and response.status_code == 302
    assert list(Participant.objects.values_list("prolific_pid", flat=True)) == [pid(10)]


def test_it_finds_a_participant_stored_in_upper_case_before_ids_were_normalised(client: Client) -> None:
    study = make_study(n_items=2)
    Participant.objects.create(study=study, prolific_pid="ABCDEF0123456789ABCDEF01", stage=Stage.TRAINING)
    response = client.get(entry_url(study).replace(pid(1), "abcdef0123456789abcdef01"))
    assert response.url == reverse("annotator:training", args=[study.slug])
    assert Participant.objects.count() == 1


# --- 7. the step-set alpha -------------------------------------------------------------------------------


def test_it_never_counts_an_unlinked_failure_as_no_failure_in_the_step_set_alpha() -> None:
    """10 units, two annotators: 3 disagree (no failure / a failure linking no step), 4 agree on no failure,
    3 agree on a failure at L2.2. Before: both sides of a disagreement were the empty set (MASI alpha 1.0)."""
    labels = []
    for unit in range(10):
        if unit < 3:
            labels += [Label("a", unit, False), Label("b", unit, True)]
        elif unit < 7:
            labels += [Label("a", unit, False), Label("b", unit, False)]
        else:
            at_step_2 = {"l2_steps": frozenset({2}), "first_l2_step": 2}
            labels += [Label("a", unit, True, **at_step_2), Label("b", unit, True, **at_step_2)]
    assert Label("b", 0, True).step_set == frozenset({"unlinked"}) != Label("a", 0, False).step_set
    assert masi_distance(Label("b", 0, True).step_set, Label("a", 0, False).step_set) == 1.0
    # By hand (the sets are pairwise disjoint, so MASI acts as nominal here): 20 values, 6 disagreeing ordered
    # pairs, D_o = 6/20; sets: empty 11, unlinked 3, {L2.2} 6 -> D_e = 2(11*3 + 11*6 + 3*6) / (20*19).
    assert alpha_step_sets(labels) == pytest.approx(1 - (6 / 20) / (2 * (33 + 66 + 18) / 380))
    # binary: no failure 11, failure 9 -> D_e = 2 * 11 * 9 / 380
    assert alpha_binary(labels) == pytest.approx(1 - (6 / 20) / (2 * 11 * 9 / 380))
