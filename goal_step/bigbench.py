"""Goal-step examples to and from BIG-bench's JSON task format, multiple-choice kind.

A task file is one object: "name", "description", "keywords" (a list of strings), "metrics" and
"preferred_score" ("multiple_choice_grade": the share of examples whose highest-scored candidate is a 1),
and "examples", each {"input": str, "target_scores": {candidate: score}}. Our examples have exactly one
correct candidate, so every score is 0 or 1 and exactly one is 1; the candidates keep their order (JSON
objects are ordered) and must be distinct (they are keys).

The input states the question, so the file can be used zero-shot: "Goal: <goal>\\nWhich step helps achieve
this goal?" (Step Inference), "Step: <step>\\nWhich goal does this step help achieve?" (Goal Inference),
"Goal: <goal>\\nWhich of these steps comes first?" (Step Ordering). Import reads the task and prompt back from
these; an input in another shape is kept whole as the prompt, with the file's name as the task. Only what the
format carries survives a round trip: task, prompt, candidates and answer (not source_pk or meta).

Import streams the file (ijson's events; BigBenchReader), never reading it whole, within bounds of size,
nesting, examples, candidates (MAX_CANDIDATES: options are lettered A to Z) and text length, and refuses a
malformed file with BigBenchFormatError (a ValueError) naming where: `examples[3].input: contains the control
character NUL`; a lone surrogate escape (\\ud800, which ijson's C parser would read as "?") is refused naming
its example and field too (the file is then read again by the pure-Python parser to find it). Also refused:
a key given twice, an empty or blank candidate, two candidates of the same text,
the same example (input and candidates) twice.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import ijson

from h2e_site.inputs import text_problem

from .examples import GOAL_INFERENCE, STEP_INFERENCE, STEP_ORDERING, Example
from .options import MAX_CANDIDATES

METRIC = "multiple_choice_grade"
TEMPLATES: dict[str, tuple[str, str]] = {
    STEP_INFERENCE: ("Goal: ", "\nWhich step helps achieve this goal?"),
    GOAL_INFERENCE: ("Step: ", "\nWhich goal does this step help achieve?"),
    STEP_ORDERING: ("Goal: ", "\nWhich of these steps comes first?"),
}
DESCRIPTIONS = {
    STEP_INFERENCE: "Given a goal, choose the step that helps achieve it (Zhang, Lyu & Callison-Burch 2020).",
    GOAL_INFERENCE: "Given a step, choose the goal it helps achieve (Zhang, Lyu & Callison-Burch 2020).",
    STEP_ORDERING: "Given a goal and two of its steps, choose the one that comes first "
    "(Zhang, Lyu & Callison-Burch 2020).",
}
KEYWORDS = ["common sense", "multiple choice", "zero-shot"]
MAX_FILE_BYTES = 512 * 2**20
MAX_DEPTH = 16  # the task is 4 deep (task, examples, example, target_scores); room for fields we ignore
MAX_EXAMPLES = 200_000
MAX_TEXT_CHARS = 50_000  # an input, a candidate, the name, the description, a keyword
MAX_KEYWORDS = 100
# Unicode's control characters (category Cc: U+0000-001F, U+007F-009F) but tab, newline and carriage return,
# and lone surrogates (Cs), which no text column can hold
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


class BigBenchFormatError(ValueError):
    """A BIG-bench file that is not a valid multiple-choice task; the message says where."""


@dataclass
class BigBenchTask:
    name: str
    description: str
    keywords: list[str]
    examples: list[Example] = field(default_factory=list)


def example_input(example: Example) -> str:
    prefix, question = TEMPLATES.get(example.task, ("", ""))
    return prefix + example.prompt + question


def export_bigbench(
    examples: Sequence[Example],
    *,
    name: str,
    description: str | None = None,
    keywords: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The task as a JSON-ready dict. ValueError if an example has repeated candidates or a bad answer."""
    rows = []
    for number, example in enumerate(examples):
        if len(set(example.candidates)) != len(example.candidates):
            raise ValueError(f"examples[{number}]: repeated candidates cannot be target_scores keys")
        if not 0 <= example.answer < len(example.candidates):
            raise ValueError(f"examples[{number}]: answer {example.answer} is not a candidate's position")
        rows.append(
            {
                "input": example_input(example),
                "target_scores": {c: int(i == example.answer) for i, c in enumerate(example.candidates)},
            }
        )
    return {
        "name": name,
        "description": description if description is not None else DESCRIPTIONS.get(name, name),
        "keywords": list(keywords if keywords is not None else KEYWORDS),
        "metrics": [METRIC],
        "preferred_score": METRIC,
        "examples": rows,
    }


