"""What the study builder, the task-set build paths and the study admin refuse (issue #19 items 1, 2, 5, 8):
numbers beyond their range, comprehension questions nested 50,000 deep or off the schema, a slug that is a
page of /studies/, a malformed Prolific id, a selection with no item, and a change of kind once a study has
items. Each answers 4xx naming the field, and stores nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation.base.comprehension import comprehension_questions_parse, comprehension_questions_text
from annotation.base.models import Study
from annotation.base.registry import StudyKind
from annotation.flow import services
from goal_step.models import TaskSet
from h2e_site.jobs.models import Job
from tests.annotation.conftest import make_study
from tests.annotation.goal_step.conftest import make_task_set
from tests.factories import make_procedure

pytestmark = pytest.mark.django_db
QUESTIONS = "Is it so?\n- No\n* Yes"


def _builder(kind: str = StudyKind.STEP_TYPES, **fields: Any) -> dict[str, Any]:
    data = {
        "kind": kind, "title": "T", "slug": "t", "seed": "0", "annotators_per_item": "3",
        "items_per_participant": "10", "min_dwell_seconds": "5", "estimated_item_minutes": "2",
        "attention_checks": "0", "attention_check_every": "0", "instructions": "Read.", "consent_text": "Ok.",
        "training_text": "## Hi", "comprehension_questions": QUESTIONS,
    }  # fmt: skip
    return {**data, **fields}


def _post(boss: Client, data: dict[str, Any]) -> Any:
    return boss.post(reverse("annotation:study_create") + f"?kind={data['kind']}", data)


def _procedures() -> None:
    for i in range(2):
        make_procedure(goal=f"Goal {i}", steps=["a", "b", "c", "d"], topic="Home")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("items_per_participant", str(2**31)),
        ("min_dwell_seconds", str(2**31)),
        ("lease_minutes", str(2**31)),
        ("attention_check_every", "40000"),
        ("estimated_item_minutes", "1e300"),
        ("annotators_per_item", str(2**15)),
        ("seed", str(2**63)),
        ("sample_size", str(2**31)),
        ("attention_checks", str(2**31)),
        ("slug", "new"),
        ("prolific_study_id", "abc def"),
        ("comprehension_questions", "[" * 50_000 + "]" * 50_000),
        ("comprehension_questions", '"a plain string"'),
        ("comprehension_questions", '[{"question": "?", "choices": ["a", "b"]}]'),
        ("comprehension_questions", "Is it so?\n- No\n- Yes"),
    ],
)
def test_it_refuses_a_value_out_of_its_range_naming_the_field(boss: Client, field: str, value: str) -> None:
    _procedures()
    response = _post(boss, _builder(**{field: value}))
    assert response.status_code == 400
    assert field in response.context["form"].errors, response.context["form"].errors
    assert not Study.objects.exists()


def test_it_takes_a_prolific_id_and_the_plain_question_format(boss: Client) -> None:
    _procedures()
    response = _post(boss, _builder(prolific_study_id="5F1E" * 6))
    assert response.status_code == 302
    study = Study.objects.get(slug="t")
    assert study.prolific_study_id == "5f1e" * 6
    assert study.comprehension_questions == [{"question": "Is it so?", "choices": ["No", "Yes"], "answer": 1}]


def test_the_question_text_reads_back_as_the_kinds_defaults() -> None:
    from annotation.kinds.multiple_choice.guidelines import default_comprehension_questions

    questions = default_comprehension_questions()
    assert comprehension_questions_parse(comprehension_questions_text(questions)) == questions
    assert comprehension_questions_parse(json.dumps(questions)) == questions


def test_it_refuses_a_step_types_selection_with_no_procedure_of_three_steps(boss: Client) -> None:
    make_procedure(goal="Short", steps=["a", "b"], topic="Home")
    response = _post(boss, _builder())
    assert response.status_code == 400
    errors = " ".join(response.context["form"].non_field_errors())
    assert "No item to annotate" in errors and "3 steps or more" in errors
    assert not Study.objects.exists()


def test_it_refuses_a_multiple_choice_selection_with_no_example(boss: Client) -> None:
    make_task_set("built")
    data = _builder(StudyKind.MULTIPLE_CHOICE, task_set="built", tasks=["goal_inference"], topics=[])
    data["tasks"] = ["goal_inference"]
    from mining.models import Topic

    other = Topic.objects.create(name="Elsewhere")
    response = _post(boss, {**data, "topics": [str(other.pk)]})
    assert response.status_code == 400
    assert "no test example" in " ".join(response.context["form"].non_field_errors())
    assert not Study.objects.exists()


def test_an_empty_task_set_menu_says_how_to_build_one(boss: Client) -> None:
    page = boss.get(reverse("annotation:study_create"), {"kind": StudyKind.MULTIPLE_CHOICE})
    assert reverse("goal_step:task_sets") + "#build" in page.content.decode()


def test_study_create_refuses_out_of_range_settings_itself() -> None:
    _procedures()
    with pytest.raises(ValidationError) as refused:
        services.study_create(
            title="T",
            slug="s",
            kind=StudyKind.STEP_TYPES,
            selection=services.Selection(),
            lease_minutes=2**31,
        )
    assert "lease_minutes" in refused.value.message_dict
    assert not Study.objects.exists()


# --- the admin: one schema, and a kind fixed once there are items ---------------------------------------


def _admin_post(boss: Client, study: Study, **changes: Any) -> Any:
    url = reverse("admin:annotation_study_change", args=[study.pk])
    form = boss.get(url).context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items() if not isinstance(v, bool) or v}
    data["comprehension_questions"] = json.dumps(study.comprehension_questions)
    return boss.post(url, {**data, **changes, "_save": "Save"})


@pytest.mark.parametrize(
    "questions",
    ['[{"question": "?", "choices": ["a", "b"]}]', '"a plain string"', "[" * 50_000 + "]" * 50_000],
)
def test_the_admin_refuses_comprehension_questions_off_the_schema(boss: Client, questions: str) -> None:
    study = make_study(n_items=1)
    response = _admin_post(boss, study, comprehension_questions=questions)
    assert response.status_code == 200
    assert "comprehension_questions" in response.context["adminform"].form.errors
    study.refresh_from_db()
    assert all("answer" in q for q in study.comprehension_questions)


def test_the_admin_keeps_the_kind_of_a_study_with_items(boss: Client) -> None:
    study = make_study(n_items=1)
    page = boss.get(reverse("admin:annotation_study_change", args=[study.pk]))
    assert "kind" not in page.context["adminform"].form.fields  # read-only
    assert _admin_post(boss, study, kind=StudyKind.STEP_TYPES).status_code == 302
    study.refresh_from_db()
    assert study.kind == StudyKind.CRITICAL_FAILURES
    study.kind = StudyKind.STEP_TYPES
    with pytest.raises(ValidationError) as refused:
        study.full_clean()
    assert "kind" in refused.value.message_dict


# --- the task set's seed, on every path ------------------------------------------------------------------


@pytest.mark.parametrize("seed", [2**31, -(2**31) - 1, 2**63, -1])
def test_every_task_set_path_refuses_a_seed_out_of_range(boss: Client, seed: int) -> None:
    make_procedure(goal="Goal", steps=["a", "b", "c"], topic="Home")
    page = boss.post(
        reverse("goal_step:task_set_build"), {"name": "s", "seed": str(seed), "splits": ["bench"]}
    )
    assert page.status_code == 400 and "seed" in page.context["form"].errors
    api = boss.post(
        "/api/jobs/", {"kind": "build_tasks", "name": "s", "seed": seed}, content_type="application/json"
    )
    assert api.status_code == 400 and "seed" in api.json()
    origin = make_task_set("origin")
    action = boss.post(
        reverse("admin:goal_step_taskset_changelist"),
        {
            "action": "build_again",
            "_selected_action": [origin.pk],
            "apply": "1",
            "name": "again",
            "seed": str(seed),
        },
    )
    assert action.status_code == 200 and "seed" in action.context["form"].errors
    with pytest.raises(CommandError, match="seed"):
        call_command("build_tasks", "cmd", "--seed", str(seed))
    assert TaskSet.objects.count() == 1 and not Job.objects.exists()


def test_the_api_names_the_field_that_holds_a_nul(boss: Client) -> None:
    body = '{"kind": "build_tasks", "name": "s", "topics": ["a\\u0000"]}'
    response = boss.post("/api/jobs/", body, content_type="application/json")
    assert response.status_code == 400 and "topics" in response.json()


@pytest.mark.parametrize(
    "body", ['{"kind": "build_tasks", "name": "a\\ud800"}', '{"kind": "build_tasks", "\\udfff": 1}']
)
def test_the_api_names_the_field_that_holds_a_lone_surrogate(boss: Client, body: str) -> None:
    """#31 item 11: JSON may escape a lone surrogate, which is no character and no column stores: the body
    is refused where it is parsed (h2e_site.bounds), naming the field, before any serializer sees it."""
    response = boss.post("/api/jobs/", body, content_type="application/json")
    assert response.status_code == 400 and "lone surrogate" in str(response.json()), response.content[:200]
    assert not Job.objects.exists()


def test_make_split_refuses_a_seed_out_of_range_naming_it() -> None:
    with pytest.raises(CommandError, match="seed"):
        call_command("make_split", "--no-dedup", "--seed", str(2**31))
