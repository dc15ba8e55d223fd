"""import_bigbench as a careless staff user runs it (#19 items 2, 6, 11, 12): the file is streamed, never read
whole; every bad file, name or example is refused in one line naming the file, the example and the field, and
nothing is stored, not even the examples of a batch written before the bad one."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import given
from hypothesis import strategies as st

from goal_step.bigbench import _LoneSurrogate, _Surrogates
from goal_step.exports import task_set_import_bigbench
from goal_step.models import TaskExample, TaskSet
from goal_step.names import RESERVED_NAMES
from tests.fuzzing import fuzz_settings

pytestmark = pytest.mark.django_db

QUESTION = "\nWhich step helps achieve this goal?"


def example(goal: str, *candidates: str) -> dict[str, Any]:
    """A step-inference example, the first candidate right."""
    return {
        "input": f"Goal: {goal}{QUESTION}",
        "target_scores": {c: int(i == 0) for i, c in enumerate(candidates)},
    }


def task(*examples: dict[str, Any], **fields: Any) -> dict[str, Any]:
    rows = list(examples) or [example("Bake bread", "Knead", "Swim"), example("Wash a car", "Rinse", "Sing")]
    return {"name": "step_inference", "description": "d", "keywords": [], "examples": rows, **fields}


def run(path: Path, name: str = "pub") -> str:
    """The command's one-line refusal (asserting that it is one line and that nothing is stored)."""
    with pytest.raises(CommandError) as refused:
        call_command("import_bigbench", str(path), "--name", name, "--task", "step_inference", verbosity=0)
    message = str(refused.value)
    assert "\n" not in message and "Traceback" not in message
    assert not TaskSet.objects.exists() and not TaskExample.objects.exists()
    return message


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "task.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (
            task(example("Bake\x00 bread", "Knead", "Swim")),
            "examples[0].input: contains the control character NUL",
        ),
        (
            task(example("Bake bread", "Knead", "Sw\x00im")),
            r"examples[0].target_scores['Sw\x00im']: contains the control character NUL",
        ),
        (task(example("Bake bread", "Knead", "")), "examples[0].target_scores['']: expected a candidate"),
        (task(example("Bake bread", "Knead", "  ")), "examples[0].target_scores['  ']: expected a candidate"),
        (
            task(example("Bake bread", "Knead", "Swim"), example("Bake bread", "Swim", "Knead")),
            "examples[1]: the same input and candidates as examples[0]",
        ),
        (
            task(example("Bake bread", "Knead", "Swim", "Knead ")),
            "examples[0].target_scores['Knead ']: the same text as candidate 'Knead'",
        ),
        (
            task(example("Bake bread", *(f"c{i}" for i in range(40_000)))),
            "examples[0].target_scores: expected 2 to 26 candidates (options are lettered A to Z), got 40000",
        ),
        (
            task(example("Bake bread", *(f"c{i}" for i in range(27)))),
            "examples[0].target_scores: expected 2 to 26 candidates",
        ),
        (task(example("x" * 50_001, "a", "b")), "examples[0].input: longer than 50000 characters"),
        (task(description="a\x00b"), "description: contains the control character NUL"),
        (task(keywords=["ok", "\x07"]), "keywords[1]: contains the control character U+0007"),
        (
            task(examples=[example("Bake bread", "Knead", "Swim"), 7]),
            "examples[1]: expected an object, got the number 7",
        ),
        (task(examples={"input": "q"}), "examples: expected a non-empty list, got an object"),
        ([1, 2], "the task must be a JSON object, got a list"),
        ("", "not valid JSON"),
        ('{"name": "x"} {"name": "y"}', "not valid JSON after the task"),
        ('{"examples": ' + "[" * 200_000 + "]" * 200_000 + "}", "examples[0]: nested deeper than 16 levels"),
        (
            '{"notes": ' + '{"a": ' * 200_000 + "1" + "}" * 200_000 + "}",
            "notes: nested deeper than 16 levels",
        ),
        ("[" * 200_000, "the task must be a JSON object, got a list"),
        (
            '{"name": "n", "examples": [{"input": "a", "input": "b", "target_scores": {"x": 1, "y": 0}}]}',
            "examples[0].input: given twice in the example",
        ),
    ],
)
def test_it_refuses_a_bad_file_in_one_line_naming_the_example_and_field(
    tmp_path: Path, data: Any, where: str
) -> None:
    path = write(tmp_path, data)
    message = run(path)
    assert message.startswith(f"{path}: ") and where in message, message


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (task(example("How to x\ud800y", "a", "b")), "examples[0].input: contains a lone surrogate (U+D800)"),
        (
            task(example("Bake bread", "Knead", "Swim"), example("Bake", "Kn\udc00ead", "Swim")),
            r"examples[1].target_scores['Kn\udc00ead']: contains a lone surrogate (U+DC00)",
        ),
        (
            task(*[example(f"Goal {i}", "a", "b") for i in range(3_000)], example("x\udbff", "a", "b")),
            "examples[3000].input: contains a lone surrogate (U+DBFF), which is not text",
        ),
        (task(notes="\\ok \ud800"), r"not valid text: a lone surrogate escape (\ud800) at byte"),
    ],
)
def test_it_refuses_a_lone_surrogate_naming_the_example_and_field_not_storing_a_question_mark(
    tmp_path: Path, data: Any, where: str
) -> None:
    """ijson's C parser reads \\ud800 as "?" ("How to x?y" was stored): the import finds the escape itself."""
    path = write(tmp_path, data)  # json.dumps writes the surrogate as the escape \ud800
    assert "\\ud" in path.read_text()
    message = run(path)
    assert message.startswith(f"{path}: ") and where in message, message