def dumps_bigbench(examples: Sequence[Example], **task: Any) -> str:
    return json.dumps(export_bigbench(examples, **task), ensure_ascii=False, indent=2) + "\n"


class _Object(dict[str, Any]):
    """A JSON object that remembers keys it saw twice (a dict would keep the last silently)."""

    repeated: list[str]


def import_bigbench(source: str | bytes | Mapping[str, Any]) -> BigBenchTask:
    """A BIG-bench multiple-choice task file (its text, or the parsed object) as our examples, read through
    BigBenchReader: BigBenchFormatError naming where when it is not a valid task."""
    if isinstance(source, Mapping):
        data = json.dumps(source).encode()
    elif isinstance(source, str):
        data = source.encode("utf-8", "surrogatepass")  # a lone surrogate is then invalid UTF-8: refused
    else:
        data = source
    reader = BigBenchReader(io.BytesIO(data))
    examples = list(reader.examples())
    task = reader.task
    for example in examples:
        example.task = example.task or task.name
    task.examples = examples
    return task


class BigBenchReader:
    """Reads a task file from a binary stream, never whole: iterate examples() (each is checked as it is
    read; an input in none of the three tasks' shapes gets task "", meaning the file's name), then `task`
    holds the name, description and keywords (its `examples` stay empty).

    Bounded: at most MAX_FILE_BYTES read, MAX_DEPTH levels of nesting, MAX_EXAMPLES examples, MAX_CANDIDATES
    candidates an example (options are lettered A to Z), MAX_TEXT_CHARS a text. Refused with
    BigBenchFormatError naming the example and field: malformed JSON, a key given twice, a NUL or another
    control character in a text, an empty candidate, the same example twice."""

    def __init__(self, stream: BinaryIO, *, backend: Any = ijson) -> None:
        self._events = _Events(stream, backend=backend)
        self._header: dict[str, Any] = {}
        self.task = BigBenchTask(name="", description="", keywords=[])
        self.n_examples = 0

    def examples(self) -> Iterator[Example]:
        events = self._events
        event, value = events.next()
        if event != "start_map":
            got = "a list" if event == "start_array" else _kind(value)
            raise BigBenchFormatError(f"the task must be a JSON object, got {got}")
        while True:
            event, key = events.next()
            if event == "end_map":
                break
            if key in self._header:
                raise BigBenchFormatError(f"{_where('', key)}: given twice in the task")
            event, value = events.next()
            if key == "examples":
                self._header[key] = True
                yield from self._examples(event, value)
            else:
                events.where = _where("", key)
                self._header[key] = _value(events, event, value, 1)
                _header_field(key, self._header[key])
                events.where = "the task"
        events.end()
        for key in ("name", "description", "keywords", "examples"):
            if key not in self._header:
                _header_field(key, None)
        header = self._header
        self.task = BigBenchTask(header["name"], header["description"], header["keywords"])

    def _examples(self, event: str, value: Any) -> Iterator[Example]:
        if event != "start_array":
            self._events.where = "examples"
            data = _value(self._events, event, value, 1)
            raise BigBenchFormatError(f"examples: expected a non-empty list, got {_kind(data)}")
        seen: dict[bytes, int] = {}
        while True:
            event, value = self._events.next()
            if event == "end_array":
                break
            where = f"examples[{self.n_examples}]"
            if self.n_examples >= MAX_EXAMPLES:
                raise BigBenchFormatError(f"{where}: a task has at most {MAX_EXAMPLES} examples")
            self._events.where = where
            example = _example(_value(self._events, event, value, 2), where)
            digest = _identity(example)
            if digest in seen:
                raise BigBenchFormatError(
                    f"{where}: the same input and candidates as examples[{seen[digest]}]"
                )
            seen[digest] = self.n_examples
            self.n_examples += 1
            yield example
        self._events.where = "the task"
        if not self.n_examples:
            raise BigBenchFormatError("examples: expected a non-empty list, got a list with no example")


