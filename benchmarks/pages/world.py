"""The database benchmarks/researcher_pages.py times its pages on: generators, judges and judgments filled by
SQL at scale, a human study with its annotations and the judges that judged its items."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.databases import fresh_database
from benchmarks.import_scale import WORDS

ROOT = Path(__file__).resolve().parent.parent.parent

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
