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
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import fresh_database  # noqa: E402
from benchmarks.import_scale import DOC, WORDS, machine_info  # noqa: E402
from benchmarks.results_doc import insert_into_section  # noqa: E402

# --- data ---------------------------------------------------------------------------------------------

_FILL_SQL = """
SELECT setseed(0.42);
CREATE FUNCTION pg_temp.words(n int) RETURNS text LANGUAGE sql VOLATILE AS $$
  SELECT initcap(left(s, 1)) || substr(s, 2) || '.' FROM (
    SELECT string_agg(w[1 + floor(random() * array_length(w, 1))::int], ' ') AS s
    FROM generate_series(1, n), (SELECT %(words)s::text[] AS w) AS vocabulary
  ) AS sentence
$$;
CREATE FUNCTION pg_temp.steps(k int, n int) RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  SELECT jsonb_agg(pg_temp.words(n)) FROM generate_series(1, k)
$$;

INSERT INTO mining_procedure (source_example_id, goal, resources, steps, url, source_text, split, created_at,
                              topic_id, n_tokens)
SELECT 'bench-' || lpad(i::text, 5, '0'), pg_temp.words(18 + (random() * 14)::int), '[]',
       pg_temp.steps(8, 12), '', '', 'bench', now(), t.ids[1 + i %% array_length(t.ids, 1)],
       150 + (random() * 150)::int
FROM generate_series(0, %(examples)s - 1) AS i,
     (SELECT array_agg(id ORDER BY name) AS ids FROM mining_topic) AS t;

INSERT INTO judging_generator (generator_id, model, backend, prompt_style, vllm_overrides, prompt_sha256,
                               prompt_path, prompt_text, run_name, manifest, created_at, config)
SELECT lpad((g + 1)::text, 12, '0'), 'org/generator-model-' || lpad(g::text, 2, '0'), 'openai', 'inst',
       '{}', '', '', '', '', '{}', now(), '{}'
FROM generate_series(0, %(generators)s - 1) AS g;

INSERT INTO judging_judge (judge_id, model, backend, vllm_overrides, prompt_sha256, prompt_path,
                           prompt_text, is_demo_model, manifest, created_at, config)
SELECT 'j' || lpad((j + 1)::text, 11, '0'), 'judge-org/judge-model-' || j, 'vllm', '{}', '', '', '', false,
       '{}', now(), '{}'
FROM generate_series(0, %(judges)s - 1) AS j;

INSERT INTO judging_generation (prompt, model_completion, predicted_steps, n_tokens, error, extra,
                                created_at, procedure_id, generator_id, attempts, duplicate_ngram_rate,
                                duplicate_step_rate, step_count_mismatch, updated_at)
SELECT '', '', pg_temp.steps(8, 10), 120 + (random() * 300)::int, '', '{}', now(), p.id, g.id, 1,
       random() * 0.2, CASE WHEN random() < 0.1 THEN 0.125 ELSE 0 END, random() < 0.3, now()
FROM judging_generator AS g CROSS JOIN mining_procedure AS p
ORDER BY g.id, p.id;

CREATE TEMP TABLE verdicts AS
SELECT gn.id AS generation_id, gn.generator_id, p.id AS procedure_id, j.id AS judge_id, p.topic_id,
       random() < 0.02 AS parse_failed,
       -- no failure with a probability that grows with the generator (0.10 .. 0.48): rankable, close pairs
       CASE WHEN random() < 0.10 + 0.02 * (gn.generator_id %% 20) THEN 0
            ELSE 1 + floor(random() * 4)::int END AS n
FROM judging_generation AS gn JOIN mining_procedure AS p ON p.id = gn.procedure_id
CROSS JOIN judging_judge AS j;

INSERT INTO judging_judgment (reasoning, raw_output, parse_failed, has_failure, n_failures, extra,
                              created_at, generation_id, generator_id, procedure_id, judge_id, topic_id,
                              attempts, updated_at)
SELECT CASE WHEN parse_failed THEN '' ELSE pg_temp.words(40) END, '', parse_failed,
       NOT parse_failed AND n > 0, CASE WHEN parse_failed THEN 0 ELSE n END, '{}', now(),
       generation_id, generator_id, procedure_id, judge_id, topic_id, 1, now()
FROM verdicts ORDER BY generation_id, judge_id;

INSERT INTO judging_criticalfailure ("order", description, l1_steps, l2_steps, judgment_id,
                                     steps_out_of_range)
SELECT k, pg_temp.words(18 + (random() * 14)::int), jsonb_build_array(1 + (random() * 7)::int),
       CASE WHEN random() < 0.7 THEN jsonb_build_array(1 + (random() * 7)::int) ELSE '[]'::jsonb
       END,
       jm.id, false
FROM judging_judgment AS jm CROSS JOIN LATERAL generate_series(0, jm.n_failures - 1) AS k
WHERE jm.n_failures > 0
ORDER BY jm.id, k;
"""


