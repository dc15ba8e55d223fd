"""A calibration study at scale for the researcher-pages benchmark (issue #31 item 22), in a filled database
(benchmarks/researcher_pages.py builds the judgments):

- `bench-calibration`: a critical-failures study whose calibration sample's frame is every generation with
  L2 steps (20 generators x 7,000 = 140,000 in the full benchmark), round 1 a uniform draw of n_items
  (10,000) drawn with the app's own draw (annotation/kinds/critical_failures/calibration/sample.py: one
  CalibrationDraw per frame
  generation, an item per generation drawn), k = 3 annotations an item by participants who label 50 items
  each (an item's "truth" is the first judge's verdict, flipped for 20 % of the items; an annotator gives the
  truth 85 % of the time, one in ten annotators a coin flip), ~40 % of the "failure" verdicts with one
  listed failure, 5 % of the items still collecting (k - 1 annotations), and gold on n_gold disagreed items.
- `bench-calibration-small`: the same over one generator's generations (7,000), no labels: the frame a
  round is drawn over inside the request.

Rows are written with bulk inserts (batches of BATCH); the whole study takes ~1 min at full size.
"""

from __future__ import annotations

import random
from typing import Any

BATCH = 5000
CALIBRATION_SLUG = "bench-calibration"
SMALL_SLUG = "bench-calibration-small"
WORDS = "step bolt tighten water pan heat oven minutes cut board remove wait check mix".split()  # noqa: SIM905


def add_calibration_study(
    *, n_items: int = 10_000, k: int = 3, per_participant: int = 50, n_gold: int = 200, seed: int = 11
) -> dict[str, Any]:
    """Both studies (module docstring); returns their shape and the seconds round 1 took."""
    import time

    from annotation.base.models import Study
    from annotation.base.registry import StudyKind
    from annotation.base.types import Selection
    from annotation.kinds.critical_failures.calibration.sample import draw_round, frame_of
    from annotation.kinds.critical_failures.models import CalibrationDesign
    from judging.models import Generator

    selection = Selection(sample_size=n_items, seed=seed, calibration_design=CalibrationDesign.UNIFORM)
    frame = frame_of(selection)
    study = Study.objects.create(
        slug=CALIBRATION_SLUG, title="Bench calibration study", kind=StudyKind.CRITICAL_FAILURES,
        selection=selection.as_json(), annotators_per_item=k, completion_code="C", screenout_code="S",
    )  # fmt: skip
    start = time.perf_counter()
    draw_round(study, CalibrationDesign.UNIFORM, min(n_items, len(frame)), [], seed, frame=frame)
    round_seconds = time.perf_counter() - start
    _annotate(study, k=k, per_participant=per_participant, rng=random.Random(seed))
    _gold(study, n_gold=n_gold, rng=random.Random(seed + 1))
    first = Generator.objects.order_by("pk").first()
    assert first is not None
    small = Selection(sample_size=10, seed=seed, calibration_design=CalibrationDesign.UNIFORM,
                      generator_ids=[first.pk])  # fmt: skip
    small_study = Study.objects.create(
        slug=SMALL_SLUG, title="Bench calibration study (one generator)", kind=StudyKind.CRITICAL_FAILURES,
        selection=small.as_json(), annotators_per_item=k, completion_code="C", screenout_code="S",
    )  # fmt: skip
    small_frame = frame_of(small)
    draw_round(small_study, CalibrationDesign.UNIFORM, 10, [], seed, frame=small_frame)
    return {
        "frame": len(frame),
        "items": study.items.count(),
        "annotations": study.annotations.count(),
        "small_frame": len(small_frame),
        "round_1_seconds": round(round_seconds, 2),
    }


def _annotate(study: Any, *, k: int, per_participant: int, rng: random.Random) -> None:
    from django.utils import timezone

    from annotation.base.models import AnnotatedFailure, Annotation, Assignment, Participant, StudyItem
    from judging.models import Judgment

    items = list(study.items.order_by("position").values_list("pk", "generation_id"))
    first_judge = (
        Judgment.objects.filter(generation_id__in=[g for _, g in items]).order_by("judge_id").first()
    )
    says = dict(
        Judgment.objects.filter(judge_id=first_judge.judge_id if first_judge else None)
        .filter(generation_id__in=[g for _, g in items])
        .values_list("generation_id", "has_failure")
    )
    n_participants = max(k, len(items) * k // per_participant)
    participants = Participant.objects.bulk_create(
        Participant(study=study, prolific_pid=f"cal-{i:05d}", stage="done", items_completed=per_participant)
        for i in range(n_participants)
    )
    careless = {p.pk for p in participants if rng.random() < 0.1}
    now = timezone.now()
    pending = {pk for pk, _ in items if rng.random() < 0.05}
    rows: list[tuple[int, int, int, bool]] = []  # item, generation, participant, has_failure
    for n, (item, generation) in enumerate(items):
        truth = bool(says.get(generation, False)) != (rng.random() < 0.2)
        for a in range(k - 1 if item in pending else k):
            participant = participants[(n * k + a) % n_participants].pk
            right = rng.random() < (0.5 if participant in careless else 0.85)
            rows.append((item, generation, participant, truth if right else not truth))
    for start in range(0, len(rows), BATCH):
        chunk = rows[start : start + BATCH]
        assignments = Assignment.objects.bulk_create(
            Assignment(study=study, participant_id=p, item_id=i, status="submitted", issued_at=now,
                       lease_expires_at=now, n_reading_steps=8, n_revealed=8)
            for i, _, p, _ in chunk
        )  # fmt: skip
        annotations = Annotation.objects.bulk_create(
            Annotation(assignment=assignment, study=study, item_id=i, participant_id=p, has_failure=f,
                       n_failures=int(f), issued_at=now, goal_acknowledged_at=now, submitted_at=now,
                       elapsed_seconds=90.0)
            for assignment, (i, _, p, f) in zip(assignments, chunk, strict=True)
        )  # fmt: skip
        AnnotatedFailure.objects.bulk_create(
            AnnotatedFailure(annotation=annotation, order=0, description=" ".join(rng.choices(WORDS, k=20)),
                             l1_steps=[rng.randint(1, 8)], l2_steps=[rng.randint(1, 8)])
            for annotation in annotations if annotation.has_failure
        )  # fmt: skip
    StudyItem.objects.filter(study=study).update(assigned_count=k, completed_count=k)
    StudyItem.objects.filter(pk__in=pending).update(assigned_count=k - 1, completed_count=k - 1)


def _gold(study: Any, *, n_gold: int, rng: random.Random) -> None:
    """Gold on n_gold items whose annotators disagree (a reason each)."""
    from collections import defaultdict

    from django.utils import timezone

    from annotation.base.models import Annotation
    from annotation.kinds.critical_failures.models import GoldEvent

    verdicts: dict[int, set[bool]] = defaultdict(set)
    for item, has_failure in Annotation.objects.filter(study=study).values_list("item_id", "has_failure"):
        verdicts[item].add(bool(has_failure))
    disagreed = sorted(item for item, said in verdicts.items() if len(said) > 1)[:n_gold]
    now = timezone.now()
    events = []
    for item in disagreed:
        failure = rng.random() < 0.5
        failures = [{"description": "The step skips heating the pan.", "l1_steps": [2], "l2_steps": [3]}]
        verdict = {"has_failure": failure, "failures": failures if failure else []}
        events.append(GoldEvent(item_id=item, decided_at=now, verdict=verdict, reason="bench gold"))
    GoldEvent.objects.bulk_create(events)


__all__ = ["CALIBRATION_SLUG", "SMALL_SLUG", "add_calibration_study"]
