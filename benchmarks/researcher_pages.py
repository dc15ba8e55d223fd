"""Researcher pages at scale (issue #5): leaderboard, failure browser, heatmap, rank correlations and the API.

    .venv/bin/python benchmarks/researcher_pages.py [--db h2e_researcher_bench] [--reuse] [--append-doc]

1. drops and re-creates the database, migrates it, and fills it in PostgreSQL itself (INSERT ... SELECT over
   generate_series, random English-like text): 20 generators x 7,000 examples x 2 judges = 280,000 judgments,
   about 515,000 critical failures (0-4 per judgment, ~2 % parse failures), format metrics on every
   generation; plus a human study of 200 items x 3 annotators with their failures (through the ORM).
   --reuse skips this when the database already holds the data.
2. VACUUM ANALYZE (as autovacuum would after a bulk load), then times each page through Django's test Client
   as a staff user, in this process: warm-up requests, then --runs timed ones; median and p95.
   settings.DEBUG is switched off after setup so no SQL is logged during the timings.

Targets: leaderboard page (with its intervals and the paired tests of 20 generators x 2 judges) <= 300 ms; a
judge's report card <= 500 ms (both with the figures cached for the judgments' version, as a researcher
browsing sees them; the same pages computed afresh are timed too, "cache cleared"); the failure browser's
filtered first page <= 200 ms; the agreement page of the 200-item, 3-annotator study judged by 10 judges (8
more judges judge just its generations) <= 300 ms; the same study's adjudication queue (every item shown, with
Dawid-Skene fitted on the study) <= 300 ms, as the agreement page.
Each page is one function taking the Client (see PAGES); add a function there to time another page.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.import_scale import DOC, machine_info  # noqa: E402
from benchmarks.pages.calibration import (  # noqa: E402
    CALIBRATED,
    CALIBRATED_ALL,
    CALIBRATED_GENERATOR,
    CALIBRATION_DECIDE,
    CALIBRATION_ITEM,
    CALIBRATION_QUEUE,
    CALIBRATION_STUDY,
    ROUND_LARGE,
    ROUND_SMALL,
    calibrated_pages,
    calibration_adjudication_pages,
    calibration_round_pages,
)
from benchmarks.pages.timing import SETTINGS, Timing, timed  # noqa: E402
from benchmarks.pages.world import add_human_study, add_study_judges, build_database, psql  # noqa: E402
from benchmarks.results_doc import insert_into_section  # noqa: E402

CALIBRATION_ITEMS = 10_000
ONLY: set[str] = set()  # --only: the page functions timed (all when empty)
SEARCH_COMMON = "failure browser: text search q=step (a common word), counts included"
SEARCH_ABSENT = "failure browser: text search q=temperature (a word no failure has), counts included"

# --- timings ------------------------------------------------------------------------------------------


def leaderboard_page(client: Any) -> list[Timing]:
    from django.urls import reverse

    return [timed(client, "leaderboard page (all judges)", reverse("judging:leaderboard"))]


def failure_browser_page(client: Any) -> list[Timing]:
    from django.urls import reverse

    from judging.models import Generator, Judge

    url = reverse("failures:failure_list")
    judge = Judge.objects.order_by("judge_id").first()
    generator = Generator.objects.order_by("-generator_id").first()
    assert generator is not None
    assert judge is not None
    deep_cursor = _cursor_after_pages(judge.judge_id, pages=int(os.environ.get("BENCH_DEEP_PAGES", "41")))
    filtered = {"topic": "Health", "judge": judge.judge_id}
    cases: list[tuple[str, dict[str, str]]] = [
        ("failure browser: filtered first page (topic + judge)", filtered),
        ("failure browser: first page, no filter", {}),
        ("failure browser: generator filter", {"generator": generator.generator_id}),
        ("failure browser: text search q=tighten", {"q": "tighten"}),
        (SEARCH_COMMON, {"q": "step"}),
        (SEARCH_ABSENT, {"q": "temperature"}),
        ("failure browser: text search + topic + judge", {"q": "tighten bolt", **filtered}),
        ("failure browser: human failures only", {"source": "human"}),
        ("failure browser: page 42 by cursor (topic + judge)", {**filtered, "cursor": deep_cursor}),
    ]
    timings = [timed(client, name, url, params) for name, params in cases]
    fragment = "failure browser: htmx fragment (topic + judge)"
    return [*timings, timed(client, fragment, url, filtered, HTTP_HX_REQUEST="true")]


def _cursor_after_pages(judge_id: str, *, pages: int) -> str:
    """The cursor that opens page pages + 1 of the topic + judge filter (or the last page's, when there are
    fewer: a small database, as in the smoke run; "" when there is one page)."""
    from annotation.failures import reads as failures

    query = failures.FailureQuery(topic="Health", judge=judge_id)
    filters = failures.failure_filters_resolve(query, failures.filter_choices_for(query))
    token: str | None = ""
    cursor = None
    for _ in range(pages):
        following = failures.failure_page(filters=filters, cursor=cursor).next_cursor
        if following is None:
            break
        token, cursor = following, failures.Cursor.decode(following)
    return token or ""


def failure_api(client: Any) -> list[Timing]:
    from django.urls import reverse

    from judging.models import Judge

    judge = Judge.objects.order_by("judge_id").first()
    assert judge is not None
    url = reverse("api:failures")
    return [
        timed(
            client, "API /api/failures/ (topic + judge)", url, {"topic": "Health", "judge": judge.judge_id}
        ),
        timed(client, "API /api/failures/ with counts", url, {"topic": "Health", "counts": "true"}),
    ]


def research_pages(client: Any) -> list[Timing]:
    from django.urls import reverse

    return [
        timed(client, "How2Score by topic (heatmap)", reverse("judging:topic_heatmap")),
        timed(client, "judges' rank correlations page", reverse("judging:rank_correlation")),
        timed(client, "API /api/judges/rank-correlation/", reverse("api:judge-rank-correlation")),
    ]


def agreement_page(client: Any) -> list[Timing]:
    from django.urls import reverse

    from annotation.base.models import Study
    from annotation.kinds.critical_failures.agreement_data import study_agreement

    added = add_study_judges()
    try:
        figures = study_agreement(study=Study.objects.get(slug="bench-study"))
        shape = f"{figures.n_items} items, {figures.n_labels} labels, {len(figures.judges)} judges"
        api = timed(client, "API /api/agreement/", reverse("agreement-api"), {"study": "bench-study"})
        name = "agreement page (200 items x 3 annotators, 10 judges)"
        page = timed(client, name, reverse("agreement:study", args=["bench-study"]))
    finally:
        for judge in added:
            judge.delete()
    return [
        Timing(page.name, page.url, page.times, page.bytes, note=shape),
        Timing(api.name, api.url, api.times, api.bytes, note=shape),
    ]


def paired_pages(client: Any) -> list[Timing]:
    """The leaderboard's paired tests (20 generators x 2 judges: 380 exact McNemar tests, Holm per judge)."""
    from django.urls import reverse

    return [
        timed(client, "API /api/leaderboard/ (with paired tests)", reverse("api:leaderboard")),
        timed(client, "API /api/leaderboard/pairs/", reverse("api:leaderboard-pairs")),
        timed(
            client,
            "leaderboard page, paired tests computed afresh (cache cleared)",
            reverse("judging:leaderboard"),
            runs=5,
            cold=True,
        ),
    ]


