"""The researcher pages of issue #31 item 22 at scale: the calibrated leaderboard and the adjudication queue's
Dawid-Skene fit are computed once per version of what they read (a write anywhere there computes them
again, so a page never shows figures older than the data), and the adjudication queue's queries do not grow
with its items. docs/benchmarks.md has their times at 280,000 judgments and a 10,000-item study."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.base.models import Annotation, StudyItem
from annotation.kinds.critical_failures import adjudication
from annotation.kinds.critical_failures.calibration import calibrated as calibration
from annotation.kinds.critical_failures.calibration.cache import calibrated_board
from annotation.kinds.critical_failures.gold_events import gold_decide
from tests.annotation.calibration_world import small_world
from tests.annotation.test_adjudication import labelled
from tests.factories import make_judge, make_judgment

pytestmark = pytest.mark.django_db
PAGE = "/leaderboard/calibrated/"


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Count the calls of module.name (still calling it)."""
    calls: list[int] = []
    real: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


def _estimates(judge_ids: list[str] | None = None) -> dict[str, float | None]:
    return {line.generator_id: line.overall.estimate for line in calibrated_board(judge_ids).lines}


def _fresh() -> dict[str, float | None]:
    return {line.generator_id: line.overall.estimate for line in calibration.calibrated_lines()}


def test_the_calibrated_board_is_computed_once_per_version(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = small_world()
    cache.clear()
    computed = counting(monkeypatch, calibration, "generator_samples")
    judge = world["judge"].judge_id  # type: ignore[attr-defined]
    assert admin_client.get(PAGE).status_code == 200
    assert admin_client.get(PAGE).status_code == 200
    generator = world["frame_a"][0].generator.generator_id  # type: ignore[index]
    assert admin_client.get(f"{PAGE}{generator}/", {"judge": judge}).status_code == 200
    assert len(computed) == 1  # the page twice and a generator's topics: one computation
    assert _estimates() == _fresh()

    # Each write the figures read computes them again, and the cached figures equal a fresh computation.
    frame_a = world["frame_a"]
    item = StudyItem.objects.get(study=world["study_a"], generation=frame_a[0])  # type: ignore[index]
    before = _estimates()
    gold_decide(item=item, verdict={"has_failure": True, "failures": []}, reason="checked")
    after_gold = _estimates()
    assert after_gold != before and after_gold == _fresh()
    flipped = Annotation.objects.filter(item__study=world["study_a"]).order_by("pk").first()
    assert flipped is not None
    Annotation.objects.filter(pk=flipped.pk).update(has_failure=not flipped.has_failure)  # as the admin may
    assert _estimates() == _fresh()
    other = make_judge(model="later-judge")
    make_judgment(judge=other, generation=frame_a[1])  # type: ignore[index]
    assert other.judge_id in {line.judge_id for line in calibrated_board(None).lines}
    assert len(computed) >= 4


def test_the_queue_fits_dawid_skene_once_per_version_of_the_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    study, items = labelled({0: [True, True, False], 1: [True, False, False], 2: [False, False, False]})
    adjudication._FITS.clear()
    adjudication._SUBJECTS.clear()
    fits = counting(monkeypatch, adjudication, "dawid_skene")
    client = Client()
    client.force_login(study.created_by or _staff())
    queue_url = reverse("annotation:adjudication_queue", args=[study.slug])
    assert client.get(queue_url).status_code == 200
    assert client.get(reverse("annotation:adjudicate", args=[study.slug, items[0].pk])).status_code == 200
    url = reverse("annotation:adjudicate", args=[study.slug, items[0].pk])
    response = client.post(url, {"has_failure": "no", "reason": "read it twice"})
    assert response.status_code == 302  # and on to the next open item
    assert client.get(queue_url).status_code == 200
    assert len(fits) == 1  # a gold decision changes no label: the fit is not redone
    estimate = adjudication.review_queue(study, "all").entries[0].dawid_skene
    assert estimate is not None

    # A label changed in place (the admin) is a new version: fitted again, with the new votes.
    changed = Annotation.objects.filter(item=items[1], has_failure=False).order_by("pk").first()
    assert changed is not None
    Annotation.objects.filter(pk=changed.pk).update(has_failure=True)
    entries = {e.item.pk: e for e in adjudication.review_queue(study, "all").entries}
    assert len(fits) == 2
    ds = entries[items[1].pk].dawid_skene
    assert ds is not None and dict(ds.votes) == {"failure": 2, "no failure": 1}


def _staff() -> Any:
    from tests.factories import make_user

    return make_user(is_staff=True)


def _queue_queries(n_items: int) -> int:
    answers = {i: [True, False, i % 2 == 0] for i in range(n_items)}
    study, items = labelled(answers)
    judge = make_judge(model=f"judge-{n_items}")
    for item in items:
        make_judgment(generation=item.generation, judge=judge)
    client = Client()
    client.force_login(_staff())
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("annotation:adjudication_queue", args=[study.slug]), {"show": "all"})
    assert response.status_code == 200
    assert response.content.decode().count('class="btn btn-small"') == n_items
    return len(queries)