def psql(db: str, sql: str) -> str:
    out = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-qtA", "-d", db, "-c", sql],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return out.stdout.strip()


def build_database(db: str, env: dict[str, str], *, generators: int, examples: int, judges: int) -> float:
    """Fresh database, migrated and filled; returns the seconds it took."""
    start = time.perf_counter()
    if fresh_database(db):
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    import psycopg

    words = "{" + ",".join('"' + w.replace('"', "") + '"' for w in WORDS) + "}"
    with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{db}", autocommit=True) as connection:
        sql = _FILL_SQL % {
            "words": f"'{words}'",
            "examples": examples,
            "generators": generators,
            "judges": judges,
        }
        for statement in _statements(sql):
            connection.execute(statement)  # type: ignore[arg-type]
    print(f"  filled in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return time.perf_counter() - start


def _statements(sql: str) -> list[str]:
    """Split on ';' at line ends, keeping the $$ function bodies whole."""
    out, current, in_body = [], [], False
    for line in sql.strip().splitlines():
        current.append(line)
        if line.count("$$") % 2:
            in_body = not in_body
        if not in_body and line.rstrip().endswith(";"):
            out.append("\n".join(current))
            current = []
    return out


def add_human_study(*, n_items: int = 200, k: int = 3) -> None:
    """A study over the newest generations, k annotations an item, ~40 % with one or two failures."""
    import random

    from django.utils import timezone

    from annotation.base.models import AnnotatedFailure, Annotation, Assignment, Participant, Study, StudyItem
    from judging.models import Generation

    rng = random.Random(5)
    study = Study.objects.create(
        slug="bench-study", title="Bench study", completion_code="C", screenout_code="S"
    )
    generations = list(Generation.objects.order_by("-id").values_list("id", flat=True)[: n_items * 37 : 37])
    items = StudyItem.objects.bulk_create(
        StudyItem(
            study=study,
            generation_id=g,
            subject_key=f"generation:{g}",
            position=i,
            target_annotations=k,
            assigned_count=k,
            completed_count=k,
        )
        for i, g in enumerate(generations)
    )
    participants = Participant.objects.bulk_create(
        Participant(study=study, prolific_pid=f"bench-{i}") for i in range(n_items * k // 10)
    )
    now = timezone.now()
    failures = []
    for n, item in enumerate(items):
        for a in range(k):
            participant = participants[(n * k + a) % len(participants)]
            assignment = Assignment.objects.create(
                study=study, participant=participant, item=item, status="submitted", issued_at=now,
                lease_expires_at=now, n_reading_steps=8,
            )  # fmt: skip
            n_failures = rng.choice((0, 0, 0, 1, 2))
            annotation = Annotation.objects.create(
                assignment=assignment, study=study, item=item, participant=participant,
                has_failure=bool(n_failures), n_failures=n_failures, issued_at=now, goal_acknowledged_at=now,
                submitted_at=now, elapsed_seconds=90.0,
            )  # fmt: skip
            failures += [
                AnnotatedFailure(
                    annotation=annotation,
                    order=o,
                    description=" ".join(rng.choices(WORDS, k=20)),
                    l1_steps=[rng.randint(1, 8)],
                    l2_steps=[rng.randint(1, 8)],
                )
                for o in range(n_failures)
            ]
    AnnotatedFailure.objects.bulk_create(failures)


AGREEMENT_JUDGES = 10


def add_study_judges(*, n_judges: int = AGREEMENT_JUDGES) -> list[Any]:
    """Judges enough that n_judges judged the bench study's 200 generations: the extra ones judge only those
    (a verdict agreeing with the last annotator's label 80 % of the time, failures on the failing ones).
    Returns the judges it added (the caller removes them, so the other pages always see the same data)."""
    import random

    from annotation.base.models import Annotation
    from judging.models import CriticalFailure, Generation, Judge, Judgment

    rng = random.Random(9)
    study_generations = list(
        Generation.objects.filter(study_items__study__slug="bench-study").values_list(
            "id", "generator_id", "procedure_id"
        )
    )
    first_labels = dict(
        Annotation.objects.filter(study__slug="bench-study")
        .order_by("item__generation_id", "-pk")
        .values_list("item__generation_id", "has_failure")
    )
    judged = Judge.objects.filter(judgments__generation_id=study_generations[0][0]).count()
    added = []
    for j in range(judged, n_judges):
        judge = Judge.objects.create(judge_id=f"agreement-{j:02d}", model=f"judge-org/agreement-judge-{j}")
        added.append(judge)
        rows = []
        for generation_id, generator_id, procedure_id in study_generations:
            says = first_labels[generation_id] if rng.random() < 0.8 else not first_labels[generation_id]
            rows.append(
                Judgment(
                    judge=judge, generation_id=generation_id, generator_id=generator_id,
                    procedure_id=procedure_id, has_failure=says, n_failures=int(says),
                    reasoning=" ".join(rng.choices(WORDS, k=30)),
                )
            )  # fmt: skip
        Judgment.objects.bulk_create(rows)
        CriticalFailure.objects.bulk_create(
            CriticalFailure(judgment=row, order=0, description=" ".join(rng.choices(WORDS, k=20)),
                            l1_steps=[rng.randint(1, 8)], l2_steps=[rng.randint(1, 8)])
            for row in rows if row.has_failure
        )  # fmt: skip
    return added


# --- timings ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    name: str
    url: str
    times: list[float]
    bytes: int
    note: str = ""

    @property
    def median_ms(self) -> float:
        return 1000 * statistics.median(self.times)

    @property
    def p95_ms(self) -> float:
        ordered = sorted(self.times)
        return 1000 * ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


RUNS = 20
WARMUP = 3
CALIBRATION_ITEMS = 10_000
ONLY: set[str] = set()  # --only: the page functions timed (all when empty)
SEARCH_COMMON = "failure browser: text search q=step (a common word), counts included"
SEARCH_ABSENT = "failure browser: text search q=temperature (a word no failure has), counts included"


def timed(
    client: Any,
    name: str,
    url: str,
    params: dict[str, str] | None = None,
    *,
    runs: int | None = None,
    cold: bool = False,
    **headers: str,
) -> Timing:
    """Median and p95 over `runs` requests after the warm-up; `cold`: Django's cache (the figures cached for
    the judgments' version, judging/versions.py) cleared before each timed request."""
    from django.core.cache import cache

    runs = RUNS if runs is None else min(runs, RUNS)
    for _ in range(WARMUP):
        response = client.get(url, params or {}, **headers)
        assert response.status_code == 200, (url, response.status_code)
    times = []
    for _ in range(runs):
        if cold:
            cache.clear()
            _forget_remembered()
        start = time.perf_counter()
        response = client.get(url, params or {}, **headers)
        times.append(time.perf_counter() - start)
    query = "&".join(f"{k}={v}" for k, v in (params or {}).items())
    return Timing(name, url + (f"?{query}" if query else ""), times, len(response.content))


def _forget_remembered() -> None:
    """What pages remember in this process besides Django's cache (the adjudication queue's subjects and
    Dawid-Skene fits): forgotten for the timings "computed afresh"."""
    from annotation.kinds.critical_failures import adjudication

    for name in ("_SUBJECTS", "_FITS"):
        if hasattr(adjudication, name):
            getattr(adjudication, name).clear()


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
    from annotation import failures

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
    items = [entry.item for entry in queue.entries[: WARMUP + CALIBRATION_RUNS + 1]]
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
        if n >= min(WARMUP, len(items) - 1):
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

    from annotation import failures
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
    global RUNS, WARMUP, CALIBRATION_ITEMS, ONLY
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
    parser.add_argument("--runs", type=int, default=RUNS, help="timed requests per page")
    parser.add_argument("--warmup", type=int, default=WARMUP, help="untimed requests per page first")
    parser.add_argument("--append-doc", action="store_true", help=f"append the figures to {DOC}")
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    RUNS, WARMUP, CALIBRATION_ITEMS = args.runs, args.warmup, args.calibration_items
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
        f"| page ({RUNS} timed requests after {WARMUP} warm-up) | median | p95 | target |",
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
