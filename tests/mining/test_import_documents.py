"""import_documents: every file kind, custom field names, idempotent, bad records named by file:line."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from mining.documents import DocumentFields, documents_import
from mining.models import SourceDocument
from tests.mining.conftest import write_file

pytestmark = pytest.mark.django_db

DOCS: list[dict[str, Any]] = [
    {
        "id": "doc-1",
        "text": "How to repot a plant. First water it.",
        "url": "https://a.example/1",
        "topic": "Home & Hobbies",
    },
    {
        "id": "doc-2",
        "text": "Boil water at altitude: 中文 ok 🏔.",
        "url": "https://a.example/2",
        "topic": "Health",
        "lang": "en",
    },
    {"id": "doc-3", "text": "Sharpen a knife on a whetstone.", "url": "", "topic": ""},
]


@pytest.mark.parametrize("kind", ["jsonl", "jsonl.zst", "jsonl.gz", "parquet", "arrow", "arrows", "csv"])
def test_it_imports_every_file_kind(tmp_path: Path, kind: str) -> None:
    path = write_file(
        kind,
        tmp_path,
        DOCS if kind != "csv" else [{k: d[k] for k in ("id", "text", "url", "topic")} for d in DOCS],
    )
    report = documents_import(paths=[path])
    assert report.ok and report.n_errors == 0
    assert report.files[0].created == 3
    doc = SourceDocument.objects.get(doc_id="doc-2")
    assert (doc.text, doc.url, doc.topic and doc.topic.name) == (DOCS[1]["text"], DOCS[1]["url"], "Health")
    assert SourceDocument.objects.get(doc_id="doc-3").topic is None


def test_it_is_idempotent_and_never_overwrites(tmp_path: Path) -> None:
    path = write_file("jsonl", tmp_path, DOCS)
    documents_import(paths=[path])
    again = documents_import(paths=[path])
    assert (again.files[0].created, again.files[0].unchanged) == (0, 3)
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps({**DOCS[0], "text": "Another text"}) + "\n")
    report = documents_import(paths=[changed])
    assert report.files[0].conflicts == [
        f"{changed}:1: 'doc-1' is already stored with a different text; not overwritten"
    ]
    assert SourceDocument.objects.get(doc_id="doc-1").text == DOCS[0]["text"]
    assert SourceDocument.objects.count() == 3


def test_it_reads_custom_and_nested_fields(tmp_path: Path) -> None:
    records = [
        {
            "source_example": {"id": 17, "text": "Fold a paper crane."},
            "link": "https://b.example",
            "cat": "Art & Design",
        }
    ]
    path = write_file("jsonl", tmp_path, records)
    fields = DocumentFields(id="source_example.id", text="source_example.text", url="link", topic="cat")
    documents_import(paths=[path], fields=fields)
    doc = SourceDocument.objects.get()
    assert (doc.doc_id, doc.text, doc.url, doc.topic and doc.topic.name) == (
        "17",
        "Fold a paper crane.",
        "https://b.example",
        "Art & Design",
    )


def test_it_names_bad_records_by_file_line_and_field_and_keeps_the_good_ones(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    lines = [
        json.dumps(DOCS[0]),
        json.dumps({"id": "x", "text": ""}),
        "{not json",
        json.dumps({"text": "no id"}),
        json.dumps({"id": "y", "text": "ok", "url": 5}),
        json.dumps(DOCS[1]),
    ]
    path.write_text("\n".join(lines) + "\n")
    err = StringIO()
    with pytest.raises(CommandError, match="4 bad record"):
        call_command("import_documents", str(path), stdout=StringIO(), stderr=err, verbosity=0)
    assert f"{path}:2: text: missing or empty" in err.getvalue()
    assert f"{path}:3: malformed JSON" in err.getvalue()
    assert f"{path}:4: id: missing or empty" in err.getvalue()
    assert f"{path}:5: url: expected a string, got int" in err.getvalue()
    assert set(SourceDocument.objects.values_list("doc_id", flat=True)) == {"doc-1", "doc-2"}


def test_it_imports_with_the_command_and_field_options(tmp_path: Path) -> None:
    path = write_file("jsonl", tmp_path, [{"doc": "a", "body": "Some text"}])
    out = StringIO()
    call_command(
        "import_documents", str(path), "--id-field", "doc", "--text-field", "body", stdout=out, verbosity=0
    )
    assert "1 created" in out.getvalue()
    assert SourceDocument.objects.get().extra == {}
