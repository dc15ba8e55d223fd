"""The study engine knows kinds only through the registry (issue #21 item 1): its modules name no critical-
failures field or relation, no member of StudyKind, and no kind's submission; the kinds' own endpoints are
mounted through their `api_urls`; a judge's disagreements with a study's humans and the form in the kind's
part of the study page are the kind's (the critical-failures kind's; another kind's study answers a 404
saying why)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import resolve, reverse

from annotation import kinds
from annotation.base.models import DEFAULT_KIND
from annotation.base.registry import KINDS
from tests.annotation.step_types.labelled import step_study
from tests.factories import make_judge

ROOT = Path(__file__).resolve().parents[2]
ENGINE = [
    "annotation/flow/services/__init__.py",
    "annotation/flow/services/studies.py",
    "annotation/flow/services/participants.py",
    "annotation/flow/services/assignments.py",
    "annotation/flow/services/submissions.py",
    "annotation/base/selectors.py",
    "annotation/base/posted.py",
    "annotation/flow/forms.py",
    "annotation/base/types.py",
    "annotation/flow/views/agreement.py",
    "annotation/flow/views/annotator.py",
    "annotation/flow/views/studies.py",
]  # annotation/mounting/api.py too, once its judge-side endpoints (report card, calibration) leave it
# The critical-failures kind's fields, relations, types and modules; any kind named by its StudyKind member.
KIND_WORDS = re.compile(
    r"has_failure|n_failures|failure_number|generation__|item\.generation|FailureInput|critical_failures"
    r"|StudyKind\.[A-Z]"
)


def test_the_engine_modules_name_no_kinds_fields() -> None:
    found = [
        f"{name}:{number}: {line.strip()}"
        for name in ENGINE
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1)
        if KIND_WORDS.search(line)
    ]
    assert found == []


# Outside the kind folders (annotation/kinds/<kind>/) and the registry (annotation/kinds/__init__.py): every
# file of the annotation app, every project template and the project's URL conf. No kind is named there: not
# by its name (an identifier, a module path, a template's or a URL's name), nor by a StudyKind member.
KIND_FOLDERS = ROOT / "annotation" / "kinds"
OUTSIDE = [
    *(
        path
        for path in sorted((ROOT / "annotation").rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and not path.is_relative_to(KIND_FOLDERS)
    ),
    *(path for path in sorted((ROOT / "templates").rglob("*")) if path.is_file()),
    ROOT / "h2e_site" / "urls.py",
]
# The few that must name a kind, each with why: (path, the words of the line that may name one).
MIGRATIONS = "annotation/migrations/"  # they stay as they are: they record the kinds' tables and choices
NAMED_AS_THEIR_COMMAND = "annotation/management/commands/"  # Django finds a command by its module's name here
ALLOWED = {
    # Study.kind's default and database default as the migrations recorded them (0004, 0010): the registry's
    # first kind; changing the column's default would need a migration.
    ("annotation/base/models.py", 'DEFAULT_KIND = "critical_failures"'),
    # The judgment format's field (how2bench.judgment.v1, judging's), which the critical-failures kind's
    # export keeps as its column and the consent page lists (tests/annotation/test_hardening.py reads it).
    ("annotation/base/codebook.py", '"critical_failures", "comments"'),
    # The failure browser's CSV, named after that field of the judgments it lists.
    ("annotation/failures/views.py", 'filename="critical_failures.csv"'),
}
# Rewritten at the same time to mount each kind through the registry (issue #33 item 5): named here until that
# lands, then this set is emptied.
MOUNTED_BY_NAME: set[str] = set()  # every URL conf mounts the kinds through the registry


def _kind_words() -> re.Pattern[str]:
    names = "|".join(re.escape(name) for name in kinds.KINDS)
    return re.compile(rf"(?i:{names})|\bStudyKind\.[A-Z]")


def _named_kinds(path: Path, words: re.Pattern[str]) -> list[str]:
    name = path.relative_to(ROOT).as_posix()
    if name.startswith(MIGRATIONS) or name in MOUNTED_BY_NAME:
        return []
    named_by_path = words.search(name) and not name.startswith(NAMED_AS_THEIR_COMMAND)
    found = [f"{name}: its path"] if named_by_path else []
    try:
        lines = path.read_text().splitlines()
    except UnicodeDecodeError:  # a binary file (an image) names nothing
        return found
    return found + [
        f"{name}:{number}: {line.strip()}"
        for number, line in enumerate(lines, 1)
        if words.search(line) and not any(name == where and allowed in line for where, allowed in ALLOWED)
    ]


def test_no_module_url_conf_or_template_outside_the_kind_folders_names_a_kind() -> None:
    words = _kind_words()
    assert len(OUTSIDE) > 100  # the app's modules and the project's templates, not an empty glob
    assert [found for path in OUTSIDE for found in _named_kinds(path, words)] == []


def test_the_engine_reads_the_kinds_from_the_registry() -> None:
    assert list(KINDS) == list(kinds.KINDS)  # every listed kind registered, in the registry's order
    assert kinds.KINDS[0] == DEFAULT_KIND
    assert set(KINDS) <= {path.name for path in KIND_FOLDERS.iterdir() if (path / "__init__.py").is_file()}


def test_each_kinds_agreement_endpoint_is_its_own_and_mounted() -> None:
    for spec in KINDS.values():
        patterns = spec.api_urls()
        assert not spec.agreement_api or spec.agreement_api in {pattern.name for pattern in patterns}
        for pattern in patterns:
            kwargs = {name: "a-slug" for name in pattern.pattern.converters}  # type: ignore[attr-defined]
            assert resolve(reverse(pattern.name, kwargs=kwargs)).url_name == pattern.name


@pytest.mark.django_db
def test_a_judges_disagreements_with_another_kinds_study_are_a_404_naming_it(admin_client: Client) -> None:
    study = step_study("no-judges")
    judge = make_judge(model="org/any")
    response = admin_client.get(reverse("agreement:judge_disagreements", args=[study.slug, judge.judge_id]))
    assert response.status_code == 404
    reason = "No judge gives verdicts on the items of a step-types study (no-judges)."
    assert response.content.decode() == reason


@pytest.mark.django_db
def test_a_post_to_the_study_page_of_a_kind_without_a_form_there_is_a_404(admin_client: Client) -> None:
    study = step_study("no-form")
    url = reverse("annotation:study_calibration_round", args=[study.slug])
    response = admin_client.post(url, {"size": "1"})
    assert response.status_code == 404
    assert response.content.decode() == "A step-types study's page has no form to post (no-form)."
