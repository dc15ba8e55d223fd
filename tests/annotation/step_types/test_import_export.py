"""Step-type labels and predictions out and back in: the export's rows, a study exported and imported as a
label set with the same Table 6, idempotent imports, every bad row named as file:line: field: reason, the
command, the prediction downloads (staff only), and arbitrary rows that never crash the importer."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.http import HttpResponseBase
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.base.models import Study
from annotation.kinds.step_types.agreement import label_set_agreement, study_step_types_agreement
from annotation.kinds.step_types.exports import (
    LABEL_FIELDS,
    PREDICTION_FIELDS,
    csv_lines,
    jsonl_lines,
    prediction_rows,
    study_label_rows,
)
from annotation.kinds.step_types.imports import step_type_labels_import, step_type_predictions_import
from annotation.kinds.step_types.measures import TASK_EXPERT
from annotation.kinds.step_types.models import (
    StepTypeClassifier,
    StepTypeLabel,
    StepTypeLabelSet,
    StepTypePrediction,
)
from annotation.kinds.step_types.spec import procedure_candidates
from mining.models import Procedure
from tests.factories import make_procedure, make_user
from tests.fuzzing import fuzz_settings

from .labelled import FOUR_STEPS, pid, table6_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study() -> Study:
    return table6_study()[0]


def body(response: HttpResponseBase) -> bytes:
    if response.streaming:
        return b"".join(response.streaming_content)  # type: ignore[attr-defined]
    return response.content  # type: ignore[attr-defined]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(jsonl_lines(rows)))
    return path


def comparable(result: Any) -> dict[str, Any]:
    """The figures a study and its imported label set must share (a label set has no task-level answers
    and no attention checks)."""
    return {
        "table": {row: cells for row, cells in result.table.items() if row != TASK_EXPERT},
        "columns": result.columns,
        "counts": result.counts,
        "majorities": result.majorities,
        "contradiction": result.contradiction,
        "sizes": (result.n_procedures, result.n_annotators, result.n_labels),
    }


# --- export ----------------------------------------------------------------------------------------------


def test_it_exports_one_row_per_candidate_per_annotator(study: Study) -> None:
    rows = list(study_label_rows(study))
    assert len(rows) == 41 + 14  # the regular items' labels, then the attention check's (A's and B's)
    assert all(list(row) == LABEL_FIELDS for row in rows)
    assert sum(row["is_attention_check"] for row in rows) == 14
    p1 = Procedure.objects.get(source_example_id="table6-p1")
    first = next(r for r in rows if r["annotator"] == pid("A") and r["candidate"] == "sequential:0-1")
    assert {k: v for k, v in first.items() if k != "submitted_at"} == {
        "study": "table6",
        "procedure": p1.pk,
        "source_example_id": "table6-p1",
        "goal": "Bake a cake",
        "topic": "Food",
        "is_attention_check": False,
        "type": "sequential",
        "candidate": "sequential:0-1",
        "anchor": None,
        "first": 0,
        "second": 1,
        "holds": True,
        "expert": True,
        "annotator": pid("A"),
        "task_expert": True,
    }
    optional = next(r for r in rows if r["annotator"] == pid("C") and r["candidate"] == "optional@1:2")
    assert (optional["anchor"], optional["first"], optional["second"], optional["holds"]) == (
        1,
        2,
        None,
        False,
    )


def test_it_writes_csv_with_words_for_booleans_and_formulas_neutralised() -> None:
    rows = [{"goal": '=HYPERLINK("x")', "holds": True, "expert": None, "first": 0}]
    text = "".join(csv_lines(rows, ["goal", "holds", "expert", "first"]))
    assert text.splitlines() == ["goal,holds,expert,first", '"\'=HYPERLINK(""x"")",true,,0']


# --- round trip ---------------------------------------------------------------------------------------------


def test_it_imports_a_study_export_as_a_label_set_with_the_same_table_6(
    study: Study, tmp_path: Path, client: Client
) -> None:
    client.force_login(make_user(is_staff=True))
    path = tmp_path / "table6.jsonl"
    path.write_bytes(body(client.get(reverse("annotation:study_export_jsonl", args=[study.slug]))))
    report = step_type_labels_import(path=path, label_set="ours")
    assert report.ok and report.files[0].created == 41
    assert report.files[0].notes == [f"{path}: 14 attention-check row(s) skipped"]
    imported = label_set_agreement(label_set=StepTypeLabelSet.objects.get(name="ours"))
    original = study_step_types_agreement(study=study)
    assert comparable(imported) == comparable(original)
    assert TASK_EXPERT in original.table and TASK_EXPERT not in imported.table
    assert StepTypeLabelSet.objects.get(name="ours").source_file == "table6.jsonl"
    page = client.get(reverse("agreement:step_types_label_set", args=["ours"])).content.decode()
    assert "-0.16" in page and "Task-level expert" not in page  # sequential, All: -7/44


def test_it_round_trips_through_csv_even_with_formula_like_identifiers(
    tmp_path: Path, client: Client
) -> None:
    study, _ = table6_study(slug="-csv")  # source_example_ids "-csv-p1", "-csv-p2": neutralised in CSV
    client.force_login(make_user(is_staff=True))
    text = body(client.get(reverse("annotation:study_export_csv", args=[study.slug]))).decode()
    assert "'-csv-p1" in text
    path = tmp_path / "labels.csv"
    path.write_text(text, encoding="utf-8")
    report = step_type_labels_import(path=path, label_set="from-csv")
    assert report.ok, report.error_lines()
    imported = label_set_agreement(label_set=StepTypeLabelSet.objects.get(name="from-csv"))
    assert comparable(imported) == comparable(study_step_types_agreement(study=study))


def test_it_changes_nothing_when_the_same_file_is_imported_twice(study: Study, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "labels.jsonl", list(study_label_rows(study)))
    step_type_labels_import(path=path, label_set="twice")
    stored = list(StepTypeLabel.objects.filter(label_set__name="twice").values_list("pk", "holds", "expert"))
    again = step_type_labels_import(path=path, label_set="twice").files[0]
    assert (again.imported, again.created, again.unchanged, again.conflicts) == (True, 0, 41, [])
    assert (
        list(StepTypeLabel.objects.filter(label_set__name="twice").values_list("pk", "holds", "expert"))
        == stored
    )


def test_it_never_overwrites_a_stored_label_with_a_different_one(study: Study, tmp_path: Path) -> None:
    rows = [r for r in study_label_rows(study) if not r["is_attention_check"]]
    step_type_labels_import(path=write_jsonl(tmp_path / "a.jsonl", rows), label_set="kept")
    rows[0] = {**rows[0], "holds": not rows[0]["holds"]}
    report = step_type_labels_import(path=write_jsonl(tmp_path / "b.jsonl", rows), label_set="kept").files[0]
    assert report.created == 0 and report.unchanged == 40
    assert len(report.conflicts) == 1 and report.conflicts[0].startswith(f"{tmp_path / 'b.jsonl'}:1: holds: ")
    label = StepTypeLabel.objects.get(
        label_set__name="kept", annotator=rows[0]["annotator"], candidate__key=rows[0]["candidate"],
        candidate__procedure_id=rows[0]["procedure"],
    )  # fmt: skip
    assert label.holds is not rows[0]["holds"]


# --- bad rows ---------------------------------------------------------------------------------------------


def label_row(**fields: Any) -> dict[str, Any]:
    return {
        "source_example_id": "bad-p",
        "candidate": "sequential:0-1",
        "annotator": "ann-1",
        "holds": True,
    } | fields


@pytest.fixture
def procedure() -> Procedure:
    return make_procedure(goal="Bake", steps=FOUR_STEPS, topic="Food", source_example_id="bad-p")


def bad_file(tmp_path: Path, procedure: Procedure) -> Path:
    lines = [
        label_row(),  # 1 good
        label_row(source_example_id="nope"),  # 2
        label_row(candidate="sequential:1-3"),  # 3 malformed key
        label_row(candidate="sequential:3-4"),  # 4 not a candidate of a 4-step procedure
        label_row(holds="maybe"),  # 5
        label_row(holds=False),  # 6 the same annotator and candidate as line 1
        None,  # 7 malformed JSON
        {
            "procedure": procedure.pk,
            "type": "optional",
            "anchor": 1,
            "first": 2,
            "annotator": "a",
            "holds": False,
        },
        label_row(candidate="sequential:1-2", first=2),  # 9 the indices disagree with the key
        label_row(annotator=""),  # 10
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join("{oops" if line is None else json.dumps(line) for line in lines) + "\n")
    return path


def test_it_names_every_bad_row_by_file_line_and_field(tmp_path: Path, procedure: Procedure) -> None:
    path = bad_file(tmp_path, procedure)
    report = step_type_labels_import(path=path, label_set="bad")
    errors = report.error_lines()
    expected = [  # in line order, each error's beginning
        f"{path}:2: source_example_id: no procedure with source_example_id 'nope'",
        f"{path}:3: candidate: malformed key 'sequential:1-3'",
        f"{path}:4: candidate: 'sequential:3-4' is not a candidate of a 4-step procedure",
        f"{path}:5: holds: expected true or false, got 'maybe'",
        f"{path}:6: annotator: 'ann-1' on sequential:0-1 of procedure 'bad-p' repeats line 1",
        f"{path}:7: malformed JSON",
        f"{path}:9: first: 2 does not match candidate 'sequential:1-2'",
        f"{path}:10: annotator: missing or empty",
    ]
    assert len(errors) == len(expected), errors
    for error, start in zip(errors, expected, strict=True):
        assert error.startswith(start), (error, start)
    assert not report.ok and report.files[0].created == 0
    assert not StepTypeLabelSet.objects.filter(name="bad").exists()  # nothing imported


@pytest.mark.parametrize(
    ("field", "value"), [("annotator", "ann\ud800"), ("source_example_id", "bad\udc00-p")]
)
def test_it_refuses_a_lone_surrogate_naming_the_line_and_field(
    tmp_path: Path, procedure: Procedure, field: str, value: str
) -> None:
    path = tmp_path / "s.jsonl"  # json.dumps writes the surrogate as its escape
    path.write_text("".join(json.dumps(row) + "\n" for row in (label_row(), label_row(**{field: value}))))
    errors = step_type_labels_import(path=path, label_set="lone").error_lines()
    code = f"{ord(value[-1] if field == 'annotator' else value[3]):04X}"
    assert errors == [f"{path}:2: {field}: contains a lone surrogate (U+{code}), which is not text"]
    assert not StepTypeLabelSet.objects.filter(name="lone").exists()


def test_it_imports_the_good_rows_with_skip_invalid(tmp_path: Path, procedure: Procedure) -> None:
    report = step_type_labels_import(path=bad_file(tmp_path, procedure), label_set="bad", skip_invalid=True)
    assert report.ok and report.files[0].created == 2 and report.files[0].skipped == 8
    stored = StepTypeLabel.objects.filter(label_set__name="bad").order_by("annotator")
    assert [(label.annotator, label.candidate.key, label.holds) for label in stored] == [
        ("a", "optional@1:2", False),
        ("ann-1", "sequential:0-1", True),
    ]


def test_it_counts_csv_lines_from_the_header(tmp_path: Path, procedure: Procedure) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        "source_example_id,candidate,annotator,holds,expert\n"
        "bad-p,sequential:0-1,ann,TRUE,\n"
        "bad-p,interchangeable@0:1-2,ann,yes,\n"
        "bad-p,optional@0:1,ann,false,perhaps\n"
    )
    assert step_type_labels_import(path=path, label_set="csv").error_lines() == [
        f"{path}:3: holds: expected true or false, got 'yes'",
        f"{path}:4: expert: expected true or false, got 'perhaps'",
    ]


def test_it_refuses_a_label_set_name_that_is_not_a_slug(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="label set name"):
        step_type_labels_import(path=tmp_path / "x.jsonl", label_set="no spaces")


@pytest.mark.parametrize("name", ["..", ".", ".hidden", "a/b", "a b", "x" * 65, "é", ""])
def test_the_command_refuses_a_classifier_name_its_predictions_link_could_not_follow(
    tmp_path: Path, name: str
) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [])
    with pytest.raises(CommandError, match=r"^--classifier: classifier name .* is not URL-safe"):
        call_command("import_step_types", str(path), "--classifier", name, verbosity=0)
    assert not StepTypeClassifier.objects.exists()


def test_it_keeps_dots_inside_a_classifier_name(tmp_path: Path, procedure: Procedure) -> None:
    row = {"source_example_id": procedure.source_example_id, "candidate": "sequential:0-1", "holds": True}
    path = write_jsonl(tmp_path / "p.jsonl", [row])
    step_type_predictions_import(path=path, classifier="gpt-4.1-mini")
    classifier = StepTypeClassifier.objects.get(classifier_id="gpt-4.1-mini")
    url = reverse("agreement:step_types_predictions_jsonl", args=[classifier.classifier_id])
    assert url.endswith("/gpt-4.1-mini/predictions.jsonl")


# --- predictions --------------------------------------------------------------------------------------------


@pytest.fixture
def classifier(study: Study) -> StepTypeClassifier:
    """A classifier the app ran: a prediction on every candidate of the study's procedures (every third one
    unparsable), and one on a procedure outside the study."""
    model = StepTypeClassifier.objects.create(classifier_id="c0ffee", model="gpt-4.1")
    for item in study.items.not_attention_checks().select_related("procedure"):
        assert item.procedure is not None
        for i, candidate in enumerate(procedure_candidates(item.procedure)):
            holds = None if i % 3 == 2 else i % 2 == 0
            StepTypePrediction.objects.create(
                classifier=model, candidate=candidate, holds=holds, raw_output=f"=answer {i}"
            )
    outside = make_procedure(steps=FOUR_STEPS, source_example_id="outside")
    StepTypePrediction.objects.create(
        classifier=model, candidate=procedure_candidates(outside)[0], holds=True
    )
    return model


def stored_predictions(classifier_id: str) -> list[tuple[Any, ...]]:
    return list(
        StepTypePrediction.objects.filter(classifier__classifier_id=classifier_id)
        .order_by("candidate_id")
        .values_list("candidate_id", "holds", "raw_output")
    )


def test_it_exports_predictions_one_row_per_candidate(study: Study, classifier: StepTypeClassifier) -> None:
    everything = list(prediction_rows(classifier))
    in_study = list(prediction_rows(classifier, study))
    assert (len(everything), len(in_study)) == (15, 14)
    assert all(list(row) == PREDICTION_FIELDS for row in everything)
    unparsable = [row for row in in_study if row["unparsable"]]
    assert len(unparsable) == 4 and all(row["holds"] is None for row in unparsable)
    assert {row["model"] for row in everything} == {"gpt-4.1"}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_it_imports_exported_predictions_as_an_imported_classifier(
    study: Study, classifier: StepTypeClassifier, tmp_path: Path, fmt: str
) -> None:
    path = tmp_path / f"predictions.{fmt}"
    rows = list(prediction_rows(classifier))
    if fmt == "csv":
        path.write_text("".join(csv_lines(rows, PREDICTION_FIELDS)), encoding="utf-8")
    else:
        write_jsonl(path, rows)
    report = step_type_predictions_import(path=path, classifier="copy")
    assert report.ok, report.error_lines()
    copy = StepTypeClassifier.objects.get(classifier_id="copy")
    assert (copy.imported, copy.model) == (True, "gpt-4.1")
    expected = stored_predictions("c0ffee")
    if fmt == "csv":  # the neutralising quote stays on free text
        expected = [(c, h, "'" + raw if raw else raw) for c, h, raw in expected]
    assert stored_predictions("copy") == expected
    assert step_type_predictions_import(path=path, classifier="copy").files[0].created == 0


def test_it_keeps_imported_predictions_apart_from_a_classifier_the_app_ran(
    classifier: StepTypeClassifier, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", list(prediction_rows(classifier)))
    with pytest.raises(ValueError, match="was run by this app"):
        step_type_predictions_import(path=path, classifier="c0ffee")


def test_it_names_bad_prediction_rows(procedure: Procedure, tmp_path: Path) -> None:
    rows = [
        {"source_example_id": "bad-p", "candidate": "sequential:0-1", "holds": True, "model": "m1"},
        {"source_example_id": "bad-p", "candidate": "sequential:1-2", "holds": None, "model": "m2"},
        {"source_example_id": "bad-p", "candidate": "sequential:2-3", "holds": True, "unparsable": True},
        {"source_example_id": "bad-p", "candidate": "sequential:0-1", "holds": False},
        {"source_example_id": "bad-p", "candidate": "optional@0:1", "holds": 1},
    ]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    assert step_type_predictions_import(path=path, classifier="m").error_lines() == [
        f"{path}:2: model: 'm2' is not this classifier's model 'm1'",
        f"{path}:3: unparsable: true, but holds is given",
        f"{path}:4: candidate: sequential:0-1 of procedure 'bad-p' repeats line 1",
        f"{path}:5: holds: expected true or false, got 1",
    ]
    assert not StepTypeClassifier.objects.filter(classifier_id="m").exists()


# --- the command --------------------------------------------------------------------------------------------


def test_the_command_imports_a_label_set_and_reports_bad_rows(
    study: Study, tmp_path: Path, procedure: Procedure
) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", list(study_label_rows(study)))
    out, err = io.StringIO(), io.StringIO()
    call_command("import_step_types", str(good), "--label-set", "cmd", stdout=out, stderr=err, verbosity=0)
    assert f"{good}: 41 created, 0 already present" in out.getvalue()
    bad = bad_file(tmp_path, procedure)
    with pytest.raises(CommandError, match="rejected"):
        call_command(
            "import_step_types", str(bad), "--label-set", "cmd2", stdout=out, stderr=err, verbosity=0
        )
    assert f"{bad}:4: candidate: 'sequential:3-4' is not a candidate of a 4-step procedure" in err.getvalue()
    call_command(
        "import_step_types", str(bad), "--label-set", "cmd2", "--skip-invalid", stdout=out, stderr=err
    )
    assert StepTypeLabel.objects.filter(label_set__name="cmd2").count() == 2


def test_the_command_imports_predictions_and_refuses_a_missing_file(
    classifier: StepTypeClassifier, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", list(prediction_rows(classifier)))
    call_command(
        "import_step_types", str(path), "--classifier", "imported-1", stdout=io.StringIO(), verbosity=0
    )
    assert StepTypeClassifier.objects.get(classifier_id="imported-1").predictions.count() == 15
    with pytest.raises(CommandError, match="was run by this app"):
        call_command("import_step_types", str(path), "--classifier", "c0ffee", verbosity=0)
    with pytest.raises(CommandError, match="not a file"):
        call_command("import_step_types", str(tmp_path / "none.jsonl"), "--label-set", "x", verbosity=0)


# --- downloads ----------------------------------------------------------------------------------------------


def test_it_downloads_predictions_as_jsonl_and_csv(study: Study, classifier: StepTypeClassifier) -> None:
    client = Client()
    client.force_login(make_user(is_staff=True))
    url = reverse("agreement:step_types_predictions_jsonl", args=[classifier.classifier_id])
    response = client.get(url, {"study": study.slug})
    assert response.status_code == 200 and response["Content-Type"] == "application/x-ndjson"
    assert 'filename="c0ffee-predictions-table6.jsonl"' in response["Content-Disposition"]
    assert len(body(response).splitlines()) == 14
    csv_url = reverse("agreement:step_types_predictions_csv", args=[classifier.classifier_id])
    text = body(client.get(csv_url)).decode()
    reader = list(csv.DictReader(io.StringIO(text)))
    assert len(reader) == 15 and reader[0]["raw_output"].startswith("'=")  # a formula, neutralised
    assert client.get(url, {"study": "nope"}).status_code == 404
    assert client.post(url).status_code == 405
    assert client.get(reverse("agreement:step_types_predictions_jsonl", args=["nope"])).status_code == 404


def test_it_keeps_the_downloads_to_staff(classifier: StepTypeClassifier) -> None:
    url = reverse("agreement:step_types_predictions_csv", args=[classifier.classifier_id])
    assert Client().get(url).status_code == 302
    teammate = Client()
    teammate.force_login(make_user(is_staff=False))
    assert teammate.get(url).status_code == 403


# --- arbitrary rows -----------------------------------------------------------------------------------------

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
NEAR = st.sampled_from(
    ["bad-p", "sequential:0-1", "optional@1:2", "interchangeable@0:1-2", "sequential", "optional", "true",
     "FALSE", "0", "1", "2", "-1", "1.5", "99999999999999999999", "\x00", "'=x", "null", " "]
)  # fmt: skip
JSON_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT, NEAR),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=6,
)
FIELDS = st.sampled_from(
    ["source_example_id", "procedure", "candidate", "type", "anchor", "first", "second", "annotator", "holds",
     "expert", "task_expert", "is_attention_check", "unparsable", "raw_output", "model"]
)  # fmt: skip
VALID = st.fixed_dictionaries(
    {
        "source_example_id": st.just("bad-p"),
        "candidate": st.sampled_from(
            ["sequential:0-1", "sequential:2-3", "interchangeable@1:2-3", "optional@0:1"]
        ),
        "annotator": st.sampled_from(["a", "b"]),
        "holds": st.booleans(),
    }
)  # rows that import, so that storing, duplicates and conflicts are exercised too
ROW = st.one_of(
    st.dictionaries(st.one_of(FIELDS, TEXT), JSON_VALUE, max_size=10),
    st.builds(lambda valid, changes: valid | changes, VALID, st.dictionaries(FIELDS, JSON_VALUE, max_size=2)),
)
CSV_ROW = st.one_of(
    st.dictionaries(FIELDS, st.one_of(TEXT, NEAR), max_size=10),
    st.builds(
        lambda valid, changes: (
            {k: str(v).lower() if isinstance(v, bool) else v for k, v in valid.items()} | changes
        ),
        VALID,
        st.dictionaries(FIELDS, st.one_of(TEXT, NEAR), max_size=2),
    ),
)
ERROR = re.compile(r"^.+:\d+: \S")


def _fuzz_settings(n: int) -> settings:
    return fuzz_settings(n)


def _check(report: Any, path: Path, label_set: str | None, classifier: str | None) -> None:
    for line in report.files[0].errors:
        assert line.startswith(f"{path}:") and ERROR.match(line), line
    if not report.ok:  # a rejected file imports nothing
        assert label_set is None or not StepTypeLabelSet.objects.filter(name=label_set).exists()
        assert classifier is None or not StepTypeClassifier.objects.filter(classifier_id=classifier).exists()


def test_arbitrary_rows_never_crash_the_importer(procedure: Procedure, tmp_path: Path) -> None:
    path = tmp_path / "fuzz.jsonl"
    counter = iter(range(10**6))

    @_fuzz_settings(150)
    @given(rows=st.lists(ROW, max_size=6), skip=st.booleans(), labels=st.booleans())
    def run(rows: list[dict[str, Any]], skip: bool, labels: bool) -> None:
        path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
        name = f"fuzz-{next(counter)}"
        if labels:
            report = step_type_labels_import(path=path, label_set=name, skip_invalid=skip)
            _check(report, path, name, None)
        else:
            report = step_type_predictions_import(path=path, classifier=name, skip_invalid=skip)
            _check(report, path, None, name)

    run()


def test_arbitrary_csv_cells_never_crash_the_importer(procedure: Procedure, tmp_path: Path) -> None:
    path = tmp_path / "fuzz.csv"
    counter = iter(range(10**6))

    @_fuzz_settings(100)
    @given(rows=st.lists(CSV_ROW, max_size=6), labels=st.booleans())
    def run(rows: list[dict[str, str]], labels: bool) -> None:
        fields = sorted({key for row in rows for key in row}) or ["annotator"]
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
        name = f"fuzz-csv-{next(counter)}"
        if labels:
            _check(step_type_labels_import(path=path, label_set=name), path, name, None)
        else:
            _check(step_type_predictions_import(path=path, classifier=name), path, None, name)

    run()
