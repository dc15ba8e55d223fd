"""Storage back ends of the h2e import: COPY + set-based SQL on PostgreSQL, the ORM elsewhere (SQLite).

Both take the validated staging rows of one file (built in judging.h2e_import) and apply the same rules:
missing topics and procedures are created, the last of duplicated lines wins, rows already stored are left
as they are (a differing one is reported as a conflict), and L1/L2 copies that differ from the stored
procedure/generation are kept in extra["_h2e_record"].
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
from django.db.backends.base.base import BaseDatabaseWrapper

from judging.models import CriticalFailure, Generation, Judgment
from mining.models import Procedure, Split
from mining.services import FileReport, TopicCache

OVERRIDES_KEY = "_h2e_record"
GEN_COLUMNS = (
    "line, source_example_id, topic, goal, steps, resources, prompt, model_completion, predicted_steps, extra"
)
JUDG_COLUMNS = (
    "line, source_example_id, topic, goal, steps, resources, predicted_steps, reasoning, parse_failed, "
    "has_failure, n_failures, failures, extra"
)
Rows = Iterable[tuple[tuple[Any, ...], dict[str, Any]]]


def _missing_message(path: Path, line: int, source_example_id: str) -> str:
    return (
        f"{path}:{line}: source_example_id: no generation for {source_example_id!r} in this run "
        f"({path.parent.parent.parent.name}/generations.jsonl)"
    )


# --- PostgreSQL -----------------------------------------------------------------------------------

_OVERRIDES_GEN = """
    jsonb_strip_nulls(jsonb_build_object(
        'topic', CASE WHEN s.topic <> COALESCE(t.name, '') THEN to_jsonb(s.topic) END,
        'goal', CASE WHEN s.goal <> p.goal THEN to_jsonb(s.goal) END,
        'steps', CASE WHEN s.steps <> p.steps THEN s.steps END,
        'resources', CASE WHEN s.resources <> p.resources THEN s.resources END
    ))"""
_OVERRIDES_JUDG = """
    jsonb_strip_nulls(jsonb_build_object(
        'topic', CASE WHEN s.topic <> COALESCE(t.name, '') THEN to_jsonb(s.topic) END,
        'goal', CASE WHEN s.goal <> p.goal THEN to_jsonb(s.goal) END,
        'steps', CASE WHEN s.steps <> p.steps THEN s.steps END,
        'resources', CASE WHEN s.resources <> p.resources THEN s.resources END,
        'predicted_steps', CASE WHEN s.predicted_steps <> g.predicted_steps THEN s.predicted_steps END
    ))"""


def _with_overrides(overrides_sql: str) -> str:
    return (
        f"s.extra || CASE WHEN {overrides_sql} = '{{}}'::jsonb THEN '{{}}'::jsonb "
        f"ELSE jsonb_build_object('{OVERRIDES_KEY}', {overrides_sql}) END"
    )


def prepare_session(connection: BaseDatabaseWrapper) -> None:
    """Room for the staging tables in memory (effective only before the session's first temp table)."""
    with connection.cursor() as cur:
        cur.execute("SET temp_buffers TO '256MB'")


def analyze_tables(connection: BaseDatabaseWrapper) -> None:
    """Fresh planner statistics after a bulk load, so the leaderboard query plans well at once."""
    with connection.cursor() as cur:
        cur.execute("ANALYZE mining_procedure, judging_generation, judging_judgment, judging_criticalfailure")


def _lz4_available(cur: Any) -> bool:
    cur.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
    row = cur.fetchone()
    return bool(row and row[0])


class PgStore:
    """Streams staging rows with COPY into temporary tables, then moves them with set-based SQL.

    A NULL in a staged L1/L2 copy means the import already knows it equals the stored value.
    """

    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        self.connection = connection
        self.first_record: dict[str, Any] | None = None
        self.n_staged = 0
        self.conflicting: set[str] = set()

    def _copy(self, table: str, ddl: str, columns: str, rows: Rows) -> None:
        with self.connection.cursor() as cur:
            cur.execute("SET LOCAL synchronous_commit TO OFF")
            # The staging tables have no statistics, so the planner's cost estimates are huge and JIT would
            # spend more time compiling each statement (~0.5 s) than running it.
            cur.execute("SET LOCAL jit TO OFF")
            if _lz4_available(cur):
                # Prompts and long texts are TOAST-compressed; lz4 costs far less CPU than the default pglz.
                cur.execute("SET LOCAL default_toast_compression TO lz4")
            cur.execute(f"DROP TABLE IF EXISTS {table}")
            cur.execute(f"CREATE TEMP TABLE {table} ({ddl}) ON COMMIT DROP")
            with cur.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row, record in rows:
                    if self.first_record is None:
                        self.first_record = record
                    copy.write_row(row)
                    self.n_staged += 1

    def _conflicts(self, cur: Any, report: FileReport, what: str) -> None:
        for line, sid in cur.fetchall():
            self.conflicting.add(sid)
            report.conflicts.append(
                f"{report.path}:{line}: source_example_id: {what} {sid!r} is already stored with different "
                "content; not overwritten"
            )

    # generations

    def stage_generations(self, rows: Rows) -> None:
        self._copy(
            "h2e_stage_gen",
            "line int, source_example_id text, topic text, goal text, steps jsonb, resources jsonb, "
            "prompt text, model_completion text, predicted_steps jsonb, extra jsonb",
            GEN_COLUMNS,
            rows,
        )

    def store_generations(self, generator_pk: int, report: FileReport, *, deduplicate: bool) -> None:
        table = "h2e_stage_gen"
        with self.connection.cursor() as cur:
            if deduplicate:
                table = "h2e_gen_last"
                cur.execute(f"DROP TABLE IF EXISTS {table}")
                cur.execute(
                    f"CREATE TEMP TABLE {table} ON COMMIT DROP AS SELECT DISTINCT ON (source_example_id) * "
                    "FROM h2e_stage_gen ORDER BY source_example_id, line DESC"
                )
            self._create_topics_and_procedures(cur, table)
            cur.execute(
                f"""
                INSERT INTO judging_generation (generator_id, procedure_id, prompt, model_completion,
                    predicted_steps, n_tokens, error, extra, created_at)
                SELECT %s, p.id, s.prompt, s.model_completion, s.predicted_steps, NULL, '',
                    {_with_overrides(_OVERRIDES_GEN)}, now()
                FROM {table} s
                JOIN mining_procedure p ON p.source_example_id = s.source_example_id
                LEFT JOIN mining_topic t ON t.id = p.topic_id
                ON CONFLICT (generator_id, procedure_id) DO NOTHING
                """,
                [generator_pk],
            )
            report.created = cur.rowcount
            distinct = self.n_staged - report.duplicates
            if report.created < distinct:
                cur.execute(
                    f"""
                    SELECT s.line, s.source_example_id FROM {table} s
                    JOIN mining_procedure p ON p.source_example_id = s.source_example_id
                    JOIN judging_generation g ON g.procedure_id = p.id AND g.generator_id = %s
                    WHERE g.model_completion <> s.model_completion OR g.predicted_steps <> s.predicted_steps
                        OR g.prompt <> s.prompt
                    ORDER BY s.line
                    """,
                    [generator_pk],
                )
                self._conflicts(cur, report, "generation for")
            report.unchanged = distinct - report.created - len(report.conflicts)

    def _create_topics_and_procedures(self, cur: Any, table: str) -> None:
        cur.execute(
            "INSERT INTO mining_topic (name, is_weborganizer) "
            f"SELECT DISTINCT btrim(topic), false FROM {table} WHERE btrim(topic) <> '' "
            "ON CONFLICT (name) DO NOTHING"
        )
        cur.execute(
            f"""
            INSERT INTO mining_procedure (source_example_id, topic_id, goal, resources, steps, url,
                source_text, split, created_at)
            SELECT s.source_example_id, t.id, s.goal, s.resources, s.steps, '', '', %s, now()
            FROM {table} s LEFT JOIN mining_topic t ON t.name = btrim(s.topic)
            WHERE s.goal IS NOT NULL
            ON CONFLICT (source_example_id) DO NOTHING
            """,
            [Split.BENCH],
        )

    def stored_procedures(
        self, source_example_ids: list[str]
    ) -> dict[str, tuple[str, str, list[str], list[str]]]:
        with self.connection.cursor() as cur:
            cur.execute(
                "SELECT p.source_example_id, COALESCE(t.name, ''), p.goal, p.steps::text, p.resources::text "
                "FROM mining_procedure p LEFT JOIN mining_topic t ON t.id = p.topic_id "
                "WHERE p.source_example_id = ANY(%s)",
                [source_example_ids],
            )
            return {
                sid: (topic, goal, orjson.loads(steps), orjson.loads(resources))
                for sid, topic, goal, steps, resources in cur.fetchall()
            }

    # judgments

    def stage_judgments(self, rows: Rows) -> None:
        self._copy(
            "h2e_stage_judg",
            "line int, source_example_id text, topic text, goal text, steps jsonb, resources jsonb, "
            "predicted_steps jsonb, reasoning text, parse_failed bool, has_failure bool, n_failures int, "
            "failures jsonb, extra jsonb",
            JUDG_COLUMNS,
            rows,
        )

    def report_missing_generations(self, path: Path, report: FileReport) -> None:
        with self.connection.cursor() as cur:
            cur.execute("SELECT line, source_example_id FROM h2e_stage_judg ORDER BY line")
            report.errors.extend(_missing_message(path, line, sid) for line, sid in cur.fetchall())

    def check_generations(self, path: Path, generator_pk: int, report: FileReport) -> None:
        with self.connection.cursor() as cur:
            cur.execute(
                """
                SELECT s.line, s.source_example_id FROM h2e_stage_judg s
                WHERE NOT EXISTS (
                    SELECT 1 FROM mining_procedure p
                    JOIN judging_generation g ON g.procedure_id = p.id AND g.generator_id = %s
                    WHERE p.source_example_id = s.source_example_id
                )
                ORDER BY s.line
                """,
                [generator_pk],
            )
            missing = cur.fetchall()
            report.errors.extend(_missing_message(path, line, sid) for line, sid in missing)
            self.n_staged -= len(missing)

    def _judgment_source(self, deduplicate: bool) -> str:
        distinct = "DISTINCT ON (s.source_example_id)" if deduplicate else ""
        order = "ORDER BY s.source_example_id, s.line DESC" if deduplicate else ""
        return f"""
            SELECT {distinct} s.line, s.source_example_id, g.id AS generation_id, p.id AS procedure_id,
                p.topic_id, s.reasoning, s.parse_failed, s.has_failure, s.n_failures, s.failures,
                {_with_overrides(_OVERRIDES_JUDG)} AS extra
            FROM h2e_stage_judg s
            JOIN mining_procedure p ON p.source_example_id = s.source_example_id
            JOIN judging_generation g ON g.procedure_id = p.id AND g.generator_id = %(generator)s
            LEFT JOIN mining_topic t ON t.id = p.topic_id
            {order}"""

    def store_judgments(
        self, judge_pk: int, generator_pk: int, report: FileReport, *, deduplicate: bool
    ) -> None:
        params = {"judge": judge_pk, "generator": generator_pk}
        with self.connection.cursor() as cur:
            cur.execute(
                f"""
                WITH src AS MATERIALIZED ({self._judgment_source(deduplicate)}
                ), ins AS (
                    INSERT INTO judging_judgment (judge_id, generation_id, generator_id, procedure_id,
                        topic_id, reasoning, raw_output, parse_failed, has_failure, n_failures, extra,
                        created_at)
                    SELECT %(judge)s, generation_id, %(generator)s, procedure_id, topic_id, reasoning, '',
                        parse_failed, has_failure, n_failures, extra, now()
                    FROM src
                    ON CONFLICT (judge_id, generation_id) DO NOTHING
                    RETURNING id, generation_id
                ), failures AS (
                    INSERT INTO judging_criticalfailure
                        (judgment_id, "order", description, l1_steps, l2_steps)
                    SELECT ins.id, f.ord - 1, f.value->>'failure', f.value->'L1_steps', f.value->'L2_steps'
                    FROM ins JOIN src s ON s.generation_id = ins.generation_id
                    CROSS JOIN LATERAL jsonb_array_elements(s.failures) WITH ORDINALITY AS f(value, ord)
                    RETURNING 1
                )
                SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM failures)
                """,
                params,
            )
            report.created = cur.fetchone()[0]
            distinct = self.n_staged - report.duplicates
            if report.created < distinct:
                cur.execute(
                    f"""
                    SELECT s.line, s.source_example_id FROM ({self._judgment_source(deduplicate)}) s
                    JOIN judging_judgment j ON j.generation_id = s.generation_id AND j.judge_id = %(judge)s
                    WHERE j.parse_failed <> s.parse_failed OR j.has_failure <> s.has_failure
                        OR j.n_failures <> s.n_failures OR j.reasoning <> s.reasoning
                    ORDER BY s.line
                    """,
                    params,
                )
                self._conflicts(cur, report, "judgment of")
            report.unchanged = distinct - report.created - len(report.conflicts)


# --- ORM (SQLite and other back ends) -------------------------------------------------------------


def _overrides(
    row: dict[str, Any], procedure: Procedure, predicted_steps: list[str] | None
) -> dict[str, Any]:
    stored = {
        "topic": procedure.topic.name if procedure.topic else "",
        "goal": procedure.goal,
        "steps": procedure.steps,
        "resources": procedure.resources,
    }
    if predicted_steps is not None:
        stored["predicted_steps"] = predicted_steps
    return {key: row[key] for key, value in stored.items() if row[key] != value}


def _extra_with(row: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    extra = dict(row["extra"])
    if overrides:
        extra[OVERRIDES_KEY] = overrides
    return extra


def _decode(columns: str, row: tuple[Any, ...]) -> dict[str, Any]:
    data = dict(zip([c.strip() for c in columns.split(",")], row, strict=True))
    for key in ("steps", "resources", "predicted_steps", "failures", "extra"):
        if key in data:
            data[key] = orjson.loads(data[key])
    return data


class OrmStore:
    """The same rules as PgStore through the ORM, one file's rows held in memory."""

    def __init__(self) -> None:
        self.first_record: dict[str, Any] | None = None
        self.rows: list[dict[str, Any]] = []
        self.conflicting: set[str] = set()

    @property
    def n_staged(self) -> int:
        return len(self.rows)

    def _stage(self, columns: str, rows: Rows) -> None:
        for row, record in rows:
            if self.first_record is None:
                self.first_record = record
            self.rows.append(_decode(columns, row))

    def _last_per_id(self) -> list[dict[str, Any]]:
        last: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            last[row["source_example_id"]] = row
        return sorted(last.values(), key=lambda r: r["line"])

    def _procedures(self, rows: list[dict[str, Any]], create: bool) -> dict[str, Procedure]:
        ids = [r["source_example_id"] for r in rows]
        stored = {p.source_example_id: p for p in Procedure.objects.filter(source_example_id__in=ids)}
        if create:
            topics = TopicCache()
            new = [
                Procedure(
                    source_example_id=r["source_example_id"],
                    topic_id=topics.id_for(r["topic"]),
                    goal=r["goal"],
                    steps=r["steps"],
                    resources=r["resources"],
                    split=Split.BENCH,
                )
                for r in rows
                if r["source_example_id"] not in stored
            ]
            Procedure.objects.bulk_create(new, batch_size=1000)
            stored = {p.source_example_id: p for p in Procedure.objects.filter(source_example_id__in=ids)}
        for procedure in stored.values():
            procedure.topic  # noqa: B018 - load once for the override comparison
        return stored

    def stage_generations(self, rows: Rows) -> None:
        self._stage(GEN_COLUMNS, rows)

    def store_generations(self, generator_pk: int, report: FileReport, *, deduplicate: bool) -> None:
        rows = self._last_per_id()
        report.duplicates = len(self.rows) - len(rows)
        procedures = self._procedures(rows, create=True)
        existing = {
            g.procedure_id: g
            for g in Generation.objects.filter(generator_id=generator_pk, procedure__in=procedures.values())
        }
        new = []
        for row in rows:
            procedure = procedures[row["source_example_id"]]
            stored = existing.get(procedure.pk)
            if stored is None:
                new.append(self._generation(generator_pk, procedure, row))
            elif (stored.model_completion, stored.predicted_steps, stored.prompt) != (
                row["model_completion"],
                row["predicted_steps"],
                row["prompt"],
            ):
                report.conflicts.append(
                    f"{report.path}:{row['line']}: source_example_id: generation for "
                    f"{row['source_example_id']!r} is already stored with different content; not overwritten"
                )
            else:
                report.unchanged += 1
        Generation.objects.bulk_create(new, batch_size=1000)
        report.created = len(new)

    @staticmethod
    def _generation(generator_pk: int, procedure: Procedure, row: dict[str, Any]) -> Generation:
        return Generation(
            generator_id=generator_pk,
            procedure=procedure,
            prompt=row["prompt"],
            model_completion=row["model_completion"],
            predicted_steps=row["predicted_steps"],
            extra=_extra_with(row, _overrides(row, procedure, None)),
        )

    def stage_judgments(self, rows: Rows) -> None:
        self._stage(JUDG_COLUMNS, rows)

    def report_missing_generations(self, path: Path, report: FileReport) -> None:
        report.errors.extend(_missing_message(path, r["line"], r["source_example_id"]) for r in self.rows)

    def check_generations(self, path: Path, generator_pk: int, report: FileReport) -> None:
        generations = self._generations(generator_pk)
        missing = [r for r in self.rows if r["source_example_id"] not in generations]
        report.errors.extend(_missing_message(path, r["line"], r["source_example_id"]) for r in missing)
        self.rows = [r for r in self.rows if r["source_example_id"] in generations]

    def _generations(self, generator_pk: int) -> dict[str, Generation]:
        ids = {r["source_example_id"] for r in self.rows}
        return {
            g.procedure.source_example_id: g
            for g in Generation.objects.filter(
                generator_id=generator_pk, procedure__source_example_id__in=ids
            ).select_related("procedure__topic")
        }

    def store_judgments(
        self, judge_pk: int, generator_pk: int, report: FileReport, *, deduplicate: bool
    ) -> None:
        rows = self._last_per_id()
        report.duplicates = len(self.rows) - len(rows)
        generations = self._generations(generator_pk)
        existing = {
            j.generation_id: j
            for j in Judgment.objects.filter(judge_id=judge_pk, generation__in=generations.values())
        }
        new: list[tuple[Judgment, list[dict[str, Any]]]] = []
        for row in rows:
            generation = generations[row["source_example_id"]]
            stored = existing.get(generation.pk)
            if stored is None:
                new.append((self._judgment(judge_pk, generation, row), row["failures"]))
            elif (stored.parse_failed, stored.has_failure, stored.n_failures, stored.reasoning) != (
                row["parse_failed"],
                row["has_failure"],
                row["n_failures"],
                row["reasoning"],
            ):
                report.conflicts.append(
                    f"{report.path}:{row['line']}: source_example_id: judgment of "
                    f"{row['source_example_id']!r} is already stored with different content; not overwritten"
                )
            else:
                report.unchanged += 1
        judgments = Judgment.objects.bulk_create([j for j, _ in new], batch_size=1000)
        CriticalFailure.objects.bulk_create(
            [
                CriticalFailure(
                    judgment=judgment,
                    order=order,
                    description=failure["failure"],
                    l1_steps=failure["L1_steps"],
                    l2_steps=failure["L2_steps"],
                )
                for judgment, (_, failures) in zip(judgments, new, strict=True)
                for order, failure in enumerate(failures)
            ],
            batch_size=1000,
        )
        report.created = len(new)

    @staticmethod
    def _judgment(judge_pk: int, generation: Generation, row: dict[str, Any]) -> Judgment:
        procedure = generation.procedure
        return Judgment(
            judge_id=judge_pk,
            generation=generation,
            generator_id=generation.generator_id,
            procedure_id=procedure.pk,
            topic_id=procedure.topic_id,
            reasoning=row["reasoning"],
            parse_failed=row["parse_failed"],
            has_failure=row["has_failure"],
            n_failures=row["n_failures"],
            extra=_extra_with(row, _overrides(row, procedure, generation.predicted_steps)),
        )