class _Bounded:
    """The stream (what ijson reads: read() only), refused once more than MAX_FILE_BYTES have been read, and
    watched for lone surrogate escapes (_Surrogates), which ijson's C parser would read as "?"."""

    def __init__(self, stream: BinaryIO, *, watch: bool = True) -> None:
        self._stream = stream
        self.n_read = 0
        self.surrogates = _Surrogates() if watch else None

    def read(self, size: int = -1) -> bytes:
        chunk = self._stream.read(size if size is not None and size >= 0 else 1 << 16)
        self.n_read += len(chunk)
        if self.n_read > MAX_FILE_BYTES:
            raise BigBenchFormatError(f"the file is larger than {MAX_FILE_BYTES // 2**20} MiB")
        if self.surrogates is not None:
            self.surrogates.feed(chunk)
        return chunk


_ESCAPE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|[^u])")  # one JSON escape: \uXXXX, or a backslash and a char


class _LoneSurrogate(Exception):
    """A lone surrogate escape in the bytes read (at `offset`): the reading starts again to say where."""

    def __init__(self, escape: str, offset: int) -> None:
        super().__init__(escape, offset)
        self.escape, self.offset = escape, offset


class _Surrogates:
    """Finds a lone surrogate escape in JSON bytes fed a chunk at a time: a \\uD800-\\uDBFF escape not
    followed at once by a \\uDC00-\\uDFFF one, or the latter alone (_LoneSurrogate). Escapes are read in
    order (an escaped backslash is one escape, so `\\\\ud800` is text); an escape cut by a chunk's end is
    kept for the next chunk (at most 5 bytes)."""

    def __init__(self) -> None:
        self._carry = b""
        self._base = 0  # the offset of _carry's first byte
        self._high: tuple[int, str] | None = None  # (end offset, escape) of a high surrogate not yet paired

    def feed(self, chunk: bytes) -> None:
        data, base = self._carry + chunk, self._base
        end = 0
        for match in _ESCAPE.finditer(data):
            self._escape(match, base)
            end = match.end()
        if not chunk:  # the end of the file: a high surrogate still waiting is alone
            self._unpaired()
            return
        cut = data.rfind(b"\\", end)
        cut = cut if cut >= 0 and len(data) - cut < 6 else len(data)
        if self._high is not None and self._high[0] < base + cut:
            self._unpaired()  # text, not an escape, right after a high surrogate
        self._carry, self._base = data[cut:], base + cut

    def _escape(self, match: re.Match[bytes], base: int) -> None:
        start = base + match.start()
        hex_code = match.group(1)
        code = int(hex_code, 16) if hex_code is not None else -1
        if self._high is not None:
            if start != self._high[0] or not 0xDC00 <= code <= 0xDFFF:
                self._unpaired()
            self._high = None
            return
        if 0xD800 <= code <= 0xDBFF:
            self._high = (base + match.end(), "\\u" + hex_code.decode().lower())
        elif 0xDC00 <= code <= 0xDFFF:
            raise _LoneSurrogate("\\u" + hex_code.decode().lower(), start)

    def _unpaired(self) -> None:
        if self._high is not None:
            end, escape = self._high
            raise _LoneSurrogate(escape, end - 6)


