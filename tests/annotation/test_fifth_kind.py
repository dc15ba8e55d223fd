"""A fifth study kind is one new folder under annotation/kinds/, its migration and one registry line, with no
other existing file edited (issue #33's acceptance), shown live with a throwaway kind.

The checkout itself is never written: the test copies the project (its source, templates, static files and
tests; not .git or .venv) into a temporary directory and, there only:
- adds one folder, annotation/kinds/ratings/ (the throwaway kind: is a procedure clear, yes or no): its
  __init__.py (registers the kind: its name, label and where its spec is), spec.py,
  templates/annotation/item_ratings.html (the participant's item page) and
  templates/annotation/kinds/_items_ratings.html (the study page's item table);
- edits one line of one existing file: "ratings" added to KINDS in annotation/kinds/__init__.py (the
  registry);
- adds no migration: the kind keeps its answer in the engine's Annotation.answer and has no table of its
  own (a kind with tables adds its migration to annotation/migrations/), and Study.kind's choices are read
  from the registry, so the engine needs none either: `makemigrations --check` finds no change.
Then a Python process run in the copy creates its own test database, creates a study of the new kind through
the study service, and gets its pages: the study list (the kind's label and summary from the registry), the
builder's tab of the kind, the study page, its exports and agreement page, and a participant's walk from the
Prolific entry link through consent, training and the check to the item page, and a submitted answer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAME = "ratings"
COPIED = ("annotation", "configs", "demo", "goal_step", "h2e_site", "judging", "mining", "prompts", "static",
          "templates", "tests", "manage.py", "pyproject.toml")  # fmt: skip

INIT = '''"""A throwaway kind (tests/annotation/test_fifth_kind.py)."""

from annotation.base.registry import register

register(
    "ratings",
    label="Ratings",
    description="Ratings (is a procedure clear)",
    spec=f"{__name__}.spec.Ratings",
)
'''

SPEC = '''"""Is a procedure clear, yes or no: a throwaway kind whose items are procedures."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse, QueryDict

from annotation.base.models import Annotation, Assignment, Study, StudyItem
from annotation.base.posted import posted_active_seconds
from annotation.base.spec import AnnotationFields, KindForm, ReadingTexts, StudyKindSpec
from annotation.base.types import Refused, Selection, subject_key
from mining.models import Procedure

KIND = "ratings"
WHOLE = "The procedure is shown whole: read it and say whether it is clear."


@dataclass(frozen=True)
class Rating:
    clear: bool | None
    comments: str
    active_seconds: float | None
    user_agent: str


class Ratings(StudyKindSpec):
    kind = KIND
    summary = "where they say whether a procedure is clear"
    item_template = "annotation/item_ratings.html"
    study_items_template = "annotation/kinds/_items_ratings.html"
    item_related = ("procedure",)
    item_page_fields = ("procedure__goal",)
    item_listed = ("procedure",)
    nothing_selected = "no procedure has these topics."
    reading = ReadingTexts(WHOLE, WHOLE, "Confirm that you have read the procedure.", "Read the procedure.")

    def study_defaults(self) -> dict[str, Any]:
        return {}

    def items_create(self, study: Study, selection: Selection, attention_checks: int) -> int:
        procedures = Procedure.objects.order_by("pk")
        if selection.topic_ids:
            procedures = procedures.filter(topic_id__in=selection.topic_ids)
        ids = list(procedures.values_list("pk", flat=True))
        StudyItem.objects.bulk_create(
            StudyItem(study=study, procedure_id=pk, subject_key=subject_key("procedure", pk), position=i,
                      target_annotations=study.annotators_per_item)
            for i, pk in enumerate(ids, 1)
        )
        return len(ids)

    def reading_steps(self, item: StudyItem, presentation: dict[str, Any]) -> list[str]:
        return []

    def item_context(self, assignment: Assignment) -> dict[str, Any]:
        return {"procedure": assignment.item.procedure}

    def empty_form(self, assignment: Assignment) -> dict[str, Any]:
        return {"clear": "", "comments": ""}

    def parse_form(self, post: QueryDict, assignment: Assignment, *, user_agent: str) -> KindForm:
        values = {"clear": post.get("clear", ""), "comments": post.get("comments", "")}
        clear = {"yes": True, "no": False}.get(values["clear"])
        return KindForm(values, Rating(clear, values["comments"], posted_active_seconds(post), user_agent))

    def refused_form(self, form: KindForm, message: str, field: str) -> dict[str, Any]:
        return {**form.values, "error_field": field}

    def check(self, submission: Rating, item: StudyItem, assignment: Assignment) -> None:
        if submission.clear is None:
            raise Refused("Say whether the procedure is clear.", field="clear")

    def annotation_fields(self, submission: Rating, item: StudyItem) -> AnnotationFields:
        return AnnotationFields(answer={"clear": submission.clear})

    def store_details(self, annotation: Annotation, submission: Rating, item: StudyItem) -> None:
        return None

    def agreement_page(self, request: HttpRequest, study: Study) -> HttpResponse:
        n = Annotation.objects.filter(study=study).count()
        return HttpResponse(f"{study.slug}: {n} rating(s)", content_type="text/plain; charset=utf-8")

    def export_rows(self, study: Study) -> Iterator[dict[str, Any]]:
        for annotation in Annotation.objects.filter(study=study).select_related("item").order_by("pk"):
            yield {"study": study.slug, "item": annotation.item.position, "clear": annotation.answer["clear"]}

    def export_fields(self) -> list[str]:
        return ["study", "item", "clear"]