REPORT_CARD = "judge report card (140,000 judgments, 1 study)"


def report_card_pages(client: Any) -> list[Timing]:
    """The report card of the first bench judge: 140,000 judgments (the length-bias regression over all of
    them), the other bench judge item by item, and the bench study's 200 items against the humans."""
    from django.urls import reverse

    from judging.models import Judge

    judge = Judge.objects.order_by("judge_id").first()
    assert judge is not None
    url = reverse("judges:report_card", args=[judge.judge_id])
    return [
        timed(client, REPORT_CARD, url),
        timed(client, "API report card", reverse("judge-report-card-api", args=[judge.judge_id])),
        timed(client, "judge report card, computed afresh (cache cleared)", url, runs=5, cold=True),
    ]


ADJUDICATION_QUEUE = "adjudication queue (200 items x 3 annotators, 2 judges, Dawid-Skene)"


def adjudication_pages(client: Any) -> list[Timing]:
    """The bench study's adjudication queue (every item: annotators' and judges' verdicts, gold, Dawid-Skene
    fitted on the study) and the page of the first item in it."""
    from django.urls import reverse

    from annotation.base.models import Study
    from annotation.kinds.critical_failures.adjudication import review_queue

    study = Study.objects.get(slug="bench-study")
    queue = review_queue(study, "all")
    shape = f"{len(queue.entries)} items in the queue"
    timings = [timed(client, ADJUDICATION_QUEUE, reverse("annotation:adjudication_queue", args=[study.slug]),
                     {"show": "all"})]  # fmt: skip
    if queue.entries:
        item = queue.entries[0].item
        url = reverse("annotation:adjudicate", args=[study.slug, item.pk])
        timings.append(timed(client, "adjudication: an item's page", url))
    return [Timing(t.name, t.url, t.times, t.bytes, note=shape) for t in timings]


