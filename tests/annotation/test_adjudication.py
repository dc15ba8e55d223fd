"""Adjudication of a critical-failures study: which items are queued and in what order, setting gold with the
annotators' own rules and a reason, refusals that store nothing, undoing, starting from a label, the gold
exports (now and as of a past time, CSV neutralised) and who may see any of it."""

from __future__ import annotations

import csv
import io
import json
import time
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from annotation.base.models import Annotation, Study, StudyItem
from annotation.kinds.critical_failures.adjudication import review_queue
from annotation.kinds.critical_failures.gold import gold_items
from annotation.kinds.critical_failures.gold_events import gold_decide
from annotation.kinds.critical_failures.models import GoldEvent
from annotation.kinds.critical_failures.posted import FailureInput, Submission
from tests.annotation.conftest import annotate_all, make_study, no_failure, qualified
from tests.factories import logged_in, make_judge, make_judgment, make_user
from tests.fuzzing import fuzz_settings


def failure(text: str = "Step 1 uses a tablespoon, not a spoonful.") -> Submission:
    return Submission(
        has_failure=True, failures=[FailureInput(text, [1], [1])], comments="", user_agent="test"
    )


def labelled(answers: dict[int, list[bool]], k: int = 3) -> tuple[Study, list[StudyItem]]:
    """A study of len(answers) items, k annotators each; answers[position index][annotator] = has failure."""
    study = make_study(n_items=len(answers), k=k)
    items = list(study.items.order_by("position"))
    for n in range(k):
        participant = qualified(study, 100 + n)

        def answer(assignment: Any, n: int = n) -> Submission:
            index = items.index(next(i for i in items if i.pk == assignment.item_id))
            return failure() if answers[index][n] else no_failure()

        annotate_all(participant, answer)
    return study, items


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    # Items by index; the judge's verdict on each is set below.
    study, items = labelled(
        {
            0: [False, False, False],  # unanimous, the judge agrees -> not queued
            1: [True, True, False],  # annotators disagree, the judge agrees with the majority
            2: [True, True, True],  # unanimous failure, the judge says none -> queued (judge against)
            3: [False, False, False],  # unanimous, the judge's verdict failed to parse -> not queued
            4: [True, False, False],  # annotators disagree and the judge is against the majority
        }
    )
    judge = make_judge(model="judge-a")
    fail = [("Wrong amount.", [1], [1])]
    make_judgment(generation=items[0].generation, judge=judge)
    make_judgment(generation=items[1].generation, judge=judge, failures=fail)
    make_judgment(generation=items[2].generation, judge=judge)
    make_judgment(generation=items[3].generation, judge=judge, failures=fail, parse_failed=True)
    make_judgment(generation=items[4].generation, judge=judge, failures=fail)
    staff = make_user(is_staff=True)
    return {"study": study, "items": items, "judge": judge, "client": logged_in(staff), "staff": staff}


def test_the_queue_holds_disagreements_hardest_first(world: dict[str, Any]) -> None:
    items = world["items"]
    queue = review_queue(world["study"])
    # Item 4 (a 1-2 split with a judge against) before 2 (unanimous, a judge against) before 1 (a 2-1 split).
    assert [e.item.pk for e in queue.entries] == [items[4].pk, items[2].pk, items[1].pk]
    assert (queue.n_open, queue.n_decided) == (3, 0)
    assert [j.model for j in queue.entries[1].judges_against] == ["judge-a"]
    estimate = queue.entries[0].dawid_skene  # 1 of 3 say failure: Dawid-Skene's own estimate is shown
    assert estimate is not None and estimate.votes == (("no failure", 2), ("failure", 1))
    assert estimate.label in {"failure", "no failure"} and 0.5 <= estimate.posterior <= 1
    page = world["client"].get(reverse("annotation:adjudication_queue", args=[world["study"].slug]))
    assert page.status_code == 200
    assert page.content.decode().count('class="btn btn-small"') == 3
    assert f"Dawid\u2013Skene: {estimate.label} ({estimate.posterior:.2f})" in page.content.decode()


