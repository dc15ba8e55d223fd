"""What a browser or a client sends, parsed the one way every view does it: integers as ASCII digits within
a range (a step number, an answer index), text cleaned of NUL and other control characters, a field that takes
one answer sent once. A value that does not parse raises BadInput naming the field and the value, which the
views answer with a 400."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from django.http import QueryDict

_ASCII_DIGITS = re.compile(r"[0-9]{1,9}")  # no sign, no Unicode digits ("²", "٣"), no decimals
_KEPT_CONTROLS = {"\n", "\t"}


class BadInput(ValueError):
    """A field whose value cannot be used; the message names both."""

    def __init__(self, field: str, value: object, expected: str) -> None:
        shown = str(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        super().__init__(f"{field}: {shown!r} is not {expected}")
        self.field = field
        self.value = value
        self.message = str(self)


def ascii_int(field: str, value: str, *, minimum: int, maximum: int, expected: str = "") -> int:
    """`value` as an int written in ASCII digits, minimum <= int <= maximum; else BadInput."""
    text = value.strip()
    expected = expected or f"a whole number from {minimum} to {maximum}"
    if not _ASCII_DIGITS.fullmatch(text):
        raise BadInput(field, value, expected)
    number = int(text)
    if not minimum <= number <= maximum:
        raise BadInput(field, value, expected)
    return number


def ascii_ints(
    field: str, values: Iterable[str], *, minimum: int, maximum: int, expected: str = "", at_most: int = 100
) -> list[int]:
    """Each value parsed by ascii_int (sorted, repeats dropped); more than `at_most` values is BadInput."""
    values = list(values)
    if len(values) > at_most:
        raise BadInput(field, f"{len(values)} values", f"at most {at_most} values")
    return sorted({ascii_int(field, v, minimum=minimum, maximum=maximum, expected=expected) for v in values})


def one_answer(post: QueryDict, name: str) -> str:
    """The value of a form field that takes one answer ("" when it was not sent). Sent more than once, even
    with the same value, it is BadInput: reading the last value would silently drop the others
    (has_failure=yes&has_failure=no would be a "no")."""
    values = post.getlist(name)
    if len(values) > 1:
        raise BadInput(name, ",".join(values)[:80], "one answer (it was sent more than once)")
    return values[0] if values else ""


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def text_problem(value: str) -> str | None:
    """Why an imported text cannot be stored as it is (None: it can), the one check every importer makes of
    each text it stores before refusing the record with it, naming the field: a NUL (PostgreSQL's text
    cannot hold one), or a lone surrogate, U+D800 to U+DFFF (a JSON escape such as \\ud800 without its
    pair: no UTF-8 encodes it, so a database would refuse it or keep "?"). A valid pair is one character
    once parsed, never a surrogate."""
    found = _UNSTORABLE.search(value)
    if found is None:
        return None
    if found.group() == "\x00":
        return "contains a NUL character"
    return f"contains a lone surrogate (U+{ord(found.group()):04X}), which is not text"


def text_problem_inside(value: Any) -> str | None:
    """text_problem of the first string inside a JSON-like value (keys included; walked without recursion)
    that has one, or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        problem = text_problem(item) if isinstance(item, str) else None
        if problem is not None:
            return problem
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def clean_text(value: str) -> str:
    """Text without NUL and other control characters (newlines and tabs kept; CR LF and CR become LF)."""
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(ch for ch in value if ch in _KEPT_CONTROLS or unicodedata.category(ch) not in {"Cc", "Cs"})
