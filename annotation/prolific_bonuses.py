"""Paying bonuses on Prolific so that no participant is ever paid twice, whatever the retries, double clicks
or concurrent requests. Prolific's pay call is not idempotent (each call pays again), so the studio's rows
decide, in this order:

1. A row per (participant, reason) is inserted if missing (ProlificBonus; the pair is unique, so a second
   request inserts nothing).
2. The rows still NEW are **claimed** in one transaction (SELECT ... FOR UPDATE SKIP LOCKED, then CLAIMED):
   of two requests at once each row goes to exactly one; the other finds none and pays nothing.
3. The claimed rows are set up on Prolific as one batch (harmless: set-up pays nothing); on a refusal they go
   back to NEW with the error, to be paid by a later request.
4. The rows are marked PAY_SENT, committed, and only then the pay call is sent, once (ProlificClient.bonus_pay
   never retries). It answers: PAID. It does not answer: UNKNOWN (it may have paid; the row is never sent
   again, the page says to check on Prolific). Prolific refuses it (a 4xx: nothing paid): back to NEW.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from .models import BonusState, Participant, ProlificBonus, Stage, Study
from .prolific_api import PaymentUnknown, ProlificClient, ProlificError


@dataclass(frozen=True)
class BonusRun:
    claimed: int  # rows this call paid (or tried to)
    paid: int
    unknown: int
    refused: int
    error: str = ""


def bonuses_for_finished(*, study: Study, amount: Decimal, reason: str, client: ProlificClient) -> BonusRun:
    """`amount` to every participant who finished the study (stage DONE, not a preview), once per reason."""
    participants = Participant.objects.counted().filter(study=study, stage=Stage.DONE)
    ProlificBonus.objects.bulk_create(
        [ProlificBonus(study=study, participant=p, reason=reason, amount=amount) for p in participants],
        ignore_conflicts=True,
    )
    return bonuses_pay(study=study, reason=reason, client=client)


def bonuses_pay(*, study: Study, reason: str, client: ProlificClient) -> BonusRun:
    """Claim the study's NEW bonuses of `reason`, set them up and pay them once (the module's docstring)."""
    claimed = _claim(study, reason)
    if not claimed:
        return BonusRun(0, 0, 0, 0)
    amounts = {row.participant.prolific_pid: f"{row.amount:.2f}" for row in claimed}
    pks = [row.pk for row in claimed]
    try:
        batch = client.bonus_setup(study.prolific_study_id, amounts)
    except ProlificError as refused:
        ProlificBonus.objects.filter(pk__in=pks).update(state=BonusState.NEW, error=str(refused))
        return BonusRun(len(pks), 0, 0, len(pks), str(refused))
    ProlificBonus.objects.filter(pk__in=pks).update(state=BonusState.PAY_SENT, batch_id=str(batch["id"]))
    return _pay(client, str(batch["id"]), pks)


def _claim(study: Study, reason: str) -> list[ProlificBonus]:
    with transaction.atomic():
        rows = list(
            ProlificBonus.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("participant")
            .filter(study=study, reason=reason, state=BonusState.NEW)
        )
        ProlificBonus.objects.filter(pk__in=[row.pk for row in rows]).update(
            state=BonusState.CLAIMED, error=""
        )
    return rows


def _pay(client: ProlificClient, batch_id: str, pks: list[int]) -> BonusRun:
    rows = ProlificBonus.objects.filter(pk__in=pks)
    try:
        client.bonus_pay(batch_id)
    except PaymentUnknown as unknown:
        rows.update(state=BonusState.UNKNOWN, error=str(unknown))
        return BonusRun(len(pks), 0, len(pks), 0, str(unknown))
    except ProlificError as refused:
        rows.update(state=BonusState.NEW, batch_id="", error=str(refused))
        return BonusRun(len(pks), 0, 0, len(pks), str(refused))
    rows.update(state=BonusState.PAID, paid_at=timezone.now())
    return BonusRun(len(pks), len(pks), 0, 0)