def _post(client: Client, study: Study, item: StudyItem, data: dict[str, Any]) -> Any:
    return client.post(reverse("annotation:adjudicate", args=[study.slug, item.pk]), data)


def test_setting_gold_records_an_event_and_goes_to_the_next_open_item(world: dict[str, Any]) -> None:
    study, items, client = world["study"], world["items"], world["client"]
    response = _post(
        client,
        study,
        items[2],
        {
            "has_failure": "yes",
            "failure-0-description": "Measuring a tablespoon is not the L1's spoonful.",
            "failure-0-l1": ["1"],
            "failure-0-l2": ["1"],
            "failure-1-description": "",  # an unused blank entry is ignored
            "reason": "All three annotators saw it; the judge missed it.",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:adjudicate", args=[study.slug, items[4].pk])
    gold = gold_items(study)[items[2].pk]
    assert gold.has_failure and gold.failures[0].l1_steps == [1] and gold.failures[0].l2_steps == [1]
    event = GoldEvent.objects.get()
    assert event.decided_by == world["staff"] and event.before is None
    assert event.reason == "All three annotators saw it; the judge missed it."
    assert [e.item.pk for e in review_queue(study).entries] == [items[4].pk, items[1].pk]
    assert [e.item.pk for e in review_queue(study, "decided").entries] == [items[2].pk]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"has_failure": "no", "reason": ""}, "needs a reason"),
        ({"has_failure": "", "reason": "x"}, "Choose"),
        ({"has_failure": "yes", "reason": "x"}, "Describe at least one critical failure"),
        ({"has_failure": "yes", "failure-0-description": "No steps.", "reason": "x"}, "select the L1"),
        (
            {"has_failure": "yes", "failure-0-description": "d", "failure-0-l2": ["99"], "reason": "x"},
            "failure-0-l2: &#x27;99&#x27; is not an L2 step number (1 to 4)",
        ),
        ({"has_failure": "maybe", "reason": "x"}, "has_failure: &#x27;maybe&#x27; is not yes or no"),
        # #31 item 17: a repeated field is refused, not read as its last value ("no")
        ({"has_failure": ["yes", "no"], "reason": "x"}, "has_failure: &#x27;yes,no&#x27; is not one answer"),
        ({"has_failure": "no", "reason": ["x", "y"]}, "reason: &#x27;x,y&#x27; is not one answer"),
        ({"action": ["clear", "x"], "reason": "x"}, "action: &#x27;clear,x&#x27; is not one answer"),
    ],
)
def test_a_refused_gold_stores_nothing_and_says_why(
    world: dict[str, Any], data: dict[str, Any], says: str
) -> None:
    study, item = world["study"], world["items"][1]
    gold_decide(
        item=item, verdict={"has_failure": False, "failures": []}, reason="first", user=world["staff"]
    )
    response = _post(world["client"], study, item, data)
    assert response.status_code == 400
    assert says in response.content.decode()
    assert GoldEvent.objects.count() == 1 and gold_items(study)[item.pk].has_failure is False


def test_undo_restores_the_gold_it_replaced_with_a_reason(world: dict[str, Any]) -> None:
    study, item, client = world["study"], world["items"][1], world["client"]
    gold_decide(
        item=item, verdict={"has_failure": False, "failures": []}, reason="first", user=world["staff"]
    )
    _post(client, study, item, {"has_failure": "no", "action": "clear", "reason": "Not decidable."})
    assert item.pk not in gold_items(study)
    again = _post(client, study, item, {"action": "clear", "reason": "twice"})
    assert again.status_code == 400 and "the item has no gold to clear" in again.content.decode()
    assert GoldEvent.objects.count() == 2
    cleared = GoldEvent.objects.order_by("-id").first()
    assert cleared is not None
    url = reverse("annotation:gold_undo", args=[study.slug, item.pk, cleared.pk])
    refused = client.post(url, {"reason": " "}, follow=True)
    assert "Not undone: reason: a gold decision needs a reason" in refused.content.decode()
    assert GoldEvent.objects.count() == 2
    client.post(url, {"reason": "It was decidable after all."})
    assert gold_items(study)[item.pk].has_failure is False
    assert GoldEvent.objects.count() == 3
    page = client.get(reverse("annotation:adjudicate", args=[study.slug, item.pk]))
    assert "no gold → no critical failure" in page.content.decode()


