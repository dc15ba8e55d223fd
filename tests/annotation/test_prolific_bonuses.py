"""Bonuses through Prolific are paid once per participant and reason: 100 concurrent requests (each running
the job it queues, as a worker would) pay each participant exactly once; a pay call that goes unanswered is
never sent again; a refused or garbled set-up puts the rows back to pay, and a later request pays them."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection

from annotation.base.models import Study
from annotation.flow import services
from annotation.prolific.bonuses import bonuses_for_finished, bonuses_pay
from annotation.prolific.client import ProlificClient
from annotation.prolific.models import BonusState, ProlificBonus
from h2e_site.celery import app
from tests.annotation.conftest import annotate_all, make_study, no_failure, qualified, run_prolific_jobs
from tests.factories import logged_in, make_prolific_staff, make_user
from tests.prolific_server import HTML_PAGE, FakeProlific, Trouble

TOKEN = "bonus-token"
DRAFT = {
    "name": "n", "description": "d", "external_study_url": "https://x/", "completion_codes": [],
    "total_available_places": 5, "estimated_completion_time": 5, "reward": 100,
}  # fmt: skip


@pytest.fixture
def prolific(settings: Any) -> Iterator[FakeProlific]:
    with FakeProlific(token=TOKEN) as server:
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = server.base_url, TOKEN
        yield server


def _finished_study(prolific: FakeProlific, n: int = 5) -> tuple[Study, list[str]]:
    """A study on the fake Prolific whose n participants finished through the annotator flow."""
    study = make_study(n_items=1, k=n)
    study.prolific_study_id = ProlificClient(sleep=lambda s: None).study_create(DRAFT)["id"]
    study.save(update_fields=["prolific_study_id"])
    pids = []
    for i in range(n):
        participant = qualified(study, i)
        annotate_all(participant, lambda assignment: no_failure())
        services.participant_finish(participant=participant)
        prolific.submit(study.prolific_study_id, participant_id=participant.prolific_pid)
        pids.append(participant.prolific_pid)
    return study, pids


@pytest.mark.django_db(transaction=True)
def test_a_hundred_concurrent_requests_pay_each_participant_exactly_once(prolific: FakeProlific) -> None:
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True  # the worker is this process: each request runs the job it queues
    try:
        _pay_from_a_hundred_requests_at_once(prolific)
    finally:
        app.conf.task_always_eager = eager


def _pay_from_a_hundred_requests_at_once(prolific: FakeProlific) -> None:
    study, pids = _finished_study(prolific)
    staff = make_prolific_staff()
    url = f"/studies/{study.slug}/prolific/bonuses/"

    def request(_: int) -> int:
        try:
            return logged_in(staff).post(url, {"amount": "0.75", "reason": "accuracy"}).status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=16) as pool:
        statuses = list(pool.map(request, range(100)))
    assert statuses == [302] * 100
    assert prolific.paid == dict.fromkeys(pids, 1)  # each participant paid once
    assert all(prolific.state.paid_amounts[pid] == 75 for pid in pids)
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {BonusState.PAID}
    assert ProlificBonus.objects.count() == len(pids)


@pytest.mark.django_db
def test_an_unanswered_pay_is_never_sent_again(prolific: FakeProlific) -> None:
    study, _ = _finished_study(prolific, n=2)
    client = ProlificClient(sleep=lambda s: None)
    prolific.script(Trouble(500, path="/pay/"))  # the set-up answers, the pay call fails
    first = bonuses_for_finished(study=study, amount=Decimal("1.00"), reason="r", client=client)
    assert (first.paid, first.unknown) == (0, 2) and "500" in first.error
    again = bonuses_for_finished(study=study, amount=Decimal("1.00"), reason="r", client=client)
    assert again.claimed == 0  # never sent again
    assert len([r for r in prolific.requests if r.path.endswith("/pay/")]) == 1
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {BonusState.UNKNOWN}


@pytest.mark.django_db
def test_a_refused_set_up_is_paid_by_a_later_request(prolific: FakeProlific) -> None:
    study, pids = _finished_study(prolific, n=2)
    client = ProlificClient(sleep=lambda s: None)
    prolific.script(Trouble(400))
    refused = bonuses_for_finished(study=study, amount=Decimal("0.50"), reason="r", client=client)
    assert refused.refused == 2 and not prolific.paid
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {BonusState.NEW}
    paid = bonuses_for_finished(study=study, amount=Decimal("0.50"), reason="r", client=client)
    assert paid.paid == 2 and prolific.paid == dict.fromkeys(pids, 1)


@pytest.mark.django_db
def test_the_form_names_a_bad_amount_and_the_page_needs_staff(prolific: FakeProlific, client: Any) -> None:
    study = make_study(n_items=1, k=1)
    staff = logged_in(make_prolific_staff())
    url = f"/studies/{study.slug}/prolific/bonuses/"
    bad = staff.post(url, {"amount": "-1", "reason": "r"})
    assert bad.status_code == 400 and b"amount" in bad.content
    no_study = staff.post(url, {"amount": "1.00", "reason": "r"})
    assert no_study.status_code == 400 and b"prolific_study_id" in no_study.content
    assert logged_in(make_user()).post(url, {"amount": "1.00", "reason": "r"}).status_code in (302, 403)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "answer",
    [
        Trouble(400, body={"error": "Bad bonus"}, path="/bonus-payments/"),  # "error" a string
        Trouble(200, raw=HTML_PAGE, content_type="text/html", path="/bonus-payments/"),
        Trouble(201, body={}, path="/bonus-payments/"),
        Trouble(201, body=[{"id": "x"}], path="/bonus-payments/"),
    ],
    ids=["string-error", "html", "empty-object", "list"],
)
def test_a_garbled_set_up_puts_the_rows_back_and_the_next_try_pays(
    prolific: FakeProlific, answer: Trouble
) -> None:
    """#31 item 15: the set-up answered a string error, HTML, {} or a list: nothing was sent to pay, so the
    rows go back to NEW (not stuck CLAIMED), the job says what Prolific answered, and the next try pays."""
    study, pids = _finished_study(prolific, n=2)
    staff = logged_in(make_prolific_staff())
    url = f"/studies/{study.slug}/prolific/bonuses/"
    prolific.script(answer)
    assert staff.post(url, {"amount": "0.50", "reason": "r"}).status_code == 302
    (failed,) = run_prolific_jobs()
    assert failed.status == "failed" and "/submissions/bonus-payments/" in failed.error
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {BonusState.NEW}
    assert not prolific.paid and not [r for r in prolific.requests if r.path.endswith("/pay/")]
    page = staff.get(f"/studies/{study.slug}/")
    assert page.status_code == 200 and f"#{failed.pk}".encode() in page.content
    staff.post(url, {"amount": "0.50", "reason": "r"})
    (paid,) = run_prolific_jobs()
    assert paid.status == "succeeded" and prolific.paid == dict.fromkeys(pids, 1)


@pytest.mark.django_db
def test_a_job_run_again_takes_back_the_rows_it_claimed_and_never_sent(prolific: FakeProlific) -> None:
    """A worker that died between the claim and the pay call left its rows CLAIMED under its key: the same
    job run again pays them; another claimer never takes them."""
    study, pids = _finished_study(prolific, n=2)
    client = ProlificClient(sleep=lambda s: None)
    bonuses_for_finished(study=study, amount=Decimal("0.30"), reason="r", client=client)  # paid once
    ProlificBonus.objects.update(state=BonusState.CLAIMED, batch_id="claim:job-7", reason="s")
    assert bonuses_pay(study=study, reason="s", client=client, claim="job-8").claimed == 0
    again = bonuses_pay(study=study, reason="s", client=client, claim="job-7")
    assert again.paid == 2 and prolific.paid == dict.fromkeys(pids, 2)  # "r" once, then "s" once