# --- the calibration study at scale (issue #31 item 22) ---------------------------------------------------

PAGES: list[Callable[[Any], list[Timing]]] = [
    leaderboard_page,
    failure_browser_page,
    failure_api,
    research_pages,
    paired_pages,
    report_card_pages,
    agreement_page,
    adjudication_pages,
    calibrated_pages,
    calibration_adjudication_pages,
    calibration_round_pages,
]


TARGETS_MS = {
    CALIBRATED: 300.0,
    CALIBRATED_ALL: 300.0,
    CALIBRATED_GENERATOR: 300.0,
    CALIBRATION_QUEUE: 300.0,
    CALIBRATION_ITEM: 300.0,
    CALIBRATION_DECIDE: 300.0,
    CALIBRATION_STUDY: 300.0,
    ROUND_SMALL: 300.0,
    ROUND_LARGE: 300.0,
    SEARCH_COMMON: 300.0,
    SEARCH_ABSENT: 300.0,
    "leaderboard page (all judges)": 300.0,
    REPORT_CARD: 500.0,
    "failure browser: filtered first page (topic + judge)": 200.0,
    "agreement page (200 items x 3 annotators, 10 judges)": 300.0,
    ADJUDICATION_QUEUE: 300.0,
}


def explain_first_page() -> str:
    """EXPLAIN ANALYZE of the judge-side query of the filtered first page."""
    from django.db import connection

    from annotation.failures import reads as failures
    from judging.models import Judge

    judge = Judge.objects.order_by("judge_id").first()
    assert judge is not None
    query = failures.FailureQuery(topic="Health", judge=judge.judge_id)
    filters = failures.failure_filters_resolve(query, failures.filter_choices_for(query))
    qs = (
        failures._judge_failures(filters)
        .order_by("-judgment__generation_id", "judgment_id", "order")
        .values_list("pk")[:51]
    )
    sql, params = qs.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def run_pages() -> tuple[list[Timing], dict[str, int], str]:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from django.test import Client

    from annotation.base.models import AnnotatedFailure, Study
    from judging.models import CriticalFailure, Judgment

    if not Study.objects.filter(slug="bench-study").exists():
        add_human_study()
    from benchmarks.calibration_data import CALIBRATION_SLUG, add_calibration_study

    if not Study.objects.filter(slug=CALIBRATION_SLUG).exists():
        print(f"  calibration study: {add_calibration_study(n_items=CALIBRATION_ITEMS)}", file=sys.stderr)
    settings.DEBUG = False  # no SQL logging while timing
    user, _ = get_user_model().objects.get_or_create(username="bench-staff", defaults={"is_staff": True})
    user.user_permissions.add(Permission.objects.get(codename="add_job", content_type__app_label="jobs"))
    user = get_user_model().objects.get(pk=user.pk)  # the permission cache read again
    client = Client()
    client.force_login(user)
    counts = {
        "judgments": Judgment.objects.count(),
        "critical_failures": CriticalFailure.objects.count(),
        "human_failures": AnnotatedFailure.objects.count(),
    }
    pages = [page for page in PAGES if not ONLY or page.__name__ in ONLY]
    timings = []
    for page in pages:
        timings += (done := page(client))
        for t in done:  # as they come: a run stopped later keeps these
            print(f"  {t.median_ms:8.0f} ms median {t.p95_ms:8.0f} ms p95  {t.name}", file=sys.stderr)
    return timings, counts, explain_first_page()


