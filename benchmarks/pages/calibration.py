"""The calibration pages benchmarks/researcher_pages.py times: the calibrated leaderboard, the calibration
study's adjudication queue and decisions, its study page and its rounds (in the request and by a job)."""

from __future__ import annotations

import time
from typing import Any

from benchmarks.pages.timing import SETTINGS, Timing, timed

CALIBRATED = "calibrated leaderboard (default judge)"
CALIBRATED_ALL = "calibrated leaderboard (all judges)"
CALIBRATED_GENERATOR = "calibrated leaderboard: one generator's topics"
CALIBRATION_QUEUE = "adjudication queue of the calibration study (open, first page)"
CALIBRATION_ITEM = "adjudication: an item's page (calibration study)"
CALIBRATION_DECIDE = "adjudication: a gold decision (POST, then the next open item found)"
CALIBRATION_STUDY = "calibration study page (items, rounds, the round form)"
ROUND_SMALL = "calibration round drawn in the request (7,000-example frame)"
ROUND_LARGE = "calibration round over the 140,000-example frame (POST)"
CALIBRATION_RUNS = 5  # the pages that compute afresh or write: fewer timed requests


def _calibration_shape() -> str:
    from annotation.base.models import Annotation, Study
    from annotation.kinds.critical_failures.models import CalibrationDraw
    from benchmarks.calibration_data import CALIBRATION_SLUG

    study = Study.objects.get(slug=CALIBRATION_SLUG)
    frame = CalibrationDraw.objects.filter(round__study=study, round__number=1).count()
    labels = Annotation.objects.filter(study=study).count()
    return f"{study.items.count():,} items, {labels:,} labels, frame {frame:,}"


def calibrated_pages(client: Any) -> list[Timing]:
    """The calibrated leaderboard over the calibration study (every generator x judge), its API, one
    generator's topics; cached figures and computed afresh."""
    from django.urls import reverse

    from judging.models import Generator, Judge

    url = reverse("calibrated:leaderboard")
    judge = Judge.objects.order_by("judge_id").first()
    generator = Generator.objects.order_by("generator_id").first()
    assert judge is not None and generator is not None
    one = reverse("calibrated:generator", args=[generator.generator_id])
    shape = _calibration_shape()
    timings = [
        timed(client, CALIBRATED, url),
        timed(client, CALIBRATED_ALL, url, {"judge": "all"}),
        timed(client, "calibrated leaderboard, computed afresh (cache cleared)", url, {"judge": "all"},
              runs=CALIBRATION_RUNS, cold=True),
        timed(client, "API /api/leaderboard/calibrated/", reverse("api:calibrated-leaderboard")),
        timed(client, CALIBRATED_GENERATOR, one, {"judge": judge.judge_id}),
    ]  # fmt: skip
    return [Timing(t.name, t.url, t.times, t.bytes, note=shape) for t in timings]


def calibration_adjudication_pages(client: Any) -> list[Timing]:
    """The calibration study's adjudication queue (10,000 items, Dawid-Skene on every label), an item's
    page, and gold decisions (each POST decides another open item; removed afterwards)."""
    from django.urls import reverse

    from annotation.base.models import Study
    from annotation.kinds.critical_failures.adjudication import review_queue
    from annotation.kinds.critical_failures.models import GoldEvent
    from benchmarks.calibration_data import CALIBRATION_SLUG

    study = Study.objects.get(slug=CALIBRATION_SLUG)
    queue = review_queue(study, "open")
    shape = f"{_calibration_shape()}; {queue.n_open:,} open, {queue.n_decided:,} decided"
    queue_url = reverse("annotation:adjudication_queue", args=[study.slug])
    timings = [
        timed(client, CALIBRATION_QUEUE, queue_url),
        timed(client, "adjudication queue of the calibration study (all, page 20)", queue_url,
              {"show": "all", "page": "20"}),
        timed(client, "adjudication queue, computed afresh (cache cleared)", queue_url,
              runs=CALIBRATION_RUNS, cold=True),
    ]  # fmt: skip
    items = [entry.item for entry in queue.entries[: SETTINGS.warmup + CALIBRATION_RUNS + 1]]
    if items:
        url = reverse("annotation:adjudicate", args=[study.slug, items[0].pk])
        timings.append(timed(client, CALIBRATION_ITEM, url))
        started = GoldEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        try:
            timings.append(_decisions(client, study.slug, items))
        finally:
            GoldEvent.objects.filter(pk__gt=started, reason=BENCH_REASON).delete()
    return [Timing(t.name, t.url, t.times, t.bytes, note=shape) for t in timings]