def test_the_queue_reads_a_fixed_number_of_queries_whatever_its_size() -> None:
    assert _queue_queries(3) == _queue_queries(8)


def test_the_study_page_shows_its_items_a_page_at_a_time(admin_client: Client) -> None:
    from annotation.flow.views.studies import ITEMS_PER_PAGE
    from tests.annotation.conftest import make_study

    study = make_study(n_items=ITEMS_PER_PAGE + 3)
    url = reverse("annotation:study_detail", args=[study.slug])
    first = admin_client.get(url).content.decode()
    assert f"Items 1\u2013{ITEMS_PER_PAGE} of {ITEMS_PER_PAGE + 3}" in first
    assert first.count("Do oil pulling, variant") == ITEMS_PER_PAGE
    last = admin_client.get(url, {"page": "2"}).content.decode()
    assert f"Items {ITEMS_PER_PAGE + 1}\u2013{ITEMS_PER_PAGE + 3} of {ITEMS_PER_PAGE + 3}" in last
    assert last.count("Do oil pulling, variant") == 3
    assert admin_client.get(url, {"page": "x"}).status_code == 200  # a page that is not one: the first


def test_the_report_cards_bias_is_cached_until_a_label_or_gold_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from annotation.kinds.critical_failures import report_card

    world = small_world()
    cache.clear()
    computed = counting(monkeypatch, report_card, "calibration_bias")
    judge = world["judge"]
    first = report_card.report_card(judge).bias  # type: ignore[arg-type]
    assert report_card.report_card(judge).bias == first  # type: ignore[arg-type]
    assert len(computed) == 1
    item = StudyItem.objects.get(study=world["study_a"], generation=world["frame_a"][1])  # type: ignore[index]
    gold_decide(item=item, verdict={"has_failure": True, "failures": []}, reason="checked")
    after = report_card.report_card(judge).bias  # type: ignore[arg-type]
    assert len(computed) == 2 and after != first


def test_the_study_page_shows_its_annotators_a_page_at_a_time(admin_client: Client) -> None:
    from annotation.base.models import Participant
    from annotation.flow.views.studies import ANNOTATORS_PER_PAGE
    from tests.annotation.conftest import make_study

    study = make_study(n_items=1)
    n = ANNOTATORS_PER_PAGE + 2
    Participant.objects.bulk_create(Participant(study=study, prolific_pid=f"pid-{i:04d}") for i in range(n))
    url = reverse("annotation:study_detail", args=[study.slug])
    first = admin_client.get(url).content.decode()
    assert first.count('<td class="id">pid-') == ANNOTATORS_PER_PAGE
    assert f"Annotators 1\u2013{ANNOTATORS_PER_PAGE} of {n}" in first and "pid-0000" in first
    last = admin_client.get(url, {"annotators": "2"}).content.decode()
    assert last.count('<td class="id">pid-') == 2 and f"pid-{n - 1:04d}" in last
