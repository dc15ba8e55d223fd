"""The multiple_choice study kind (#14 item 3): items are a task set's test examples; k workers choose one
option (or "None of the above" / "Neutral"); the server refuses several choices or an option that does not
exist; validation keeps the examples every worker answered correctly, with the yield, the Table 2
distribution, human accuracy (Wilson) and Krippendorff's alpha checked by hand and against the package."""

from __future__ import annotations

import json
from typing import Any

import krippendorff
import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from annotation.base.models import Annotation, Study, StudyItem
from annotation.base.registry import StudyKind
from annotation.flow import services
from annotation.kinds.multiple_choice.spec import NONE, MultipleChoiceSubmission
from annotation.kinds.multiple_choice.validation import kept_example_ids, study_answers, study_validation
from goal_step.models import TaskExample
from goal_step.options import option_letter
from h2e_site.stats import wilson_interval
from tests.annotation.conftest import annotate_all, qualified
from tests.annotation.goal_step.conftest import make_task_set
from tests.annotation.test_views import qualify, read_all, url

pytestmark = pytest.mark.django_db


def make_mc_study(k: int = 3, attention_checks: int = 0, every: int = 0) -> Study:
    make_task_set()
    return services.study_create(
        title="Validate", slug="validate", kind=StudyKind.MULTIPLE_CHOICE,
        selection=services.Selection(task_set="tasks"), annotators_per_item=k, min_dwell_seconds=0,
        items_per_participant=0, attention_checks=attention_checks, attention_check_every=every,
    )  # fmt: skip


def answer_all(study: Study, worker: int, choices: dict[str, object]) -> None:
    """The worker answers every item: choices by prompt (default: the right answer)."""

    def choose(assignment: Any) -> MultipleChoiceSubmission:
        example = assignment.item.example
        choice = choices.get(example.prompt, example.answer)
        return MultipleChoiceSubmission(choice, user_agent="test")  # type: ignore[arg-type]

    annotate_all(qualified(study, worker), choose)


def test_a_study_of_the_test_examples_with_the_kinds_texts() -> None:
    study = make_mc_study()
    items = list(study.items.select_related("example"))
    assert len(items) == 4 and all(item.example and item.example.split == "test" for item in items)
    assert "Tab and Shift+Tab" in study.instructions and study.min_dwell_seconds == 0


def test_validation_keeps_what_every_worker_answered_right() -> None:
    study = make_mc_study()
    # Prevent Coronavirus: all 3 right. Bake bread: worker 3 says "none". Knead: workers 2, 3 wrong (0, 2).
    # Make tea: all right.
    wrong = {2: {"Knead the dough": 0}, 3: {"Bake bread": NONE, "Knead the dough": 2}}
    for worker in (1, 2, 3):
        answer_all(study, worker, wrong.get(worker, {}))
    answers = study_answers(study)
    kept = kept_example_ids(answers, k=3)
    prompts = set(study.items.filter(example_id__in=kept).values_list("example__prompt", flat=True))
    assert prompts == {"Prevent Coronavirus", "Make tea"}
    by_task = {t.task: t for t in study_validation(study)}
    step = by_task["step_inference"]
    # Two step-inference examples: 3 and 2 workers chose the gold; 1 of 2 kept; 5 of 6 answers right.
    assert step.by_correct == {0: 0, 1: 0, 2: 1, 3: 1}
    assert (step.kept.k, step.kept.n) == (1, 2) and step.kept.interval == wilson_interval(1, 2)
    assert (step.accuracy.k, step.accuracy.n) == (5, 6)
    goal = by_task["goal_inference"]
    assert goal.by_correct == {0: 0, 1: 1, 2: 0, 3: 0} and (goal.kept.k, goal.accuracy.k) == (0, 1)
    # alpha on the step-inference choices (workers x examples; "none" coded -1), by the package itself:
    data = np.array([[1, 0], [1, 0], [1, -1]], dtype=float)
    assert step.alpha == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    )


def test_an_attention_check_is_passed_by_the_instructed_option_only() -> None:
    study = make_mc_study(attention_checks=1, every=1)
    check = study.items.get(is_attention_check=True)
    expected = check.payload["expects"]
    answer_all(study, 1, {check.example.prompt: expected})
    assert Annotation.objects.get(item=check).attention_passed is True
    assert study.items.filter(is_attention_check=False).count() == 4


# --- over HTTP ---------------------------------------------------------------------------------------------


def _item(client: Client, study: Study) -> object:
    assignment = client.get(reverse("annotator:item", args=[study.slug])).context["assignment"]
    read_all(client, study, assignment)
    return assignment


def test_the_item_page_shows_the_options_after_the_prompt_is_acknowledged(client: Client) -> None:
    study = make_mc_study()
    qualify(client, study)
    first = client.get(reverse("annotator:item", args=[study.slug]))
    assert 'name="choice"' not in first.content.decode()
    assignment = _item(client, study)
    html = client.get(reverse("annotator:item", args=[study.slug])).content.decode()
    example = assignment.item.example  # type: ignore[attr-defined]
    assert example.prompt in html and all(text in html for text in example.candidates)
    assert 'value="none"' in html


@pytest.mark.parametrize(
    ("choice", "status", "named"),
    [
        (["7"], 400, b"choice: &#x27;7&#x27; is not an option"),
        (["0", "1"], 400, b"one option (several were chosen)"),
        (["-1"], 400, b"is not an option"),
        ([], 400, b"Choose one of the options."),
    ],
)
def test_a_bad_choice_is_refused_by_name_and_nothing_is_stored(
    client: Client, choice: list[str], status: int, named: bytes
) -> None:
    study = make_mc_study()
    qualify(client, study)
    assignment = _item(client, study)
    response = client.post(url("submit", study, assignment), {"choice": choice})  # type: ignore[arg-type]
    assert response.status_code == status and named in response.content
    assert not Annotation.objects.exists()


