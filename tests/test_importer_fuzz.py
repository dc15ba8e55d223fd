"""Property-based fuzzing (Hypothesis) of every importer a staff user can run (#19, acceptance):
import_bigbench, import_step_types, import_documents, import_bench and import_h2e, through their commands,
with numbers beyond every column's range, JSON nested deeper than any parser takes, NUL and other control
characters, empty strings, repeated records and keys, and records that are not objects.

Whatever the file, a command either imports or stops with a CommandError whose message is one line (no
traceback); every bad record it lists names the file and line; a rejected file stores nothing
(import_documents keeps the valid records of a file by design, and never stores a bad one). Bounded: a few
hundred files in all (FUZZ_SCALE multiplies the examples); derandomized in CI like tests/test_fuzz.py."""

from __future__ import annotations

import io
import json
import re
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from annotation.kinds.step_types.models import (
    StepTypeClassifier,
    StepTypeLabel,
    StepTypeLabelSet,
    StepTypePrediction,
)
from goal_step.models import TaskExample, TaskSet
from goal_step.options import MAX_CANDIDATES
from h2e_site.jobs.models import Job, JobStatus
from judging.import_jobs import import_job_run
from judging.models import CriticalFailure, Generation, Judgment
from mining.models import Procedure, SourceDocument, Topic
from tests.factories import make_procedure
from tests.fuzzing import fuzz_settings
from tests.h2e_trees import (
    EXAMPLES,
    JUDGE_A,
    GeneratorSpec,
    build_standard_tree,
    generation_record,
    judgment_record,
    write_lines,
    write_run,
)

pytestmark = pytest.mark.django_db

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
ODD_TEXT = st.sampled_from(["", " ", "\x00", "a\x00b", "\x07", "\u202e", "=cmd", "build", "..", "x" * 300])
NUMBER = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 2**64, 10**30, 0, -1]),
    st.floats(allow_nan=False, allow_infinity=False),
)
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT, ODD_TEXT)
JSON = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.one_of(TEXT, ODD_TEXT), inner, max_size=3)
    ),
    max_leaves=8,
)
# raw lines no JSON parser reads as an object: too deep, cut short, not an object, numbers past any type
RAW = st.one_of(
    st.integers(min_value=1_100, max_value=60_000).map(lambda n: "[" * n + "]" * n),
    st.integers(min_value=1_100, max_value=60_000).map(lambda n: '{"a": ' * n + "1" + "}" * n),
    st.sampled_from(
        ["{", "null", "[1, 2]", '"build_tasks"', "1e999", str(2**70), '{"a": 1, "a": 2}', "\x00"]
    ),
)