def main() -> None:
    global CALIBRATION_ITEMS, ONLY
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", default="h2e_researcher_bench")
    parser.add_argument("--generators", type=int, default=20)
    parser.add_argument("--examples", type=int, default=7000)
    parser.add_argument("--judges", type=int, default=2)
    parser.add_argument(
        "--calibration-items", type=int, default=CALIBRATION_ITEMS, help="items of the calibration study"
    )
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated page functions to time (e.g. calibrated_pages); all by default",
    )
    parser.add_argument("--reuse", action="store_true", help="keep the database if it is already filled")
    parser.add_argument("--runs", type=int, default=SETTINGS.runs, help="timed requests per page")
    parser.add_argument("--warmup", type=int, default=SETTINGS.warmup, help="untimed requests per page first")
    parser.add_argument("--append-doc", action="store_true", help=f"append the figures to {DOC}")
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    SETTINGS.runs, SETTINGS.warmup, CALIBRATION_ITEMS = args.runs, args.warmup, args.calibration_items
    ONLY = {name for name in args.only.split(",") if name}
    if unknown := ONLY - {page.__name__ for page in PAGES}:
        parser.error(f"--only: no page function {', '.join(sorted(unknown))}")

    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{args.db}", "DEBUG": "1"}
    os.environ.update({"DATABASE_URL": env["DATABASE_URL"], "DEBUG": "1", "ALLOWED_HOSTS": "testserver"})
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "h2e_site.settings")
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    filled = None
    existing = _judgments_in(args.db) if args.reuse else 0
    if not existing:
        print(f"building {args.db} ...", file=sys.stderr)
        filled = build_database(
            args.db, env, generators=args.generators, examples=args.examples, judges=args.judges
        )
    psql(args.db, "VACUUM ANALYZE")
    timings, counts, plan = run_pages()
    result = {
        "counts": counts,
        "fill_seconds": filled,
        "load_before": load_before,
        "timings": [
            {
                "name": t.name,
                "url": t.url,
                "median_ms": round(t.median_ms, 1),
                "p95_ms": round(t.p95_ms, 1),
                "bytes": t.bytes,
                "note": t.note,
            }
            for t in timings
        ],
    }
    print(json.dumps(result, indent=2))
    print(plan)
    if args.append_doc:
        append_doc(result, timings, plan, machine_info(), args.note)


def _judgments_in(db: str) -> int:
    try:
        return int(psql(db, "SELECT count(*) FROM judging_judgment") or 0)
    except subprocess.CalledProcessError:
        return 0


def append_doc(
    result: dict[str, Any], timings: list[Timing], plan: str, machine: dict[str, str], note: str
) -> None:
    c = result["counts"]
    lines = [
        f"### Run of {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"Machine: {machine['nproc']} cores ({machine['cpu']}), {machine['ram']} RAM, "
        f"Python {machine['python']}, PostgreSQL {machine['postgresql']}. "
        f"Data: {c['judgments']:,} judgments, {c['critical_failures']:,} judge failures, "
        f"{c['human_failures']:,} human failures"
        + (f" (filled in {result['fill_seconds']:.0f} s)." if result["fill_seconds"] else "."),
        "",
        f"| page ({SETTINGS.runs} timed requests after {SETTINGS.warmup} warm-up) | median | p95 | target |",
        "| --- | --- | --- | --- |",
    ]
    for t in timings:
        target = TARGETS_MS.get(t.name)
        verdict = (
            "" if target is None else f"<= {target:.0f} ms ({'met' if t.p95_ms <= target else 'MISSED'})"
        )
        name = f"{t.name} ({t.note})" if t.note else t.name
        lines.append(f"| {name} | {t.median_ms:.0f} ms | {t.p95_ms:.0f} ms | {verdict} |")
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    lines += ["", f"Load average (1, 5, 15 min) before: {result['load_before']}; after: {load}."]
    if note:
        lines += ["", f"Note: {note}"]
    lines += ["", "Plan of the judge-side query of the filtered first page:", "", "```", plan, "```"]
    insert_into_section("## Researcher pages (issue #5)", "\n".join(lines))


if __name__ == "__main__":
    main()