def test_the_form_starts_from_an_annotators_answer(world: dict[str, Any]) -> None:
    study, item = world["study"], world["items"][4]
    annotation = Annotation.objects.filter(item=item, has_failure=True).get()
    url = reverse("annotation:adjudicate", args=[study.slug, item.pk]) + f"?start=annotation-{annotation.pk}"
    html = world["client"].get(url).content.decode()
    assert ">Step 1 uses a tablespoon, not a spoonful.</textarea>" in html
    assert 'name="failure-0-l1" value="1" checked' in html


def test_user_text_is_escaped_on_the_page(world: dict[str, Any]) -> None:
    study, item = world["study"], world["items"][1]
    verdict = {
        "has_failure": True,
        "failures": [{"description": "<b>x</b>", "l1_steps": [1], "l2_steps": []}],
    }
    gold_decide(item=item, verdict=verdict, reason="<script>alert(1)</script>", user=world["staff"])
    html = world["client"].get(reverse("annotation:adjudicate", args=[study.slug, item.pk])).content.decode()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "<b>x</b>" not in html


def test_gold_exports_now_and_as_of_a_past_time(world: dict[str, Any]) -> None:
    study, items, client = world["study"], world["items"], world["client"]
    first = {
        "has_failure": True,
        "failures": [{"description": "=cmd|' /C calc'!A0", "l1_steps": [1], "l2_steps": [2]}],
    }
    gold_decide(item=items[2], verdict=first, reason="=HYPERLINK(1)", user=world["staff"])
    time.sleep(0.01)
    between = timezone.now()
    time.sleep(0.01)
    gold_decide(
        item=items[2], verdict={"has_failure": False, "failures": []}, reason="Re-read.", user=world["staff"]
    )
    gold_decide(
        item=items[4], verdict={"has_failure": False, "failures": []}, reason="ok", user=world["staff"]
    )

    now = client.get(reverse("annotation:gold_jsonl", args=[study.slug]))
    rows = [json.loads(line) for line in now.content.decode().splitlines()]
    assert [(r["item_id"], r["has_failure"], r["n_decisions"]) for r in rows] == [
        (items[2].pk, False, 2),
        (items[4].pk, False, 1),
    ]
    past = client.get(reverse("annotation:gold_jsonl", args=[study.slug]), {"at": between.isoformat()})
    (row,) = [json.loads(line) for line in past.content.decode().splitlines()]
    assert row["failures"] == first["failures"] and row["reason"] == "=HYPERLINK(1)"

    sheet = client.get(reverse("annotation:gold_csv", args=[study.slug]), {"at": between.isoformat()})
    (cells,) = list(csv.DictReader(io.StringIO(sheet.content.decode())))
    assert cells["reason"] == "'=HYPERLINK(1)"
    assert json.loads(cells["failures"]) == first["failures"]

    log = client.get(reverse("annotation:gold_events_jsonl", args=[study.slug]))
    assert len(log.content.decode().splitlines()) == 3
    bad = client.get(reverse("annotation:gold_jsonl", args=[study.slug]), {"at": "yesterday"})
    assert bad.status_code == 400 and "at: 'yesterday' is not an ISO 8601 date-time" in bad.content.decode()


