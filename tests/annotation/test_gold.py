"""Adjudicated gold as events: the gold set rebuilt at three past times, a decision undone by a new event,
a reason required."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from annotation.kinds.critical_failures.gold_events import gold_as_of, gold_decide, gold_revert
from annotation.kinds.critical_failures.models import GoldEvent
from tests.annotation.conftest import make_study
from tests.factories import make_user


def _tick() -> object:
    time.sleep(0.01)
    moment = timezone.now()
    time.sleep(0.01)
    return moment


@pytest.mark.django_db
def test_the_gold_set_is_rebuilt_at_any_past_time_from_the_events() -> None:
    study = make_study(n_items=3, k=1)
    a, b, c = study.items.order_by("position")
    reviewer = make_user(is_staff=True)
    before_any = _tick()
    gold_decide(item=a, verdict={"has_failure": True}, reason="Step 3 skips the rinse.", user=reviewer)
    gold_decide(item=b, verdict={"has_failure": False}, reason="Both labels missed nothing.", user=reviewer)
    first = _tick()
    changed = gold_decide(
        item=a, verdict={"has_failure": False}, reason="The rinse is step 4.", user=reviewer
    )
    gold_decide(item=c, verdict={"has_failure": True}, reason="Unsafe heat.", user=reviewer)
    second = _tick()
    gold_decide(item=b, verdict=None, reason="Not decidable from the reference.", user=reviewer)
    gold_revert(event=changed, reason="The first reading was right after all.", user=reviewer)
    third = _tick()

    assert gold_as_of(study, before_any) == {}
    assert gold_as_of(study, first) == {a.pk: {"has_failure": True}, b.pk: {"has_failure": False}}
    assert gold_as_of(study, second) == {
        a.pk: {"has_failure": False},
        b.pk: {"has_failure": False},
        c.pk: {"has_failure": True},
    }
    assert gold_as_of(study, third) == {a.pk: {"has_failure": True}, c.pk: {"has_failure": True}}
    assert gold_as_of(study) == gold_as_of(study, third)
    assert changed.before == {"has_failure": True} and changed.decided_by == reviewer
    assert GoldEvent.objects.count() == 6  # nothing updated or deleted


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("reason", "message"), [("", "needs a reason"), ("   ", "needs a reason"), ("x" * 5_001, "at most 5,000")]
)
def test_a_decision_needs_a_reason(reason: str, message: str) -> None:
    item = make_study(n_items=1, k=1).items.get()
    with pytest.raises(ValueError, match=f"reason: .*{message}"):
        gold_decide(item=item, verdict={"has_failure": True}, reason=reason)
    assert not GoldEvent.objects.exists()
