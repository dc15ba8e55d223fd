"""Writing training-data rows (How2Train, judge SFT) as JSONL or Parquet, a chunk at a time.

JSONL: one `json.dumps(row, ensure_ascii=False)` a line, UTF-8. Parquet: the columns given by the caller
(`Columns`: name and type, so an empty export still has its columns), one row group per chunk of rows;
pyarrow is imported when a Parquet file is written, not when the app loads (tests/test_startup.py). Either
way the file is written beside the target as `<name>.part` and renamed onto it when complete, so a failed
export never leaves a half-written file under the name asked for.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pyarrow as pa

FileFormat = Literal["jsonl", "parquet"]
FILE_FORMATS: tuple[str, ...] = ("jsonl", "parquet")
CHUNK = 2000

Row = dict[str, Any]
Progress = Callable[[int], None]  # n rows written since the last call
# strings: a list of strings; messages: chat turns ({role, content})
ColumnType = Literal["string", "int64", "bool", "strings", "messages"]
Columns = tuple[tuple[str, ColumnType], ...]


def arrow_schema(columns: Columns) -> pa.Schema:
    """The Parquet schema of `columns` (messages: a list of {role, content})."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "bool": pa.bool_(),
        "strings": pa.list_(pa.string()),
        "messages": pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])),
    }
    return pa.schema([(name, types[kind]) for name, kind in columns])


def file_format_for(path: Path, given: str | None) -> FileFormat:
    """The format asked for, else the one the file name says (.parquet), else JSONL."""
    if given is None:
        return "parquet" if path.suffix == ".parquet" else "jsonl"
    if given not in FILE_FORMATS:
        raise ValueError(f"format: {given!r} is not one of {', '.join(FILE_FORMATS)}")
    return "parquet" if given == "parquet" else "jsonl"


def rows_write(
    *,
    path: Path,
    file_format: FileFormat,
    columns: Columns,
    rows: Iterable[Row],
    progress: Progress | None = None,
) -> int:
    """Write `rows` to `path`; the number written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    write = _parquet if file_format == "parquet" else _jsonl
    try:
        n = write(part, columns, _chunks(rows), progress or (lambda n: None))
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, path)
    return n


def _chunks(rows: Iterable[Row]) -> Iterator[list[Row]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, CHUNK)):
        yield chunk


def _jsonl(part: Path, columns: Columns, chunks: Iterator[list[Row]], progress: Progress) -> int:
    n = 0
    with part.open("w", encoding="utf-8", newline="\n") as out:
        for chunk in chunks:
            out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in chunk)
            n += len(chunk)
            progress(len(chunk))
    return n


def _parquet(part: Path, columns: Columns, chunks: Iterator[list[Row]], progress: Progress) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(columns)
    n = 0
    with pq.ParquetWriter(part, schema) as writer:
        for chunk in chunks:
            writer.write_table(pa.Table.from_pylist(chunk, schema=schema))
            n += len(chunk)
            progress(len(chunk))
    return n