def test_only_staff_adjudicate_and_only_the_studys_own_items(world: dict[str, Any]) -> None:
    study, item = world["study"], world["items"][1]
    urls = [
        reverse("annotation:adjudication_queue", args=[study.slug]),
        reverse("annotation:adjudicate", args=[study.slug, item.pk]),
        reverse("annotation:gold_csv", args=[study.slug]),
    ]
    annotator = logged_in(make_user())
    for url in urls:
        assert Client().get(url).status_code == 302
        assert annotator.get(url).status_code == 403
    assert annotator.post(urls[1], {"has_failure": "no", "reason": "x"}).status_code == 403
    assert not GoldEvent.objects.exists()
    other = make_study(n_items=1, k=1)
    assert (
        world["client"].get(reverse("annotation:adjudicate", args=[other.slug, item.pk])).status_code == 404
    )
    bad = world["client"].get(urls[0], {"show": "everything"})
    assert bad.status_code == 400 and "show: 'everything'" in bad.content.decode()


@pytest.mark.django_db
def test_a_tie_comes_first_and_a_decided_item_last() -> None:
    study, items = labelled({0: [True, True], 1: [True, False], 2: [False, True]}, k=2)
    make_judgment(generation=items[0].generation, judge=make_judge())  # against a unanimous "failure"
    gold_decide(item=items[1], verdict={"has_failure": False, "failures": []}, reason="r")
    queue = review_queue(study, "all")
    assert [e.item.pk for e in queue.entries] == [items[2].pk, items[0].pk, items[1].pk]
    assert (queue.n_open, queue.n_decided) == (2, 1)


def test_the_queue_pages_keep_what_is_shown(world: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("annotation.kinds.critical_failures.views_adjudication.PER_PAGE", 2)
    url = reverse("annotation:adjudication_queue", args=[world["study"].slug])
    first = world["client"].get(url, {"show": "all"}).content.decode()
    assert 'href="?show=all&amp;page=2"' in first and "Page 1 of 2" in first
    second = world["client"].get(url, {"show": "all", "page": "2"}).content.decode()
    assert second.count('class="btn btn-small"') == 1


def test_the_gold_api_now_as_of_a_time_and_its_events(world: dict[str, Any]) -> None:
    study, items, staff = world["study"], world["items"], world["staff"]
    verdict = {"has_failure": True, "failures": [{"description": "d", "l1_steps": [1], "l2_steps": [2]}]}
    gold_decide(item=items[2], verdict=verdict, reason="seen by all three", user=staff)
    time.sleep(0.01)
    between = timezone.now()
    time.sleep(0.01)
    gold_decide(item=items[2], verdict=None, reason="cleared", user=staff)
    client, url = world["client"], f"/api/studies/{study.slug}/gold/"
    assert client.get(url).json()["gold"] == []
    (row,) = client.get(url, {"at": between.isoformat()}).json()["gold"]
    assert (row["item_id"], row["failures"], row["decided_by"]) == (
        items[2].pk,
        verdict["failures"],
        staff.username,
    )
    events = client.get(f"{url}events/").json()["events"]
    assert [(e["verdict"], e["before"]) for e in events] == [(verdict, None), (None, verdict)]
    bad = client.get(url, {"at": "soon"})
    assert bad.status_code == 400 and "at" in bad.json()
    assert logged_in(make_user()).get(url).status_code == 403


FIELD_VALUE = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.sampled_from(["", "yes", "no", "clear", "1", "4", "99", "٣", "\x00", "1e400"]),
)
GOLD_FIELDS = st.sampled_from(
    ["has_failure", "reason", "action", "failure-0-description", "failure-0-l1", "failure-0-l2",
     "failure-7-l2", "failure-999-description", "failure-x-l1"]
)  # fmt: skip


@given(posted=st.dictionaries(GOLD_FIELDS, st.lists(FIELD_VALUE, max_size=3), max_size=6))
@fuzz_settings(60)
def test_the_gold_form_never_fails_and_a_refusal_stores_nothing(
    world: dict[str, Any], posted: dict[str, list[str]]
) -> None:
    study, item = world["study"], world["items"][1]
    before = list(GoldEvent.objects.values_list("pk", flat=True))
    response = _post(world["client"], study, item, posted)
    assert response.status_code in {302, 400}, response.content[:300]
    if response.status_code == 400:
        assert list(GoldEvent.objects.values_list("pk", flat=True)) == before
    else:
        assert GoldEvent.objects.count() == len(before) + 1
