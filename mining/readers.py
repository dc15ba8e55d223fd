"""Streaming record readers for the file kinds researchers exchange: JSON lines, CSV, Parquet, Arrow IPC.

Every reader yields `Record(line, data)` for each record and `ReadError(path, line, field, reason)` for a
line it cannot read, and carries on with the next one; files are never read whole. Like the reference
`iter_jsonl`, a `.json` file is read as JSON lines and blank lines are skipped (but a malformed line or a
line that is not a JSON object is reported, not silently dropped). `.zst`, `.gz`, `.bz2` and `.xz`
compression is undone on the fly. Line numbers are 1-based physical lines (JSON lines, CSV) or row numbers
(Parquet, Arrow).
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

import orjson

COMPRESSIONS = {".zst": "zst", ".gz": "gz", ".bz2": "bz2", ".xz": "xz", ".lzma": "xz"}
FORMATS = {
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "arrow",
    ".feather": "arrow",
    ".ipc": "arrow",
}
# CSV cells holding lists or objects, written as JSON text.
JSON_COLUMNS = frozenset(
    {"steps", "resources", "predicted_steps", "critical_failures", "final_procedure", "source_example"}
)
_BATCH_ROWS = 2048


@dataclass(frozen=True)
class Record:
    line: int
    data: dict[str, Any]


@dataclass(frozen=True)
class ReadError:
    path: str
    line: int
    field: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}"
        return f"{where}: {self.field}: {self.reason}" if self.field else f"{where}: {self.reason}"


Item = Record | ReadError


def compression_of(path: Path) -> str:
    return COMPRESSIONS.get(path.suffix.lower(), "none")


def format_of(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in COMPRESSIONS:
        suffixes = suffixes[:-1]
    return FORMATS.get(suffixes[-1], "jsonl") if suffixes else "jsonl"


def open_binary(path: Path) -> BinaryIO:
    """A buffered binary stream of the file's decompressed bytes."""
    kind = compression_of(path)
    if kind == "gz":
        return cast(BinaryIO, gzip.open(path, "rb"))
    if kind == "bz2":
        return cast(BinaryIO, bz2.open(path, "rb"))
    if kind == "xz":
        return cast(BinaryIO, lzma.open(path, "rb"))
    if kind == "zst":
        import zstandard

        raw = path.open("rb")
        reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
        return cast(BinaryIO, io.BufferedReader(reader, buffer_size=1 << 20))  # type: ignore[arg-type]
    return path.open("rb", buffering=1 << 20)


def iter_records(path: Path) -> Iterator[Item]:
    """Records of any supported file, chosen by its suffixes."""
    kind = format_of(path)
    try:
        if kind == "csv":
            yield from _iter_csv(path)
        elif kind in {"parquet", "arrow"}:
            yield from _iter_columnar(path, kind)
        else:
            yield from iter_jsonl(path)
    except FileNotFoundError:
        yield ReadError(str(path), 0, "", "file not found")
    except PermissionError:
        yield ReadError(str(path), 0, "", "file not readable (permission denied)")


def iter_jsonl(path: Path) -> Iterator[Item]:
    """JSON lines, decompressed on the fly; a file that cannot be decompressed ends with one ReadError."""
    line_no = 0
    with open_binary(path) as stream:
        lines = iter(stream)
        while True:
            try:
                raw = next(lines)
            except StopIteration:
                return
            except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
                yield ReadError(str(path), line_no + 1, "", f"cannot read or decompress the file: {exc}")
                return
            except Exception as exc:  # zstandard.ZstdError has no common base we can import lazily
                yield ReadError(str(path), line_no + 1, "", f"cannot read or decompress the file: {exc}")
                return
            line_no += 1
            yield from _parse_json_line(path, line_no, raw)


def _parse_json_line(path: Path, line_no: int, raw: bytes) -> Iterator[Item]:
    if not raw.strip():
        return
    try:
        obj = json_loads(raw)
    except ValueError as exc:
        yield ReadError(str(path), line_no, "", f"malformed JSON ({exc})")
        return
    if not isinstance(obj, dict):
        yield ReadError(str(path), line_no, "", f"expected a JSON object, got {type(obj).__name__}")
        return
    yield Record(line_no, obj)


def json_loads(raw: bytes | str) -> Any:
    """One JSON value (orjson). A text with a lone surrogate escape (\\ud800 without its pair), which orjson
    refuses without saying where, is read by the standard library's parser, which keeps the surrogate in
    its string: the importer's validation then refuses the record naming the field
    (h2e_site.inputs.text_problem). ValueError when it is not JSON."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "surrogate" not in str(exc):
            raise
        try:
            return json.loads(raw, parse_constant=_not_json)
        except RecursionError:
            raise ValueError(f"{exc}; nested too deeply") from None


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _iter_csv(path: Path) -> Iterator[Item]:
    with open_binary(path) as binary, io.TextIOWrapper(binary, encoding="utf-8", newline="") as text:
        reader = csv.DictReader(text)
        try:
            for row in reader:
                yield _csv_record(path, reader.line_num, row)
        except (OSError, EOFError, UnicodeDecodeError, csv.Error, ValueError) as exc:
            yield ReadError(str(path), reader.line_num + 1, "", f"cannot read the file: {exc}")
        except Exception as exc:  # zstandard errors
            yield ReadError(str(path), reader.line_num + 1, "", f"cannot read or decompress the file: {exc}")


def _csv_record(path: Path, line_no: int, row: dict[str | None, Any]) -> Item:
    data: dict[str, Any] = {}
    for key, value in row.items():
        if key is None:
            return ReadError(str(path), line_no, "", "more cells than header columns")
        if key in JSON_COLUMNS and isinstance(value, str):
            value = value.strip()
            if not value:
                value = [] if key != "final_procedure" and key != "source_example" else {}
            else:
                try:
                    value = json_loads(value)
                except ValueError:
                    return ReadError(str(path), line_no, key, "expected a JSON list in this CSV cell")
        data[key] = "" if value is None else value
    return Record(line_no, data)


def _iter_columnar(path: Path, kind: str) -> Iterator[Item]:
    if compression_of(path) != "none":
        yield ReadError(str(path), 0, "", f"compressed {kind} files are not supported: decompress it first")
        return
    try:
        batches = _parquet_batches(path) if kind == "parquet" else _arrow_batches(path)
        row = 0
        for batch in batches:
            for data in batch.to_pylist():
                row += 1
                yield Record(row, data)
    except (OSError, ValueError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        yield ReadError(str(path), 0, "", f"cannot read the {kind} file: {exc}")


def _parquet_batches(path: Path) -> Iterator[Any]:
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as parquet:
        yield from parquet.iter_batches(batch_size=_BATCH_ROWS)


def _arrow_batches(path: Path) -> Iterator[Any]:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    with pa.memory_map(str(path), "r") as source:
        try:
            file_reader = ipc.open_file(source)
        except pa.ArrowInvalid:
            source.seek(0)
            yield from ipc.open_stream(source)
            return
        for i in range(file_reader.num_record_batches):
            yield file_reader.get_batch(i)