'''

ITEM_TEMPLATE = """{% extends "annotation/annotator_base.html" %}
{% load partials %}
{% block title %}Rate {{ procedure.goal }}{% endblock %}
{% partialdef reading %}
<div id="reading" class="reading" data-all-read="1">
  <p class="goal-line">{{ procedure.goal }}</p>
  {% if not assignment.goal_acknowledged_at %}
  {% url 'annotator:acknowledge_goal' study.slug assignment.pk as acknowledge %}
  <button type="submit" formaction="{{ acknowledge }}" formmethod="post">I have read it</button>
  {% endif %}
</div>
{% endpartialdef %}
{% block content %}
<form method="post" action="{% url 'annotator:submit' study.slug assignment.pk %}" id="item-form">
  {% csrf_token %}
  {% include "annotation/_item_head.html" %}
  {% partial reading %}
  <label><input type="radio" name="clear" value="yes"> clear</label>
  <label><input type="radio" name="clear" value="no"> not clear</label>
  {% include "annotation/_item_submit.html" with comments_about="procedure" %}
</form>
{% endblock %}
"""

ITEMS_TEMPLATE = """<thead><tr><th>#</th><th>Goal</th><th>Annotations</th></tr></thead>
<tbody>{% for item in items %}
<tr><td>{{ item.position }}</td><td>{{ item.procedure.goal }}</td><td>{{ item.completed_count }}</td></tr>
{% endfor %}</tbody>
"""

# Run in the copy: the pages of a study of the new kind, on a test database of its own.
WALK = """
import os
import django
from django.test.utils import setup_test_environment
django.setup()
setup_test_environment()
from django.core.management import call_command
from django.db import connection
import annotation
assert annotation.__file__.startswith(os.getcwd())  # the copy's app, not the checkout's
test_db = connection.creation.create_test_db(verbosity=0, autoclobber=True)
try:
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # exits non-zero on any change
    from django.test import Client
    from django.urls import reverse
    from annotation.base.models import Annotation, Study
    from annotation.base.registry import KINDS, kind_for
    from annotation.base.types import Selection, kind_choices
    from annotation.flow import services
    from tests.factories import logged_in, make_procedure, make_user

    assert list(KINDS)[-1] == "ratings" and kind_for("ratings").label == "Ratings"
    assert ("ratings", "Ratings (is a procedure clear)") in kind_choices()
    make_procedure(goal="Repot a houseplant")
    study = services.study_create(
        title="Clear?", slug="clear", selection=Selection(), kind="ratings", min_dwell_seconds=0
    )
    assert Study.objects.get(slug="clear").kind == "ratings" and study.items.count() == 1
    staff = logged_in(make_user(is_staff=True))
    studies = staff.get(reverse("annotation:study_list")).content.decode()
    assert "Ratings" in studies and "where they say whether a procedure is clear" in studies
    assert "five kinds" in studies
    for name in ("annotation:study_detail", "annotation:study_export_jsonl", "annotation:study_export_csv",
                 "agreement:study"):
        response = staff.get(reverse(name, args=[study.slug]))
        assert response.status_code == 200, (name, response.status_code)
    builder = staff.get(reverse("annotation:study_create") + "?kind=ratings")
    assert builder.status_code == 200 and "Ratings (is a procedure clear)" in builder.content.decode()

    participant = Client()
    query = "PROLIFIC_PID=" + "a" * 24 + "&STUDY_ID=studyabc&SESSION_ID=sess1"
    assert participant.get(reverse("annotator:entry", args=[study.slug]) + "?" + query).status_code == 302
    participant.post(reverse("annotator:consent", args=[study.slug]))
    participant.post(reverse("annotator:training", args=[study.slug]))
    answers = {f"q{i}": q["answer"] for i, q in enumerate(study.comprehension_questions)}
    assert participant.post(reverse("annotator:comprehension", args=[study.slug]), answers).status_code == 302
    page = participant.get(reverse("annotator:item", args=[study.slug]))
    assert page.status_code == 200 and "Repot a houseplant" in page.content.decode()
    assignment = page.context["assignment"]
    participant.post(reverse("annotator:acknowledge_goal", args=[study.slug, assignment.pk]))
    submit = reverse("annotator:submit", args=[study.slug, assignment.pk])
    assert participant.post(submit, {"clear": "yes", "comments": ""}).status_code == 302
    assert Annotation.objects.get(study=study).answer == {"clear": True}
    print("fifth kind: ok")
finally:
    connection.creation.destroy_test_db(test_db, verbosity=0)
"""


def _copy(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        else:
            shutil.copy2(source, target / name)


def _files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def _lines_changed(before: Path, after: Path) -> int:
    old, new = before.read_text().splitlines(), after.read_text().splitlines()
    assert len(old) == len(new)
    return sum(a != b for a, b in zip(old, new, strict=True))


def _add_the_kind(project: Path) -> None:
    folder = project / "annotation" / "kinds" / NAME
    (folder / "templates" / "annotation" / "kinds").mkdir(parents=True)
    (folder / "__init__.py").write_text(INIT)
    (folder / "spec.py").write_text(SPEC)
    (folder / "templates" / "annotation" / "item_ratings.html").write_text(ITEM_TEMPLATE)
    (folder / "templates" / "annotation" / "kinds" / "_items_ratings.html").write_text(ITEMS_TEMPLATE)
    registry = project / "annotation" / "kinds" / "__init__.py"
    text = registry.read_text()
    line = next(line for line in text.splitlines() if line.startswith("KINDS = ("))
    registry.write_text(text.replace(line, line.replace(")", f', "{NAME}")'), 1))


@pytest.mark.slow
def test_a_fifth_kind_is_one_folder_and_one_registry_line(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _copy(project)
    _add_the_kind(project)
    before, after = _files(ROOT / "annotation"), _files(project / "annotation")
    assert sorted(set(after) - set(before)) == [
        f"kinds/{NAME}/__init__.py",
        f"kinds/{NAME}/spec.py",
        f"kinds/{NAME}/templates/annotation/item_ratings.html",
        f"kinds/{NAME}/templates/annotation/kinds/_items_ratings.html",
    ]
    assert set(before) <= set(after)
    assert [name for name in before if before[name] != after[name]] == ["kinds/__init__.py"]
    registry = "annotation/kinds/__init__.py"
    assert _lines_changed(ROOT / registry, project / registry) == 1
    database = os.environ.get("DATABASE_URL", "").rsplit("/", 1)
    env = {**os.environ, "PYTHONPATH": str(project), "DJANGO_SETTINGS_MODULE": "h2e_site.settings"}
    if len(database) == 2:  # a database of its own name, so its test database is its own too
        env["DATABASE_URL"] = f"{database[0]}/fifth_{uuid.uuid4().hex[:8]}"
    walk = subprocess.run(
        [sys.executable, "-c", WALK], cwd=project, env=env, capture_output=True, text=True, timeout=600
    )
    assert walk.returncode == 0, walk.stderr[-4000:]
    assert walk.stdout.strip().endswith("fifth kind: ok")
