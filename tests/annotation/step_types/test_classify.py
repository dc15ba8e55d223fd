"""LLM step-type classification as jobs (#13): classifiers from configs, jobs against the loopback
OpenAI-compatible server (real HTTP, run in-process as the Celery task runs them), what is stored for each
kind of answer, failed requests, resume and retry; the Table 3 figures on crafted predictions against a
study labelled through the real annotation services, each checked against a hand computation; the page,
the API and the command."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.base.job_kinds import CLASSIFY_STEPS
from annotation.base.models import Annotation, Study
from annotation.base.registry import StudyKind
from annotation.flow import services
from annotation.kinds.step_types.candidates import StepType
from annotation.kinds.step_types.classify import (
    NothingToClassify,
    classifier_for_config,
    classify_job_create,
    classify_job_run,
)
from annotation.kinds.step_types.evaluation import step_type_models_table
from annotation.kinds.step_types.measures import ALL
from annotation.kinds.step_types.models import (
    StepCandidate,
    StepTypeClassifier,
    StepTypeLabel,
    StepTypeLabelSet,
    StepTypePrediction,
)
from annotation.kinds.step_types.spec import StepTypesSubmission, procedure_candidates
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.services import NothingToRetry, job_retry_failed
from h2e_site.llm.config import ConfigError
from h2e_site.llm.prompts import PromptChanged, prompt_sha256
from h2e_site.stats import wilson_interval
from tests.annotation.conftest import qualified, read_everything
from tests.factories import make_generation, make_generator, make_procedure, make_topic, make_user
from tests.llm_server import Fail, LoopbackLLM

pytestmark = pytest.mark.django_db

LENTILS = ["Rinse the lentils", "Soak them overnight", "Drain the water", "Simmer them for an hour"]
CANDLE = ["Wash your hands", "Light the candle", "Say the blessing", "Share the bread"]
# Who of the three annotators marks which candidate (everything else is unmarked: holds False).
MARKS = {
    "Cook lentils": {
        "sequential:0-1": {0, 1, 2},
        "sequential:1-2": {0, 1},
        "sequential:2-3": {2},
        "interchangeable@1:2-3": {0, 1},
        "optional@1:2": {1, 2},
    },
    "Light a candle": {
        "sequential:0-1": {0, 1, 2},
        "sequential:2-3": {0, 2},
        "interchangeable@0:1-2": {1, 2},
        "optional@0:1": {0},
    },
}


# --- a study labelled through the annotation services ------------------------------------------------------


def annotate(study: Study) -> None:
    """Three participants each label both procedures (MARKS) and pass the attention check in between,
    marking only its instructed candidate (those labels must never count)."""
    for n in range(3):
        participant = qualified(study, n + 1)
        while (assignment := services.assignment_next(participant=participant)) is not None:
            assignment = read_everything(assignment)
            item = assignment.item
            if item.is_attention_check:
                marks = {item.payload["expects"]: False}
            else:
                chosen = MARKS[item.procedure.goal]
                marks = {key: False for key, annotators in chosen.items() if n in annotators}
            submission = StepTypesSubmission(marks=marks, expert_knowledge=False, user_agent="test")
            services.annotation_submit(assignment=assignment, submission=submission)
            participant.refresh_from_db()


@pytest.fixture
def study() -> Study:
    health, religion = make_topic("Health"), make_topic("Religion")
    make_procedure(goal="Cook lentils", steps=LENTILS, topic=health)
    make_procedure(goal="Light a candle", steps=CANDLE, topic=religion)
    make_procedure(goal="Not in the study", steps=LENTILS, topic=make_topic("Sports"))
    study = services.study_create(
        title="Step types",
        slug="step-types",
        kind=StudyKind.STEP_TYPES,
        selection=services.Selection(topic_ids=[health.pk, religion.pk]),
        attention_checks=1,
        attention_check_every=1,
        annotators_per_item=3,
        items_per_participant=0,
        min_dwell_seconds=0,
    )
    annotate(study)
    return study


def candidate(goal: str, key: str) -> StepCandidate:
    return StepCandidate.objects.get(procedure__goal=goal, key=key)


# --- the loopback classifier --------------------------------------------------------------------------------


def config_file(server: LoopbackLLM, tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "loopback.yaml"
    config = {
        "model": "loopback-model",
        "backend": "openai",
        "provider": "loopback",
        "base_url": server.base_url,
        "max_new_tokens": 16,
        "max_concurrency": 4,
        "max_attempts": 2,
        "request_timeout_s": 10,
        "max_requests_per_minute": 100_000,
        "max_tokens_per_minute": 100_000_000,
        **extra,
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def loopback_classifier(server: LoopbackLLM, tmp_path: Path, **extra: Any) -> StepTypeClassifier:
    return classifier_for_config(config_file(server, tmp_path, **extra))


def prompt_of(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def asked(body: dict[str, Any]) -> tuple[str, str]:
    """(task, question) of a request: the last task and the last <question> of the prompt (the examples
    come first)."""
    prompt = prompt_of(body)
    task = re.findall(r"<<Task: (.*),\n", prompt)[-1]
    question = re.findall(r"^<(.*)>$", prompt, flags=re.MULTILINE)[-1]
    return task, question


QUESTIONS = {
    "sequential:1-2": "Is the step pair (1, 2) sequential?",
    "interchangeable@0:1-2": "At Step 0, is the step pair (1, 2) interchangeable?",
    "optional@1:2": "At Step 1, is Step 2 optional, so that one can go from Step 1 directly to Step 3?",
}


def answering(answers: dict[tuple[str, str], str], default: str = "No.") -> Callable[[dict[str, Any]], str]:
    """A responder answering by (task, candidate key); anything else gets `default`."""
    by_question = {(task, QUESTIONS[key]): text for (task, key), text in answers.items()}
    return lambda body: by_question.get(asked(body), default)


# --- classifiers --------------------------------------------------------------------------------------------


def test_it_makes_one_classifier_per_config_and_prompts(llm_server: LoopbackLLM, tmp_path: Path) -> None:
    classifier = loopback_classifier(llm_server, tmp_path)
    assert re.fullmatch(r"[0-9a-f]{12}", classifier.classifier_id)
    assert (classifier.model, classifier.backend, classifier.is_demo_model) == (
        "loopback-model",
        "openai",
        False,
    )
    templates = json.loads(classifier.prompt_text)
    assert set(templates) == {"sequential", "interchangeable", "optional"}
    assert templates["sequential"] == (Path("prompts/step_types/sequential.txt")).read_text(encoding="utf-8")
    assert classifier.prompt_sha256 == prompt_sha256(classifier.prompt_text)
    assert "prompt_path" not in classifier.config

    # Operational fields keep the id; decoding makes another classifier.
    again = loopback_classifier(llm_server, tmp_path, max_concurrency=1)
    assert again.pk == classifier.pk and again.config["max_concurrency"] == 1
    assert loopback_classifier(llm_server, tmp_path, temperature=0.5).pk != classifier.pk
    assert loopback_classifier(llm_server, tmp_path, json_schema=True).pk != classifier.pk


def test_it_refuses_a_prompt_path_and_takes_demo_flags_from_the_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: m\nbackend: local\nprompt_path: prompts/judge.txt\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"{bad}: prompt_path: not used for step types"):
        classifier_for_config(bad)
    demo = classifier_for_config(Path("configs/step_types/smollm2-local.yaml"))
    assert (demo.model, demo.backend, demo.is_demo_model) == ("SmolLM2-135M-Instruct", "local", True)


# --- jobs ---------------------------------------------------------------------------------------------------


def test_it_classifies_every_candidate_of_the_study_in_its_context_window(
    study: Study, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    llm_server.responder = answering(
        {
            ("Cook lentils", "sequential:1-2"): "Yes",
            ("Cook lentils", "interchangeable@0:1-2"): '{"answer": "yes"}',
            ("Light a candle", "optional@1:2"): "No. It cannot be skipped.",
        }
    )
    classifier = loopback_classifier(llm_server, tmp_path)
    job = classify_job_create(classifier=classifier, study=study)
    expected = [
        c.pk
        for goal in ("Cook lentils", "Light a candle")
        for c in StepCandidate.objects.filter(procedure__goal=goal).order_by("position")
    ]
    assert (job.kind, job.total, job.parameters["items"]) == (CLASSIFY_STEPS, 14, expected)
    assert job.parameters["backend"] == "openai" and job.parameters["study"] == study.pk

    job = classify_job_run(job_id=job.pk)

    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 14, 0)
    assert len(llm_server.completion_requests) == 14
    predictions = StepTypePrediction.objects.filter(classifier=classifier)
    assert predictions.count() == 14 and set(predictions.values_list("job_id", flat=True)) == {job.pk}
    holding = {(p.candidate.procedure.goal, p.candidate.key) for p in predictions.filter(holds=True)}
    assert holding == {("Cook lentils", "sequential:1-2"), ("Cook lentils", "interchangeable@0:1-2")}
    kept = predictions.get(candidate=candidate("Light a candle", "optional@1:2"))
    assert (kept.holds, kept.raw_output) == (False, "No. It cannot be skipped.")

    prompts = {asked(r.body): prompt_of(r.body) for r in llm_server.completion_requests}
    pair = prompts[("Cook lentils", QUESTIONS["sequential:1-2"])]
    window = pair.rsplit("Here is another example:", 1)[1]
    assert "Step 1: Soak them overnight ->\nStep 2: Drain the water>>" in window
    assert LENTILS[0] not in window and LENTILS[3] not in window  # the pair only
    anchored = prompts[("Light a candle", QUESTIONS["optional@1:2"])].rsplit("Here is another example:", 1)[1]
    assert "Step 1: Light the candle ->\nStep 2: Say the blessing ->\nStep 3: Share the bread>>" in anchored
    assert CANDLE[0] not in anchored  # the anchor and its two succeeding steps
    body = llm_server.completion_requests[0].body
    assert body["max_tokens"] == 16 and "response_format" not in body


def test_it_sends_the_prompts_the_classifier_stored(
    study: Study, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    classifier = loopback_classifier(llm_server, tmp_path)
    templates = json.loads(classifier.prompt_text)
    templates = {name: f"STORED {name}\n" + text for name, text in templates.items()}
    classifier.prompt_text = json.dumps(templates, sort_keys=True, ensure_ascii=False, indent=2)
    classifier.save(update_fields=["prompt_text"])
    with pytest.raises(PromptChanged, match=classifier.classifier_id):
        classify_job_create(classifier=classifier, study=study)  # not the text its id hashed

    classifier.prompt_sha256 = prompt_sha256(classifier.prompt_text)
    classifier.save(update_fields=["prompt_sha256"])
    classify_job_run(job_id=classify_job_create(classifier=classifier, study=study).pk)
    sent = {prompt_of(r.body).split("\n", 1)[0] for r in llm_server.completion_requests}
    assert sent == {"STORED sequential", "STORED interchangeable", "STORED optional"}


def test_it_stores_an_unparsable_answer_as_none_and_counts_it_apart(
    study: Study, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    llm_server.responder = answering({("Cook lentils", "sequential:1-2"): "Yes and no, it depends."})
    classifier = loopback_classifier(llm_server, tmp_path)
    job = classify_job_run(job_id=classify_job_create(classifier=classifier, study=study).pk)
    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 14, 0)
    unread = StepTypePrediction.objects.get(classifier=classifier, holds=None)
    assert unread.candidate == candidate("Cook lentils", "sequential:1-2")
    assert unread.raw_output == "Yes and no, it depends." and unread.parse_failed

    (figures,) = step_type_models_table(study=study).models
    assert (figures.overall.n_items, figures.overall.n_predicted, figures.overall.n_unparsable) == (14, 14, 1)
    assert figures.columns["Health"].n_unparsable == 1 and figures.columns["Religion"].n_unparsable == 0
    # Gold says (s1, s2) of the lentils is sequential: the unparsable answer is a false negative. Every
    # other answer is "no": sequential tp 0, fn 4 -> P = R = F1 = 0.
    assert figures.overall.evaluation.per_type[StepType.SEQUENTIAL].fn == 4


def test_an_http_error_is_a_failed_item_never_a_prediction_and_is_retried(
    study: Study, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    classifier = loopback_classifier(llm_server, tmp_path, max_concurrency=1)
    llm_server.responder = lambda body: "No."
    llm_server.script(Fail(400, message="context too long"))
    job = classify_job_run(job_id=classify_job_create(classifier=classifier, study=study).pk)

    assert job is not None and (job.status, job.done, job.failed) == (JobStatus.SUCCEEDED, 13, 1)
    assert job.outcome == "Succeeded, 1 failed" and "context too long" in job.error
    (failed,) = job.parameters["failed_items"]
    assert failed == job.parameters["items"][0]  # one at a time: the first request got the error
    assert not StepTypePrediction.objects.filter(candidate_id=failed).exists()
    assert StepTypePrediction.objects.count() == 13
    (figures,) = step_type_models_table(study=study).models
    assert (figures.overall.n_predicted, figures.overall.n_unparsable) == (13, 0)  # missing, not unparsable

    again = job_retry_failed(job=job)
    assert (again.parameters["items"], again.parameters["retry_of"]) == ([failed], job.pk)
    again = classify_job_run(job_id=again.pk)
    assert again is not None and (again.status, again.done, again.failed) == (JobStatus.SUCCEEDED, 1, 0)
    assert StepTypePrediction.objects.count() == 14
    with pytest.raises(NothingToRetry):
        job_retry_failed(job=job)  # classified since
    with pytest.raises(NothingToClassify):
        classify_job_create(classifier=classifier, study=study)


def test_it_resumes_a_crashed_job_without_asking_anything_again(
    study: Study, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    classifier = loopback_classifier(llm_server, tmp_path)
    job = classify_job_create(classifier=classifier, study=study)
    items = job.parameters["items"]
    # The crashed run: it answered two candidates and lost one to an API error, then its worker died.
    started = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING,
        started_at=started,
        done=2,
        parameters={**job.parameters, "failed_items": [items[2]]},
    )
    for pk in items[:2]:
        StepTypePrediction.objects.create(
            classifier=classifier, candidate_id=pk, holds=True, raw_output="yes", job=job
        )

    job = classify_job_run(job_id=job.pk)

    assert job is not None and (job.status, job.total, job.done, job.failed) == (
        JobStatus.SUCCEEDED,
        14,
        13,
        1,
    )
    assert job.started_at == started
    assert len(llm_server.completion_requests) == 11
    asked_for = {
        int(k) for k in StepTypePrediction.objects.filter(job=job).values_list("candidate_id", flat=True)
    }
    assert items[2] not in asked_for and len(asked_for) == 13
    assert classify_job_run(job_id=job.pk) == job  # finished: nothing is sent again
    assert len(llm_server.completion_requests) == 11


def test_a_job_only_asks_what_the_classifier_has_not_answered(
    study: Study, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    classifier = loopback_classifier(llm_server, tmp_path)
    answered = candidate("Cook lentils", "optional@0:1")
    StepTypePrediction.objects.create(classifier=classifier, candidate=answered, holds=False)
    other = StepTypeClassifier.objects.create(classifier_id="other", model="other", imported=True)
    StepTypePrediction.objects.create(classifier=other, candidate=candidate("Cook lentils", "optional@1:2"))
    job = classify_job_create(classifier=classifier, study=study)
    assert job.total == 13 and answered.pk not in job.parameters["items"]
    with pytest.raises(ConfigError, match="imported predictions have no model config"):
        classify_job_create(classifier=other, study=study)
    make_generation(generator=make_generator(), procedure=make_procedure(goal="Repot a plant"))  # an item
    critical = services.study_create(
        title="Critical", slug="critical", selection=services.Selection(), attention_check_every=0
    )
    with pytest.raises(ValueError, match="not a step-types study"):
        classify_job_create(classifier=classifier, study=critical)


def test_it_makes_the_candidates_of_procedures_nobody_annotated_yet(
    study: Study, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    sports = make_topic("Sports")
    assert not StepCandidate.objects.filter(procedure__topic=sports).exists()
    fresh = services.study_create(
        title="Fresh",
        slug="fresh",
        kind=StudyKind.STEP_TYPES,
        selection=services.Selection(topic_ids=[sports.pk]),
        attention_check_every=0,
    )
    job = classify_job_create(classifier=loopback_classifier(llm_server, tmp_path), study=fresh)
    made = list(StepCandidate.objects.filter(procedure__topic=sports).order_by("position"))
    assert job.total == 7 and job.parameters["items"] == [c.pk for c in made]


# --- Table 3 on crafted predictions -------------------------------------------------------------------------

CRAFTED = {  # (goal, key): holds (None: unparsable); the lentils' optional@1:2 is left out (missing)
    ("Cook lentils", "sequential:0-1"): True,
    ("Cook lentils", "sequential:1-2"): False,
    ("Cook lentils", "sequential:2-3"): True,
    ("Cook lentils", "interchangeable@0:1-2"): True,
    ("Cook lentils", "interchangeable@1:2-3"): True,
    ("Cook lentils", "optional@0:1"): None,
    ("Cook lentils", "optional@1:2"): True,
    ("Light a candle", "sequential:0-1"): True,
    ("Light a candle", "sequential:1-2"): False,
    ("Light a candle", "sequential:2-3"): True,
    ("Light a candle", "interchangeable@0:1-2"): None,
    ("Light a candle", "interchangeable@1:2-3"): False,
    ("Light a candle", "optional@0:1"): True,
}


@pytest.fixture
def crafted(study: Study) -> StepTypeClassifier:
    classifier = StepTypeClassifier.objects.create(
        classifier_id="crafted0001", model="org/crafted", imported=True, is_demo_model=True
    )
    for (goal, key), holds in CRAFTED.items():
        StepTypePrediction.objects.create(classifier=classifier, candidate=candidate(goal, key), holds=holds)
    return classifier


def test_it_scores_the_crafted_predictions_as_worked_out_by_hand(
    study: Study, crafted: StepTypeClassifier
) -> None:
    table = step_type_models_table(study=study)
    # Gold (strict majority of three): lentils seq 0-1, 1-2, int@1, opt@1 hold; candle seq 0-1, 2-3, int@0.
    assert (table.gold.n_items, table.gold.n_procedures, table.gold.n_annotators, table.gold.n_ties) == (
        14,
        2,
        3,
        0,
    )
    assert table.gold.positives_by_type == {
        StepType.SEQUENTIAL: 4,
        StepType.INTERCHANGEABLE: 2,
        StepType.OPTIONAL: 1,
    }
    assert table.gold.items_by_type == {
        StepType.SEQUENTIAL: 6,
        StepType.INTERCHANGEABLE: 4,
        StepType.OPTIONAL: 4,
    }
    assert table.topics == [ALL, "Health", "Religion"]
    (figures,) = table.models
    overall = figures.overall
    assert (overall.n_items, overall.n_predicted, overall.n_unparsable, overall.n_missing) == (14, 13, 2, 1)
    scores = overall.evaluation.per_type
    # Sequential: tp lentils 0-1, candle 0-1, 2-3; fp lentils 2-3; fn lentils 1-2; tn candle 1-2.
    assert (scores[StepType.SEQUENTIAL].tp, scores[StepType.SEQUENTIAL].fp) == (3, 1)
    assert (scores[StepType.SEQUENTIAL].fn, scores[StepType.SEQUENTIAL].tn) == (1, 1)
    seq = scores[StepType.SEQUENTIAL]
    assert (seq.precision, seq.recall, seq.f1) == pytest.approx((3 / 4, 3 / 4, 3 / 4))
    # Interchangeable: tp lentils @1; fp lentils @0; fn candle @0 (unparsable); tn candle @1.
    inter = scores[StepType.INTERCHANGEABLE]
    assert (inter.tp, inter.fp, inter.fn, inter.tn) == (1, 1, 1, 1)
    assert (inter.precision, inter.recall, inter.f1) == pytest.approx((1 / 2, 1 / 2, 1 / 2))
    # Optional: tp lentils @1; fp candle @0; tn lentils @0 (unparsable) and candle @1 (missing).
    opt = scores[StepType.OPTIONAL]
    assert (opt.tp, opt.fp, opt.fn, opt.tn) == (1, 1, 0, 2)
    assert (opt.precision, opt.recall, opt.f1) == pytest.approx((1 / 2, 1, 2 / 3))
    macro = overall.evaluation.all
    assert (macro.precision, macro.recall, macro.f1) == pytest.approx(
        ((3 / 4 + 1 / 2 + 1 / 2) / 3, (3 / 4 + 1 / 2 + 1) / 3, (3 / 4 + 1 / 2 + 2 / 3) / 3)
    )
    # Health (the lentils): seq tp 1 fp 1 fn 1 -> 1/2; int tp 1 fp 1 -> P 1/2 R 1 F1 2/3; opt tp 1 -> 1.
    health = figures.columns["Health"]
    assert [health.evaluation.per_type[t].f1 for t in StepType] == pytest.approx([1 / 2, 2 / 3, 1])
    assert health.evaluation.all.f1 == pytest.approx((1 / 2 + 2 / 3 + 1) / 3)
    assert (health.n_items, health.n_predicted, health.n_unparsable) == (7, 7, 1)
    # Religion (the candle): seq all right -> 1; int only a fn and a tn -> 0; opt a fp and a tn -> 0.
    religion = figures.columns["Religion"]
    assert [religion.evaluation.per_type[t].f1 for t in StepType] == pytest.approx([1, 0, 0])
    assert religion.evaluation.all.f1 == pytest.approx(1 / 3)
    assert (religion.n_items, religion.n_predicted, religion.n_unparsable) == (7, 6, 1)
    # Contradiction: the model's sequential pairs with a decided counterpart are lentils 2-3 (int@1 holds:
    # both) and candle 2-3 (int@1 does not) -> 1 of 2; the humans' lentils 1-2 and candle 2-3 -> 0 of 2.
    assert (figures.contradiction.both, figures.contradiction.comparable) == (1, 2)
    assert (table.gold.contradiction.both, table.gold.contradiction.comparable) == (0, 2)


def test_it_scores_against_an_imported_label_set_on_the_study_procedures(
    study: Study, crafted: StepTypeClassifier
) -> None:
    label_set = StepTypeLabelSet.objects.create(name="sio-sample")
    lentils = procedure_candidates(candidate("Cook lentils", "sequential:0-1").procedure)
    for annotator in ("x", "y"):  # both say only the lentils' 2-3 pair is sequential
        StepTypeLabel.objects.bulk_create(
            StepTypeLabel(
                candidate=c, label_set=label_set, annotator=annotator, holds=c.key == "sequential:2-3"
            )
            for c in lentils
        )
    table = step_type_models_table(study=study, source="set:sio-sample")
    assert [s.key for s in table.sources] == ["study", "set:sio-sample"]
    assert (table.gold.n_items, table.gold.n_annotators, table.topics) == (7, 2, [ALL, "Health"])
    (figures,) = table.models
    seq = figures.overall.evaluation.per_type[StepType.SEQUENTIAL]
    assert (seq.tp, seq.fp, seq.fn, seq.tn) == (1, 1, 0, 1)  # predicted 0-1 and 2-3, gold 2-3 only
    with pytest.raises(LookupError):
        step_type_models_table(study=study, source="set:nope")


def test_attention_check_labels_never_count(study: Study) -> None:
    attention = Annotation.objects.filter(study=study, item__is_attention_check=True)
    assert attention.count() == 3 and StepTypeLabel.objects.filter(annotation__in=attention).count() == 21
    assert step_type_models_table(study=study).gold.n_annotators == 3  # and no "labelled twice" error


# --- the page -----------------------------------------------------------------------------------------------


def page_url(study: Study) -> str:
    return reverse("annotation:step_type_models", args=[study.slug])


def test_it_routes_the_page_and_the_api_where_the_brief_says(study: Study) -> None:
    assert page_url(study) == "/studies/step-types/step-types/models/"
    assert (
        reverse("api:study-step-type-models", args=[study.slug])
        == "/api/studies/step-types/step-types/models/"
    )


def test_the_page_shows_table_3_per_topic_and_the_demo_note(
    staff: Client, study: Study, crafted: StepTypeClassifier, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(12):
        response = staff.get(page_url(study))
    assert response.status_code == 200
    html = response.content.decode()
    assert "org/crafted" in html and "crafted0001" in html
    assert "<strong>75.0</strong>" in html  # sequential F1
    assert "58.3" in html and "<strong>63.9</strong>" in html  # All P and F1
    assert "<strong>72.2</strong>" in html and "<strong>33.3</strong>" in html  # Health and Religion All F1
    assert "proves the plumbing" in html and "demo model - predictions not meaningful" in html
    assert 'id="step-type-results"' in html and "<h3>Health" in html and "<h3>Religion" in html
    assert "Starting a classification needs" in html  # staff without the run permission: no form


def test_the_page_has_no_demo_note_without_a_demo_model(staff: Client, study: Study) -> None:
    html = staff.get(page_url(study)).content.decode()
    assert "proves the plumbing" not in html and "No model has classified these candidates yet" in html


def test_the_htmx_update_gets_the_figures_fragment_only(
    staff: Client, study: Study, crafted: StepTypeClassifier
) -> None:
    response = staff.get(page_url(study), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="step-type-results")
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<div id="step-type-results"')
    assert "<html" not in html and "Classify with a model" not in html and "<strong>75.0</strong>" in html
    assert "HX-Request" in response["Vary"]


def test_the_page_and_its_start_are_refused_to_outsiders(client: Client, study: Study) -> None:
    classify = reverse("annotation:step_type_models_classify", args=[study.slug])
    assert client.get(page_url(study)).status_code == 302  # anonymous: the login page
    client.force_login(make_user())
    assert client.get(page_url(study)).status_code == 403
    assert client.post(classify, {"config": "smollm2-local.yaml"}).status_code == 403
    assert not Job.objects.exists()


def test_the_page_refuses_wrong_methods_and_unknown_things(staff: Client, study: Study) -> None:
    assert staff.post(page_url(study)).status_code == 405
    assert staff.get(reverse("annotation:step_type_models_classify", args=[study.slug])).status_code == 405
    assert staff.get(page_url(study), {"gold": "set:nope"}).status_code == 400
    assert staff.get(reverse("annotation:step_type_models", args=["nope"])).status_code == 404


def test_starting_a_classification_needs_the_run_permission_and_shows_the_live_job(
    staff: Client, runner: Client, study: Study
) -> None:
    classify = reverse("annotation:step_type_models_classify", args=[study.slug])
    assert staff.post(classify, {"config": "smollm2-local.yaml"}).status_code == 403
    runner_html = runner.get(page_url(study)).content.decode()
    assert 'value="smollm2-local.yaml"' in runner_html and 'value="gpt-4.1-openai.yaml"' in runner_html
    # #31 item 6: the form starts on the embedded model, not on a config that needs an API key
    selected = re.findall(r'<option value="([^"]+)"[^>]* selected', runner_html)
    assert selected == ["smollm2-local.yaml"], selected
    assert runner.post(classify, {"config": "../judges/smollm2-local.yaml"}).status_code == 400

    response = runner.post(classify, {"config": "smollm2-local.yaml"}, follow=True)
    job = Job.objects.get()
    assert (job.kind, job.total, job.parameters["backend"]) == (CLASSIFY_STEPS, 14, "local")
    html = response.content.decode()
    assert f"Started job #{job.pk}: 14 candidate(s)" in html
    row = reverse("jobs:job_detail", args=[job.pk])
    assert f'hx-get="{row}" hx-trigger="every 2s"' in html  # the live row polls the Jobs endpoint
    assert "demo model" in html and "SmolLM2-135M-Instruct" in html

    # The Jobs endpoint's row of it names the model and links back here.
    fragment = runner.get(row, HTTP_HX_REQUEST="true").content.decode()
    assert "SmolLM2-135M-Instruct" in fragment and page_url(study) in fragment

    # Once the model has answered everything, nothing is left to start.
    classifier = StepTypeClassifier.objects.get()
    StepTypePrediction.objects.bulk_create(
        StepTypePrediction(classifier=classifier, candidate_id=pk, holds=False)
        for pk in job.parameters["items"]
    )
    html = runner.post(classify, {"config": "smollm2-local.yaml"}, follow=True).content.decode()
    assert "nothing to classify" in html and Job.objects.count() == 1


# --- the API ------------------------------------------------------------------------------------------------


def test_the_api_returns_the_same_figures(staff: Client, study: Study, crafted: StepTypeClassifier) -> None:
    response = staff.get(reverse("api:study-step-type-models", args=[study.slug]))
    assert response.status_code == 200
    body = response.json()
    assert body["study"] == study.slug and body["gold_source"]["key"] == "study"
    assert body["topics"] == ["all", "Health", "Religion"]
    assert body["gold"]["positives_by_type"] == {"sequential": 4, "interchangeable": 2, "optional": 1}
    contradiction = body["gold"]["contradiction"]
    assert {k: contradiction[k] for k in ("rate", "both", "comparable", "sequential")} == {
        "rate": 0.0,
        "both": 0,
        "comparable": 2,
        "sequential": 4,
    }
    # Both bases with their Wilson intervals: 0 of 2 comparable pairs, 0 of all 4 sequential pairs.
    low, high = wilson_interval(0, 4) or (None, None)
    assert contradiction["of_sequential"] == {"k": 0, "n": 4, "rate": 0.0, "ci_low": low, "ci_high": high}
    assert contradiction["of_comparable"]["n"] == 2
    (model,) = body["models"]
    assert (model["classifier_id"], model["is_demo_model"], model["imported"]) == ("crafted0001", True, True)
    overall = model["overall"]
    assert (overall["n_items"], overall["n_predicted"], overall["n_unparsable"], overall["n_missing"]) == (
        14,
        13,
        2,
        1,
    )
    assert overall["scores"]["sequential"]["f1"] == pytest.approx(0.75)
    assert overall["scores"]["optional"] == {
        "precision": 0.5,
        "recall": 1.0,
        "f1": pytest.approx(2 / 3),
        "tp": 1,
        "fp": 1,
        "fn": 0,
        "tn": 2,
        "n": 4,
    }
    assert overall["scores"]["all"]["f1"] == pytest.approx((3 / 4 + 1 / 2 + 2 / 3) / 3)
    assert [c["topic"] for c in model["by_topic"]] == ["Health", "Religion"]
    assert model["contradiction"]["rate"] == 0.5


def test_the_api_is_staff_only_and_read_only(client: Client, staff: Client, study: Study) -> None:
    url = reverse("api:study-step-type-models", args=[study.slug])
    anonymous = Client()
    assert anonymous.get(url).status_code in (401, 403)
    outsider = Client()
    outsider.force_login(make_user())
    assert outsider.get(url).status_code == 403
    assert staff.post(url).status_code == 405
    assert staff.get(url, {"gold": "set:nope"}).status_code == 404  # a gold source that is not there
    assert staff.get(reverse("api:study-step-type-models", args=["nope"])).status_code == 404
    schema = staff.get(reverse("api-schema"), {"format": "json"}).json()
    assert "/api/studies/{slug}/step-types/models/" in schema["paths"]


def test_post_api_jobs_starts_a_classification(runner: Client, study: Study) -> None:
    classifier = classifier_for_config(Path("configs/step_types/smollm2-local.yaml"))
    body = {"kind": "classify_steps", "classifier_id": classifier.classifier_id, "study": study.slug}
    response = runner.post("/api/jobs/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.kind, job.total, job.created_by_id) == (
        CLASSIFY_STEPS,
        14,
        response.wsgi_request.user.pk,
    )
    bad = runner.post("/api/jobs/", {**body, "study": "nope"}, content_type="application/json")
    assert bad.status_code == 400 and "study" in bad.json()


# --- the command --------------------------------------------------------------------------------------------


def test_the_command_starts_a_job_and_names_a_bad_config(
    study: Study, llm_server: LoopbackLLM, tmp_path: Path
) -> None:
    config = config_file(llm_server, tmp_path)
    out = io.StringIO()
    call_command("classify_steps", "--study", study.slug, "--config", str(config), stdout=out)
    job = Job.objects.get()
    assert out.getvalue().startswith(
        f"job {job.pk}: classify the step types of study {study.slug} with loopback"
    )
    assert (job.kind, job.total) == (CLASSIFY_STEPS, 14)
    with pytest.raises(CommandError, match="no study 'nope'"):
        call_command("classify_steps", "--study", "nope", "--config", str(config))
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: m\nbackend: deluge\n", encoding="utf-8")
    with pytest.raises(CommandError, match=f"{bad}: provider: "):
        call_command("classify_steps", "--study", study.slug, "--config", str(bad))


@pytest.mark.django_db(transaction=True)
def test_the_command_waits_for_the_job_with_a_progress_bar(
    study: Study,
    llm_server: LoopbackLLM,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from h2e_site.celery import app

    out, err = io.StringIO(), io.StringIO()
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True  # the worker is this process: the job runs when it is enqueued
    try:
        call_command(
            "classify_steps",
            "--study",
            study.slug,
            "--config",
            str(config_file(llm_server, tmp_path)),
            "--wait",
            stdout=out,
            stderr=err,
        )
    finally:
        app.conf.task_always_eager = eager
    job = Job.objects.get()
    assert f"job {job.pk} succeeded: 14 done, 0 failed of 14" in out.getvalue()
    assert "14/14" in capsys.readouterr().err  # the progress bar (tqdm, on stderr)
    assert StepTypePrediction.objects.count() == 14
    out = io.StringIO()
    call_command(
        "classify_steps",
        "--study",
        study.slug,
        "--config",
        str(config_file(llm_server, tmp_path)),
        stdout=out,
    )
    assert "nothing to classify" in out.getvalue()
