"""Paying bonuses on Prolific so that no participant is ever paid twice, whatever the retries, double clicks
or concurrent requests. Prolific's pay call is not idempotent (each call pays again), so the studio's rows
decide, in this order:

1. A row per (participant, reason) is inserted if missing (ProlificBonus; the pair is unique, so a second
   request inserts nothing): bonuses_create, from the page, before the job that pays them is queued.
2. The rows still NEW are **claimed** in one transaction (SELECT ... FOR UPDATE SKIP LOCKED, then CLAIMED
   with the claimer's key in batch_id): of two claimers at once each row goes to exactly one; the other finds
   none and pays nothing. A claimer run again (a job redelivered after its worker died) takes back the rows
   it had claimed: CLAIMED means no pay call was sent for them.
3. The claimed rows are set up on Prolific as one batch (harmless: set-up pays nothing). Whatever goes wrong
   there (a refusal, an error body, an HTML page or `{}` where a batch was expected, no answer, any
   exception) puts them back to NEW with the error, to be paid by a later run: nothing was sent to pay.
4. The rows are marked PAY_SENT (only if all are still this claimer's), committed, and only then the pay
   call is sent, once (ProlificClient.bonus_pay never retries). It answers: PAID. It does not answer, or
   anything else goes wrong once it may have gone out: UNKNOWN (it may have paid; the row is never sent
   again, the page says to check on Prolific). Prolific refuses it (a 4xx: nothing paid): back to NEW.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.base.models import Participant, Stage, Study
from annotation.prolific.client import PaymentUnknown, ProlificClient, ProlificError
from annotation.prolific.models import BonusState, ProlificBonus


@dataclass(frozen=True)
class BonusRun:
    claimed: int  # rows this call paid (or tried to)
    paid: int
    unknown: int
    refused: int
    error: str = ""


def bonuses_create(*, study: Study, amount: Decimal, reason: str) -> int:
    """A NEW bonus of `amount` for every participant who finished the study (stage DONE, not a preview) and
    has none of `reason` yet; how many were added."""
    participants = Participant.objects.counted().filter(study=study, stage=Stage.DONE)
    before = ProlificBonus.objects.filter(study=study, reason=reason).count()
    ProlificBonus.objects.bulk_create(
        [ProlificBonus(study=study, participant=p, reason=reason, amount=amount) for p in participants],
        ignore_conflicts=True,
    )
    return ProlificBonus.objects.filter(study=study, reason=reason).count() - before


def bonuses_for_finished(*, study: Study, amount: Decimal, reason: str, client: ProlificClient) -> BonusRun:
    """`amount` to every participant who finished the study, once per reason."""
    bonuses_create(study=study, amount=amount, reason=reason)
    return bonuses_pay(study=study, reason=reason, client=client)


def bonuses_pay(*, study: Study, reason: str, client: ProlificClient, claim: str = "") -> BonusRun:
    """Claim the study's NEW bonuses of `reason` (and those `claim` claimed before and never sent to pay),
    set them up and pay them once (the module's docstring). `claim`: the claimer's key (a job's, so that the
    job run again takes its rows back); "" for a fresh one."""
    key = f"claim:{claim or uuid.uuid4().hex}"
    claimed = _claim(study, reason, key)
    if not claimed:
        return BonusRun(0, 0, 0, 0)
    pks = [row.pk for row in claimed]
    try:
        batch_id = _set_up(study, client, claimed)
    except Exception as failed:
        _back_to_new(pks, key, failed)
        if not isinstance(failed, ProlificError):
            raise
        return BonusRun(len(pks), 0, 0, len(pks), str(failed))
    sent = ProlificBonus.objects.filter(pk__in=pks, state=BonusState.CLAIMED, batch_id=key)
    if sent.update(state=BonusState.PAY_SENT, batch_id=batch_id) != len(pks):  # pragma: no cover
        raise AssertionError(f"bonuses {pks} were taken from claim {key}: nothing paid")
    return _pay(client, batch_id, pks)


def _set_up(study: Study, client: ProlificClient, claimed: list[ProlificBonus]) -> str:
    amounts = {row.participant.prolific_pid: f"{row.amount:.2f}" for row in claimed}
    return str(client.bonus_setup(study.prolific_study_id, amounts)["id"])


def _back_to_new(pks: list[int], key: str, failed: Exception) -> None:
    """The claimed rows back to NEW (nothing was sent to pay), with what went wrong."""
    error = str(failed) if isinstance(failed, ProlificError) else f"{type(failed).__name__}: {failed}"
    ProlificBonus.objects.filter(pk__in=pks, state=BonusState.CLAIMED, batch_id=key).update(
        state=BonusState.NEW, batch_id="", error=error
    )


def _claim(study: Study, reason: str, key: str) -> list[ProlificBonus]:
    with transaction.atomic():
        mine = Q(state=BonusState.NEW) | Q(state=BonusState.CLAIMED, batch_id=key)
        rows = list(
            ProlificBonus.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("participant")
            .filter(mine, study=study, reason=reason)
        )
        ProlificBonus.objects.filter(pk__in=[row.pk for row in rows]).update(
            state=BonusState.CLAIMED, batch_id=key, error=""
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
    except BaseException as broken:  # the pay may have gone out: never sent again
        rows.update(state=BonusState.UNKNOWN, error=f"{type(broken).__name__}: {broken}")
        raise
    rows.update(state=BonusState.PAID, paid_at=timezone.now())
    return BonusRun(len(pks), len(pks), 0, 0)