_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(
            ["\\", "u", "d", "8", "0", "c", '"', "a", "\ud800", "\udbff", "\udc00", "\U0001f600"]
        ),
        st.characters(),
    ),
    max_size=30,
)


@given(texts=st.lists(_TEXT, min_size=1, max_size=4), cut=st.integers(1, 40))
@fuzz_settings(300)
def test_the_scan_finds_a_lone_surrogate_escape_exactly_when_the_json_holds_one(
    texts: list[str], cut: int
) -> None:
    """Against the standard library's parser, which keeps lone surrogates: whatever the chunk size."""
    data = json.dumps(texts).encode()
    holds_one = any("\ud800" <= ch <= "\udfff" for text in json.loads(data) for ch in text)
    scan = _Surrogates()
    try:
        for start in range(0, len(data) + 1, cut):
            scan.feed(data[start : start + cut])
        scan.feed(b"")
    except _LoneSurrogate as lone:
        assert holds_one and data[lone.offset : lone.offset + 6].decode().lower() == lone.escape
    else:
        assert not holds_one


def test_a_surrogate_pair_and_an_escaped_backslash_are_text(tmp_path: Path) -> None:
    path = write(tmp_path, task(example("Smile \U0001f600 at \\ud800", "a", "b"), example("B", "c", "d")))
    call_command("import_bigbench", str(path), "--name", "pub", "--task", "step_inference", verbosity=0)
    assert TaskExample.objects.get(position=0).prompt == "Smile \U0001f600 at \\ud800"


def test_it_stores_nothing_when_the_bad_example_comes_after_a_stored_batch(tmp_path: Path) -> None:
    rows = [example(f"Goal {i}", f"right {i}", f"wrong {i}") for i in range(2_500)]
    rows.append(example("Goal 7", "right 7", "wrong 7"))
    assert "examples[2500]: the same input and candidates as examples[7]" in run(write(tmp_path, task(*rows)))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("x" * 65, "--name: at most 64 characters, got 65"),
        ("build", "--name: 'build' is taken by a page of /tasks/"),
        ("no spaces", "--name: 'no spaces' is not a slug"),
        ("nul\x00", "is not a slug"),
    ],
)
def test_it_refuses_a_name_that_cannot_be_a_task_sets(tmp_path: Path, name: str, message: str) -> None:
    assert message in run(write(tmp_path, task()), name=name)


def test_every_fixed_page_under_tasks_is_a_reserved_name() -> None:
    """A task set's page is /tasks/<name>/: a name equal to another page's segment could never be shown."""
    (mining,) = [
        p for p in get_resolver().url_patterns if isinstance(p, URLResolver) and p.namespace == "mining"
    ]
    fixed = set()
    for pattern in mining.url_patterns:
        assert isinstance(pattern, URLPattern)
        route = str(pattern.pattern)
        if route.startswith("tasks/") and "<" not in route.split("/")[1]:
            fixed.add(route.split("/")[1])
    assert fixed - {""} <= RESERVED_NAMES and "build" in fixed


class Reads(io.BytesIO):
    """A file that records how much each read asks for."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.sizes: list[int] = []

    def read(self, size: int | None = -1) -> bytes:
        self.sizes.append(-1 if size is None else size)
        return super().read(size)


def test_it_streams_the_file_a_chunk_at_a_time() -> None:
    rows = [example(f"Goal {i}", f"right {i}", f"wrong {i}") for i in range(3_000)]
    data = json.dumps(task(*rows)).encode()
    stream = Reads(data)
    task_set = task_set_import_bigbench(source=stream, name="big", task="step_inference")
    assert task_set.examples.count() == 3_000
    assert len(stream.sizes) > 1 and all(0 <= size <= 2**16 for size in stream.sizes), stream.sizes[:5]
    assert max(stream.sizes) < len(data)  # never read whole (-1 or the whole size)


def test_it_reads_the_name_after_the_examples_and_checks_it_then(tmp_path: Path) -> None:
    """The file's name may come last; an input of no task's shape takes it as its task."""
    rows = [{"input": "2 + 2?", "target_scores": {"4": 1, "5": 0}}]
    data = {"examples": rows, "description": "", "keywords": [], "name": "goal_inference"}
    assert (
        "examples[0].input: reads as a goal_inference example (the file's name), not step_inference"
        in run(write(tmp_path, data))
    )
    call_command("import_bigbench", str(write(tmp_path, {**data, "name": "arithmetic"})), "--name", "arith",
                 "--task", "step_inference", verbosity=0)  # fmt: skip
    stored = TaskSet.objects.get(name="arith")
    assert stored.settings["bigbench_name"] == "arithmetic" and stored.examples.get().prompt == "2 + 2?"