def mutated(valid: st.SearchStrategy[dict[str, Any]], fields: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A valid record, two times in three as it is, else with a field or two replaced by anything."""
    changes = st.dictionaries(
        st.sampled_from(fields), st.one_of(JSON, ODD_TEXT, NUMBER), min_size=1, max_size=2
    )
    return st.one_of(valid, valid, st.builds(lambda record, change: record | change, valid, changes))


def lines_of(record: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    """A file's records: mostly the record strategy's, some anything or unreadable, sometimes one twice."""
    return st.lists(st.one_of(record, record, record, record, JSON, RAW), min_size=1, max_size=4).flatmap(
        lambda rows: st.sampled_from([rows, rows, rows + rows[:1]])
    )


def _settings(n: int) -> settings:
    return fuzz_settings(n)


def _line(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _command(name: str, *args: str) -> tuple[str | None, str]:
    """Run the command: (its one-line refusal or None, what it wrote to stderr)."""
    err = io.StringIO()
    try:
        call_command(name, *args, stdout=io.StringIO(), stderr=err, verbosity=0)
    except CommandError as refused:
        message = str(refused)
        assert message and "\n" not in message and "Traceback" not in message, message
        _event(f"{name}: refused ({_gist(message)})")
        return message, err.getvalue()
    _event(f"{name}: imported")
    return None, err.getvalue()


def _event(what: str) -> None:
    """Counted by Hypothesis (its statistics list which refusals the examples reached)."""
    if currently_in_test_context():
        event(what)


def _gist(message: str) -> str:
    """The refusal without file, index or value: "examples[]: contains the control character"."""
    text = message.split(": ", 1)[1] if message.startswith("/") else message
    return re.sub(r"\[[^\]]*\]|'.*|\d+", "", text)[:50]


def _bad_lines_name_their_file(stderr: str, path: Path) -> None:
    """Every bad record listed names the file and line ("path:3: field: reason")."""
    assert "Traceback" not in stderr
    listed = [line.strip() for line in stderr.splitlines() if line.startswith("  ") and str(path) in line]
    for line in listed:
        assert re.match(rf"^{re.escape(str(path))}:\d+: \S", line), line


# --- import_bigbench -------------------------------------------------------------------------------------

WORD = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8)
QUESTION = "\nWhich step helps achieve this goal?"


def _example(goal: str, candidates: list[str], answer: int) -> dict[str, Any]:
    return {
        "input": f"Goal: {goal}{QUESTION}",
        "target_scores": {text: int(i == answer % len(candidates)) for i, text in enumerate(candidates)},
    }


GOOD_EXAMPLE = st.builds(
    _example, WORD, st.lists(WORD, min_size=2, max_size=5, unique=True), st.integers(0, 4)
)
EXAMPLE = st.one_of(
    mutated(GOOD_EXAMPLE, ["input", "target_scores", "other"]),
    st.builds(  # a candidate of any text and score added
        lambda row, text, score: {**row, "target_scores": {**row["target_scores"], text: score}},
        GOOD_EXAMPLE,
        st.one_of(TEXT, ODD_TEXT),
        st.one_of(st.sampled_from([0, 1]), SCALAR),
    ),
)
GOOD_TASK = st.fixed_dictionaries(
    {
        "name": st.just("fuzzed"),
        "description": st.just(""),
        "keywords": st.just(["fuzz"]),
        "metrics": st.just(["multiple_choice_grade"]),
        "examples": st.lists(
            st.one_of(GOOD_EXAMPLE, GOOD_EXAMPLE, GOOD_EXAMPLE, EXAMPLE), min_size=1, max_size=3
        ).flatmap(
            lambda rows: st.sampled_from([rows, rows, rows + rows[:1]])  # the same example twice, or not
        ),
    }
)
TASK_TEXT = st.one_of(
    GOOD_TASK.map(_line),
    GOOD_TASK.map(_line),
    mutated(GOOD_TASK, ["name", "description", "keywords", "metrics", "examples"]).map(_line),
    JSON.map(_line),
    RAW,
)
TASK_NAME = st.sampled_from(["ok"] * 14 + ["build", "x" * 65, "", "a b", "..", "nul\x00", "é"])


def test_import_bigbench_never_fails_on_any_file_or_name(tmp_path: Path) -> None:
    path = tmp_path / "task.json"
    numbers = count()

    @_settings(120)
    @given(text=TASK_TEXT, name=TASK_NAME, task=st.sampled_from(["step_inference"] * 6 + ["step_ordering"]))
    def run(text: str, name: str, task: str) -> None:
        path.write_text(text, encoding="utf-8")
        name = f"{name}-{next(numbers)}" if name == "ok" else name
        before = (TaskSet.objects.count(), TaskExample.objects.count())
        refused, _ = _command("import_bigbench", str(path), "--name", name, "--task", task)
        if refused is not None:
            assert refused.startswith((f"{path}: ", "--name: ")), refused
            assert (TaskSet.objects.count(), TaskExample.objects.count()) == before
            return
        stored = TaskSet.objects.get(name=name)
        for example in stored.examples.all():
            assert 2 <= len(example.candidates) <= MAX_CANDIDATES
            assert (
                all(c.strip() and "\x00" not in c for c in example.candidates)
                and "\x00" not in example.prompt
            )

    run()


# --- import_step_types -----------------------------------------------------------------------------------

STEP_ROW = mutated(
    st.fixed_dictionaries(
        {
            "source_example_id": st.sampled_from(["fuzz-p", "fuzz-p", "nope"]),
            "candidate": st.sampled_from(["sequential:0-1", "optional@0:1", "interchangeable@0:1-2"]),
            "annotator": st.sampled_from(["a", "b"]),
            "holds": st.booleans(),
        }
    ),
    ["source_example_id", "procedure", "candidate", "type", "anchor", "first", "second", "annotator", "holds",
     "expert", "task_expert", "is_attention_check", "unparsable", "raw_output", "model"],
)  # fmt: skip
STEP_NAME = st.sampled_from(["ok"] * 12 + ["", "..", ".", "a/b", "x" * 65, "gpt-4.1", "nul\x00", "build"])


def _step_types_stored() -> tuple[int, ...]:
    models = (StepTypeLabelSet, StepTypeLabel, StepTypeClassifier, StepTypePrediction)
    return tuple(model.objects.count() for model in models)


def test_import_step_types_never_fails_on_any_file_or_name(tmp_path: Path) -> None:
    make_procedure(goal="Bake", steps=["a", "b", "c", "d"], topic="Food", source_example_id="fuzz-p")
    path = tmp_path / "labels.jsonl"
    numbers = count()

    @_settings(100)
    @given(lines=lines_of(STEP_ROW), name=STEP_NAME, flag=st.sampled_from(["--label-set", "--classifier"]))
    def run(lines: list[Any], name: str, flag: str) -> None:
        write_lines(path, [_line(line) for line in lines])
        name = f"{name}-{next(numbers)}" if name == "ok" else name
        before = _step_types_stored()
        refused, stderr = _command("import_step_types", str(path), flag, name)
        _bad_lines_name_their_file(stderr, path)
        if refused is not None:
            assert _step_types_stored() == before, refused

    run()


# --- import_documents and import_bench ---------------------------------------------------------------------

DOCUMENT = mutated(
    st.fixed_dictionaries(
        {
            "id": st.sampled_from(["d-1", "d-2", "d-3"]),
            "text": WORD,
            "url": st.just(""),
            "topic": st.just("Food"),
        }
    ),
    ["id", "text", "url", "topic", "extra"],
)
BENCH = mutated(
    st.fixed_dictionaries(
        {
            "source_example_id": st.sampled_from(["b-1", "b-2", "b-3"]),
            "topic": st.just("Food & Dining"),
            "goal": WORD,
            "steps": st.lists(WORD, min_size=1, max_size=4),
            "resources": st.just([]),
        }
    ),
    ["source_example_id", "topic", "goal", "steps", "resources", "ordered"],
)


def test_import_documents_never_fails_and_never_stores_a_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "documents.jsonl"

    @_settings(60)
    @given(lines=lines_of(DOCUMENT))
    def run(lines: list[Any]) -> None:
        write_lines(path, [_line(line) for line in lines])
        before = SourceDocument.objects.count()
        _, stderr = _command("import_documents", str(path))
        _bad_lines_name_their_file(stderr, path)
        objects = sum(1 for line in lines if isinstance(line, dict))
        assert SourceDocument.objects.count() - before <= objects
        assert not SourceDocument.objects.filter(doc_id="").exists()

    run()


def _bench_stored() -> tuple[int, ...]:
    return (Procedure.objects.count(), Topic.objects.count())


def test_import_bench_never_fails_and_a_rejected_file_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bench.jsonl"

    @_settings(60)
    @given(lines=lines_of(BENCH))
    def run(lines: list[Any]) -> None:
        write_lines(path, [_line(line) for line in lines])
        before = _bench_stored()
        refused, stderr = _command("import_bench", str(path))
        _bad_lines_name_their_file(stderr, path)
        if refused is not None:
            assert _bench_stored() == before, refused

    run()


# --- import_h2e ------------------------------------------------------------------------------------------

FUZZ_GEN = GeneratorSpec("fuzz/Model-1B", "f0f0f0f0f0f0", backend="vllm", provider="local")
GENERATED = st.sampled_from(EXAMPLES[:3])
GENERATION = mutated(
    st.builds(lambda e: generation_record(FUZZ_GEN, e, completion="1. Do.", predicted=["Do."]), GENERATED),
    ["source_example_id", "goal", "steps", "predicted_steps", "model_completion", "topic", "resources",
     "generator_id", "generator", "schema_version"],
)  # fmt: skip
JUDGMENT = mutated(
    st.builds(lambda e: judgment_record(JUDGE_A, e, ["Do."]), GENERATED),
    ["source_example_id", "critical_failures", "has_failure", "n_failures", "parse_failed", "judge_id",
     "predicted_steps", "reasoning"],
)  # fmt: skip


def _fuzz_rows() -> tuple[int, int]:
    """The fuzzed run's generations and judgments."""
    generations = Generation.objects.filter(generator__generator_id=FUZZ_GEN.generator_id)
    return generations.count(), Judgment.objects.filter(generation__in=generations).count()


def test_import_h2e_never_fails_and_a_rejected_file_stores_nothing(tmp_path: Path) -> None:
    call_command("import_h2e", str(build_standard_tree(tmp_path / "good")), verbosity=0)
    numbers = count()

    @_settings(40)
    @given(generations=lines_of(GENERATION), judgments=lines_of(JUDGMENT))
    def run(generations: list[Any], judgments: list[Any]) -> None:
        root = tmp_path / f"fuzz-{next(numbers)}"
        run_dir = write_run(root, FUZZ_GEN, [], {JUDGE_A: []})
        gens = write_lines(run_dir / "generations.jsonl", [_line(line) for line in generations])
        judged = write_lines(
            next((run_dir / "judgments").iterdir()) / "judgments.jsonl", [_line(line) for line in judgments]
        )
        before = _fuzz_rows()
        stored = (CriticalFailure.objects.count(), Topic.objects.count(), Procedure.objects.count())
        _, stderr = _command("import_h2e", str(root))
        for path in (gens, judged):
            _bad_lines_name_their_file(stderr, path)
        after = _fuzz_rows()
        if f"{gens}: REJECTED" in stderr:
            assert after[0] == before[0] and stored[1:] == (Topic.objects.count(), Procedure.objects.count())
        if f"{judged}: REJECTED" in stderr:
            assert after[1] == before[1] and stored[0] == CriticalFailure.objects.count()

    run()


# --- what Hypothesis found, kept as examples ----------------------------------------------------------------

DEEP_LIST = json.loads("[" * 400 + "]" * 400)  # JSON reads it; orjson writes at most 254 levels
COLUMN_EDGES = [
    ("source_example_id", "a\x00", "source_example_id: contains a NUL character"),
    ("source_example_id", "x" * 256, "source_example_id: longer than 255 characters"),
    ("topic", "x" * 201, "topic: longer than 200 characters"),
    ("goal", "a\x00", "goal: contains a NUL character"),
    ("steps", ["a", "b\x00"], "steps[1]: contains a NUL character"),
    # a lone surrogate, written by json.dumps as the escape \ud800 (orjson refuses the line without naming it)
    ("goal", "How to x\ud800y", "goal: contains a lone surrogate (U+D800), which is not text"),
    ("steps", ["a", "b\udc00"], "steps[1]: contains a lone surrogate (U+DC00), which is not text"),
    ("topic", "\udbff", "topic: contains a lone surrogate (U+DBFF), which is not text"),
]


@pytest.mark.parametrize(("field", "value", "reason"), COLUMN_EDGES)
def test_import_bench_refuses_what_a_column_cannot_hold(
    tmp_path: Path, field: str, value: Any, reason: str
) -> None:
    record = {
        "source_example_id": "b-1",
        "topic": "Food & Dining",
        "goal": "G",
        "steps": ["a", "b"],
        field: value,
    }
    path = write_lines(tmp_path / "bench.jsonl", [json.dumps(record)])
    before = _bench_stored()
    refused, stderr = _command("import_bench", str(path))
    assert refused is not None and f"{path}:1: {reason}" in stderr
    assert _bench_stored() == before


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        *COLUMN_EDGES,
        ("extra_field", {"k\x00": 1}, "extra_field: contains a NUL character"),
        ("extra_field", DEEP_LIST, "extra_field: cannot be stored"),
        ("model_completion", "a\x00", "model_completion: contains a NUL character"),
        ("extra_field", {"k\ud800": 1}, "extra_field: contains a lone surrogate (U+D800)"),
        ("model_completion", "x\ud800", "model_completion: contains a lone surrogate (U+D800)"),
    ],
)
def test_import_h2e_refuses_what_a_column_cannot_hold(
    tmp_path: Path, field: str, value: Any, reason: str
) -> None:
    record = generation_record(FUZZ_GEN, EXAMPLES[0], completion="1. Do.", predicted=["Do."]) | {field: value}
    run_dir = write_run(tmp_path / "run", FUZZ_GEN, [], {})
    write_lines(run_dir / "generations.jsonl", [json.dumps(record)])  # a lone surrogate as its escape
    refused, stderr = _command("import_h2e", str(tmp_path / "run"))
    assert refused is not None and f"{run_dir / 'generations.jsonl'}:1: {reason}" in stderr, stderr
    assert not Generation.objects.exists() and not Procedure.objects.exists()