class _Events:
    """ijson's events of the stream; JSON errors as BigBenchFormatError saying where the reading was. ijson's
    C parser reads a lone surrogate escape as "?": _Bounded watches for one, and the refusal then names the
    example and field that hold it (_located)."""

    def __init__(self, stream: BinaryIO, *, backend: Any = ijson) -> None:
        self._stream = stream
        self._events = backend.basic_parse(_Bounded(stream, watch=backend is ijson), use_float=True)
        self.where = "the task"

    def next(self) -> tuple[str, Any]:
        try:
            return next(self._events)
        except StopIteration:
            raise BigBenchFormatError(f"not valid JSON: the file ends in {self.where}") from None
        except (ijson.JSONError, UnicodeDecodeError) as exc:
            raise BigBenchFormatError(f"not valid JSON in {self.where}: {_one_line(exc)}") from None
        except _LoneSurrogate as lone:
            raise _located(self._stream, lone) from None

    def end(self) -> None:
        """The file holds nothing after the task."""
        try:
            extra = next(self._events, None)
        except (ijson.JSONError, UnicodeDecodeError) as exc:
            raise BigBenchFormatError(f"not valid JSON after the task: {_one_line(exc)}") from None
        except _LoneSurrogate as lone:
            raise _located(self._stream, lone) from None
        if extra is not None:
            raise BigBenchFormatError("not valid JSON: more than one value in the file")


def _located(stream: BinaryIO, lone: _LoneSurrogate) -> BigBenchFormatError:
    """The refusal of a file with a lone surrogate escape, naming the example and field that hold it: the
    file read again from its start by ijson's pure-Python parser (slower, but it keeps the surrogate in its
    string, which the checks of each text then refuse), or, for a surrogate in a field no check reads or a
    stream that cannot go back, its byte offset."""
    at_byte = BigBenchFormatError(
        f"not valid text: a lone surrogate escape ({lone.escape}) at byte {lone.offset}"
    )
    try:
        stream.seek(0)
    except (AttributeError, OSError, ValueError):
        return at_byte
    reader = BigBenchReader(stream, backend=ijson.get_backend("python"))
    try:
        for _ in reader.examples():
            pass
    except BigBenchFormatError as found:
        return found
    return at_byte


def _value(events: _Events, event: str, value: Any, depth: int) -> Any:
    """The JSON value that starts with (event, value), read to its end; at most MAX_DEPTH levels deep (the
    refusal names events.where, the field or example being read)."""
    if event not in {"start_map", "start_array"}:
        return value
    if depth >= MAX_DEPTH:
        raise BigBenchFormatError(f"{events.where}: nested deeper than {MAX_DEPTH} levels")
    if event == "start_array":
        items: list[Any] = []
        while (item := events.next())[0] != "end_array":
            items.append(_value(events, *item, depth + 1))
        return items
    result = _Object()
    result.repeated = []
    while (item := events.next())[0] != "end_map":
        key = item[1]
        if key in result:
            result.repeated.append(key)
        result[key] = _value(events, *events.next(), depth + 1)
    return result


def _header_field(key: str, value: Any) -> None:
    """A top-level field checked as soon as it is read (None: missing)."""
    if key == "name":
        _text(value, "name", allow_empty=False)
    elif key == "description":
        _text(value, "description", allow_empty=True)
    elif key == "keywords":
        if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
            raise BigBenchFormatError(f"keywords: expected a list of strings, got {_kind(value)}")
        if len(value) > MAX_KEYWORDS:
            raise BigBenchFormatError(f"keywords: expected at most {MAX_KEYWORDS}, got {len(value)}")
        for number, keyword in enumerate(value):
            _text(keyword, f"keywords[{number}]", allow_empty=True)
    elif key == "metrics":
        if not isinstance(value, list) or METRIC not in value:
            raise BigBenchFormatError(
                f"metrics: a multiple-choice task lists {METRIC!r}, got {_shown(value)}"
            )
    elif key == "examples":
        raise BigBenchFormatError(f"examples: expected a non-empty list, got {_kind(value)}")