BENCH_REASON = "benchmark decision (removed after the run)"


def _decisions(client: Any, slug: str, items: list[Any]) -> Timing:
    from django.urls import reverse

    times = []
    response = None
    for n, item in enumerate(items):
        url = reverse("annotation:adjudicate", args=[slug, item.pk])
        start = time.perf_counter()
        response = client.post(url, {"has_failure": "no", "reason": BENCH_REASON})
        if n >= min(SETTINGS.warmup, len(items) - 1):
            times.append(time.perf_counter() - start)
        assert response.status_code == 302, (url, response.status_code, response.content[:500])
    assert response is not None
    return Timing(CALIBRATION_DECIDE, reverse("annotation:adjudicate", args=[slug, items[0].pk]), times,
                  len(response.content))  # fmt: skip


def calibration_round_pages(client: Any) -> list[Timing]:
    """The calibration study's page, a round drawn in the request over a one-generator frame, and a round
    over the 140,000-example frame (a job above the threshold: the POST that starts it, then the job run in
    this process, timed as its own line). Every round drawn here is removed afterwards."""
    from django.urls import reverse

    from annotation.base.models import Study
    from annotation.kinds.critical_failures.models import CalibrationRound
    from benchmarks.calibration_data import CALIBRATION_SLUG, SMALL_SLUG

    study = Study.objects.get(slug=CALIBRATION_SLUG)
    small = Study.objects.get(slug=SMALL_SLUG)
    timings = [timed(client, CALIBRATION_STUDY, reverse("annotation:study_detail", args=[study.slug]),
                     runs=CALIBRATION_RUNS)]  # fmt: skip
    rounds = set(CalibrationRound.objects.values_list("pk", flat=True))
    items = {
        s.pk: s.items.order_by("-position").values_list("position", flat=True).first() for s in (study, small)
    }
    try:
        timings.append(_round_posts(client, small, ROUND_SMALL, runs=CALIBRATION_RUNS))
        timings += _round_posts_large(client, study)
    finally:
        CalibrationRound.objects.exclude(pk__in=rounds).delete()
        for s in (study, small):
            s.items.filter(position__gt=items[s.pk] or 0).delete()
    return timings


def _round_posts(client: Any, study: Any, name: str, *, runs: int) -> Timing:
    from django.urls import reverse

    from annotation.kinds.critical_failures.models import CalibrationDraw

    url = reverse("annotation:study_calibration_round", args=[study.slug])
    times = []
    response = None
    for n in range(runs):
        start = time.perf_counter()
        response = client.post(url, {"size": "10", "design": "uniform", "seed": str(n)})
        times.append(time.perf_counter() - start)
        assert response.status_code == 302, (url, response.status_code, response.content[:500])
    assert response is not None
    frame = CalibrationDraw.objects.filter(round__study=study, round__number=1).count()
    return Timing(name, url, times, len(response.content), note=f"frame {frame:,}")


def _round_posts_large(client: Any, study: Any) -> list[Timing]:
    """POSTs of rounds over the large frame; where they start jobs, the jobs run here (timed)."""
    from annotation.kinds.critical_failures.calibration import sample as calibration_sample
    from h2e_site.jobs.models import Job

    before = Job.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    threshold = getattr(calibration_sample, "ROUND_JOB_FRAME", None)
    if threshold is not None:  # a tiny run (the smoke test) takes the job's path too
        calibration_sample.ROUND_JOB_FRAME = min(threshold, calibration_sample.study_frame_size(study) - 1)
    try:
        post = _round_posts(client, study, ROUND_LARGE, runs=2)
    finally:
        if threshold is not None:
            calibration_sample.ROUND_JOB_FRAME = threshold
    jobs = list(Job.objects.filter(pk__gt=before, kind="calibration_round").order_by("pk"))
    if not jobs:
        return [post]
    from annotation.kinds.critical_failures.calibration.jobs import calibration_round_job_run

    times = []
    for job in jobs:
        start = time.perf_counter()
        done = calibration_round_job_run(job_id=job.pk)
        times.append(time.perf_counter() - start)
        assert done is not None and done.status == "succeeded", (done and done.status, done and done.error)
    job_line = Timing("calibration round job over the 140,000-example frame (the job's run, not a page)",
                      "", times, 0, note=post.note)  # fmt: skip
    return [post, job_line]