def test_import_h2e_refuses_a_failure_count_past_its_column(tmp_path: Path) -> None:
    generation = generation_record(FUZZ_GEN, EXAMPLES[0], completion="1. Do.", predicted=["Do."])
    judgment = judgment_record(JUDGE_A, EXAMPLES[0], ["Do."], n_failures=2**40)
    run_dir = write_run(tmp_path / "run", FUZZ_GEN, [generation], {JUDGE_A: [judgment]})
    refused, stderr = _command("import_h2e", str(tmp_path / "run"))
    judged = next((run_dir / "judgments").iterdir()) / "judgments.jsonl"
    assert refused is not None and f"{judged}:1: n_failures: expected at most 2147483647" in stderr
    assert not Judgment.objects.exists()


@pytest.mark.parametrize(("field", "value"), [("id", "d\x00"), ("url", "u\x00"), ("topic", "t\x00")])
def test_import_documents_refuses_a_nul_where_it_cannot_be_stored(
    tmp_path: Path, field: str, value: str
) -> None:
    path = write_lines(tmp_path / "docs.jsonl", [json.dumps({"id": "d-1", "text": "T.", field: value})])
    refused, stderr = _command("import_documents", str(path))
    assert refused is not None and f"{path}:1: {field}: contains a NUL character" in stderr
    assert not SourceDocument.objects.exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [("id", "d\ud800"), ("text", "How to x\ud800y"), ("url", "\udfff"), ("topic", "t\ud800"),
     ("source", {"k": ["\ud800"]})],
)  # fmt: skip
def test_import_documents_refuses_a_lone_surrogate_naming_the_field(
    tmp_path: Path, field: str, value: Any
) -> None:
    record = {"id": "d-1", "text": "T.", field: value}
    path = write_lines(
        tmp_path / "docs.jsonl", [json.dumps({"id": "d-0", "text": "Fine."}), json.dumps(record)]
    )
    refused, stderr = _command("import_documents", str(path))
    assert refused is not None and f"{path}:2: {field}: contains a lone surrogate (U+D" in stderr, stderr
    assert list(SourceDocument.objects.values_list("doc_id", flat=True)) == ["d-0"]


def test_an_upload_through_the_api_is_refused_naming_the_line_and_field(
    boss: Client, settings: Any, tmp_path: Path
) -> None:
    """Uploads (the API's and the admin's "Import h2e files": one import job) read files as commands do."""
    settings.VAR_DIR = tmp_path
    record = {"source_example_id": "b-1", "topic": "T", "goal": "How to x\ud800y", "steps": ["a", "b"]}
    upload = SimpleUploadedFile("bench.jsonl", (json.dumps(record) + "\n").encode())
    response = boss.post("/api/imports/", {"files": [upload], "kind": "bench"})
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    import_job_run(job=job)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "bench.jsonl:1: goal: contains a lone surrogate (U+D800), which is not text" in job.error
    assert not Procedure.objects.exists()