def test_a_choice_is_stored_with_whether_it_is_right(client: Client) -> None:
    study = make_mc_study()
    qualify(client, study)
    assignment = _item(client, study)
    example = assignment.item.example  # type: ignore[attr-defined]
    response = client.post(url("submit", study, assignment), {"choice": str(example.answer)})  # type: ignore[arg-type]
    assert response.status_code == 302
    assert Annotation.objects.get().answer == {"choice": example.answer, "correct": True}


def test_the_validation_page_and_the_validated_set(admin_client: Client) -> None:
    study = make_mc_study()
    for worker in (1, 2, 3):
        answer_all(study, worker, {"Bake bread": 3} if worker == 1 else {})
    page = admin_client.get(reverse("agreement:study", args=[study.slug]))
    assert page.status_code == 200 and "Crowd validation" in page.content.decode()
    lines = b"".join(admin_client.get(reverse("agreement:mc_validated", args=[study.slug])).streaming_content)
    rows = [json.loads(line) for line in lines.splitlines()]
    assert sorted(row["prompt"] for row in rows) == ["Knead the dough", "Make tea", "Prevent Coronavirus"]
    assert all(row["validated"] for row in rows)
    export = admin_client.get(reverse("annotation:study_export_csv", args=[study.slug]))
    assert export.status_code == 200 and b"Prevent Coronavirus" in export.content


def test_the_builder_makes_a_multiple_choice_study(admin_client: Client) -> None:
    make_task_set("built")
    form = admin_client.get(reverse("annotation:study_create"), {"kind": "multiple_choice"})
    assert form.status_code == 200 and 'name="task_set"' in form.content.decode()
    initial = form.context["form"].fields
    data = {
        "kind": "multiple_choice", "title": "V", "slug": "v", "task_set": "built",
        "tasks": ["step_inference"], "seed": 0, "annotators_per_item": 3, "items_per_participant": 10,
        "min_dwell_seconds": 5,
        "estimated_item_minutes": 0.4, "attention_checks": 0, "attention_check_every": 0,
        "instructions": initial["instructions"].initial, "consent_text": "Consent.",
        "training_text": initial["training_text"].initial,
        "comprehension_questions": initial["comprehension_questions"].initial,
    }  # fmt: skip
    assert admin_client.post(reverse("annotation:study_create"), data).status_code == 302
    assert Study.objects.get(slug="v").items.count() == 2  # the two step-inference test examples
    detail = admin_client.get(reverse("annotation:study_detail", args=["v"]))
    assert detail.status_code == 200 and "Multiple choice" in detail.content.decode()


def test_the_task_sets_validated_test_set_comes_from_its_studies(admin_client: Client) -> None:
    study = make_mc_study()
    url = reverse("goal_step:task_set_test_jsonl", args=["tasks"])
    assert admin_client.get(url, {"validated": "1"}).status_code == 400  # no answers yet: not validated
    for worker in (1, 2, 3):
        answer_all(study, worker, {"Make tea": 0} if worker == 2 else {})
    lines = b"".join(admin_client.get(url, {"validated": "1"}).streaming_content).splitlines()
    prompts = sorted(json.loads(line)["prompt"] for line in lines)
    assert prompts == ["Bake bread", "Knead the dough", "Prevent Coronavirus"]  # "Make tea": one wrong
    page = admin_client.get(reverse("goal_step:task_set", args=["tasks"])).content.decode()
    assert "Models on the validated test examples" in page


# --- more options than letters (#19 item 4) ---------------------------------------------------------------


def test_options_are_lettered_a_to_z_then_as_spreadsheet_columns() -> None:
    letters = [option_letter(i) for i in (0, 1, 25, 26, 27, 51, 52, 701, 702)]
    assert letters == ["A", "B", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA"]


def test_a_study_over_an_example_with_more_than_26_candidates_is_refused() -> None:
    make_task_set()
    TaskExample.objects.filter(prompt="Bake bread").update(candidates=[f"Step {i}" for i in range(27)])
    with pytest.raises(ValidationError, match=r"'task_set': \[\"step_inference example 1 of 'tasks' has 27"):
        services.study_create(
            title="V",
            slug="v",
            kind=StudyKind.MULTIPLE_CHOICE,
            selection=services.Selection(task_set="tasks"),
        )
    assert not Study.objects.exists()  # study_create is one transaction


def test_the_item_page_never_fails_once_the_lease_is_taken(client: Client) -> None:
    """An example changed after the study was built (by hand, or stored before the bound): 30 candidates,
    and an attention check naming an option that no longer exists. The page shows every option."""
    study = make_mc_study(attention_checks=1, every=1)
    TaskExample.objects.update(candidates=[f"Option text {i}" for i in range(30)])
    StudyItem.objects.filter(study=study, is_attention_check=True).update(payload={"expects": 99})
    qualify(client, study)
    for _ in range(study.items.count()):
        assignment = _item(client, study)
        page = client.get(reverse("annotator:item", args=[study.slug]))
        html = page.content.decode()
        assert page.status_code == 200 and '>AD</span> <span class="mc-text">Option text 29<' in html
        answer = client.post(url("submit", study, assignment), {"choice": "29"})  # type: ignore[arg-type]
        assert answer.status_code == 302
    assert Annotation.objects.filter(answer__choice=29).count() == study.items.count()
