"""Adjudicated gold (issue #23), as events: each decision on an item is a GoldEvent (who, when, why, the
verdict, and the gold it replaced). Nothing is updated or deleted, so

- the gold set as of any time is the last event of each item at or before it (`gold_as_of`), an item whose
  last event cleared its gold (verdict None) having none;
- undoing a decision is a new event that restores what it replaced (`gold_revert`), itself undoable;
- two reviewers deciding on one item at once are serialised by a lock on the item, so each event's `before`
  is the gold the reviewer's decision really replaced.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.base.models import Study, StudyItem
from annotation.kinds.critical_failures.models import GoldEvent

MAX_REASON = 5_000


def gold_as_of(study: Study, at: datetime | None = None) -> dict[int, Any]:
    """Item id -> its gold verdict as of `at` (now when None), rebuilt from the events."""
    events = GoldEvent.objects.filter(item__study=study)
    if at is not None:
        events = events.filter(decided_at__lte=at)
    last = events.values("item_id").annotate(last=Max("id")).values_list("last", flat=True)
    rows = GoldEvent.objects.filter(pk__in=list(last)).values_list("item_id", "verdict")
    return {item: verdict for item, verdict in rows if verdict is not None}


def gold_decide(
    *, item: StudyItem, verdict: Any, reason: str, user: User | AnonymousUser | None = None
) -> GoldEvent:
    """Set (verdict None: clear) the item's gold, with a reason; the event recording it."""
    reason = reason.strip()
    if not reason:
        raise ValueError("reason: a gold decision needs a reason")
    if len(reason) > MAX_REASON:
        raise ValueError(f"reason: at most {MAX_REASON:,} characters, got {len(reason):,}")
    with transaction.atomic():
        StudyItem.objects.select_for_update().filter(pk=item.pk).first()  # one decision on an item at a time
        previous = GoldEvent.objects.filter(item=item).order_by("-decided_at", "-id").first()
        return GoldEvent.objects.create(
            item=item,
            decided_by=user if isinstance(user, User) else None,
            decided_at=timezone.now(),
            verdict=verdict,
            before=previous.verdict if previous is not None else None,
            reason=reason,
        )


def gold_revert(*, event: GoldEvent, reason: str, user: User | AnonymousUser | None = None) -> GoldEvent:
    """Undo a decision: the gold it replaced, set again by a new event."""
    return gold_decide(item=event.item, verdict=event.before, reason=reason, user=user)