def _example(row: Any, where: str) -> Example:
    if not isinstance(row, _Object):
        raise BigBenchFormatError(f"{where}: expected an object, got {_kind(row)}")
    if row.repeated:
        raise BigBenchFormatError(f"{_where(where, row.repeated[0])}: given twice in the example")
    text = _text(row.get("input"), f"{where}.input", allow_empty=False)
    scores = row.get("target_scores")
    if not isinstance(scores, _Object):
        raise BigBenchFormatError(f"{where}.target_scores: expected an object, got {_kind(scores)}")
    if scores.repeated:
        raise BigBenchFormatError(f"{where}.target_scores: candidate {scores.repeated[0]!r} appears twice")
    if not 2 <= len(scores) <= MAX_CANDIDATES:
        raise BigBenchFormatError(
            f"{where}.target_scores: expected 2 to {MAX_CANDIDATES} candidates (options are lettered A to "
            f"Z), got {len(scores)}"
        )
    shown: dict[str, str] = {}
    for candidate, score in scores.items():
        problem = _text_problem(candidate, allow_empty=False, what="a candidate")
        if problem is None and shown.setdefault(candidate.strip(), candidate) is not candidate:
            problem = f"the same text as candidate {_shown(shown[candidate.strip()])}"
        if problem is None and (
            isinstance(score, bool) or not isinstance(score, int | float) or score not in (0, 1)
        ):
            problem = f"expected 0 or 1, got {_shown(score)}"
        if problem is not None:
            raise BigBenchFormatError(f"{where}.target_scores[{_shown(candidate)}]: {problem}")
    correct = [i for i, score in enumerate(scores.values()) if score == 1]
    if len(correct) != 1:
        raise BigBenchFormatError(
            f"{where}.target_scores: expected exactly one candidate scored 1, got {len(correct)}"
        )
    task, prompt = _parse_input(text)
    return Example(task=task, prompt=prompt, candidates=list(scores), answer=correct[0])


def _identity(example: Example) -> bytes:
    """What makes two examples the same: their input and their set of candidates (a digest, to keep the
    memory of a long file small)."""
    parts = [example.task, example.prompt, *sorted(c.strip() for c in example.candidates)]
    return hashlib.blake2b("\x00".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _parse_input(text: str) -> tuple[str, str]:
    """(task, prompt) of an input; task "" when it has none of the three tasks' shapes (the file's name is
    then its task, and the whole input its prompt)."""
    for task, (prefix, question) in TEMPLATES.items():
        if text.startswith(prefix) and text.endswith(question) and len(text) > len(prefix) + len(question):
            return task, text[len(prefix) : len(text) - len(question)]
    return "", text


def _text(value: Any, where: str, *, allow_empty: bool) -> str:
    """A text to store, or BigBenchFormatError naming `where` (see _text_problem)."""
    problem = _text_problem(value, allow_empty=allow_empty)
    if problem is not None:
        raise BigBenchFormatError(f"{where}: {problem}")
    return value  # type: ignore[no-any-return]  # a str: _text_problem checked it


def _text_problem(value: Any, *, allow_empty: bool, what: str = "") -> str | None:
    """What is wrong with a text to store (None: nothing): it must be a string, not blank (unless allowed),
    at most MAX_TEXT_CHARS, with no NUL or other control character (tab and newlines are text)."""
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        expected = what or ("a string" if allow_empty else "a non-empty string")
        if what and isinstance(value, str):
            expected += " that is not empty or blank"
        return f"expected {expected}, got {_kind(value)}"
    if len(value) > MAX_TEXT_CHARS:
        return f"longer than {MAX_TEXT_CHARS} characters ({len(value)})"
    found = _CONTROL.search(value)
    if found is not None:
        bad = found.group()
        if "\ud800" <= bad <= "\udfff":
            return text_problem(bad)
        return f"contains the control character {'NUL' if bad == chr(0) else f'U+{ord(bad):04X}'}"
    return None


def _where(where: str, key: Any) -> str:
    key = str(key)
    if key.isidentifier():
        return f"{where}.{key}" if where else key
    return f"{where}[{_shown(key)}]"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _one_line(exc: BaseException) -> str:
    """The parser's message without the snippet and arrow yajl puts on the lines after it."""
    message = exc.args[0] if exc.args else exc
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    return first[:200]


def _kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {_shown(value)}"
    return "an object" if isinstance(value, Mapping) else "a list" if isinstance(value, list) else "a value"
