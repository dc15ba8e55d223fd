"""LLM step-type classification as jobs (#13): classifiers from configs, jobs against the loopback
OpenAI-compatible server (real HTTP, run in-process as the Celery task runs them), what is stored for each
kind of answer, failed requests, resume and retry; the Table 3 figures on crafted predictions against a
study labelled through the real annotation services, each checked against a hand computation; the page,
the API and the command."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.utils import timezone

from annotation.base.job_kinds import CLASSIFY_STEPS
from annotation.base.models import Study
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
from annotation.kinds.step_types.models import (
    StepCandidate,
    StepTypeClassifier,
    StepTypePrediction,
)
from annotation.kinds.step_types.spec import StepTypesSubmission
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.services import NothingToRetry, job_retry_failed
from h2e_site.llm.config import ConfigError
from h2e_site.llm.prompts import PromptChanged, prompt_sha256
from tests.annotation.conftest import qualified, read_everything
from tests.factories import make_generation, make_generator, make_procedure, make_topic
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
    return labelled_study()


def labelled_study() -> Study:
    """Two procedures of two topics, annotated through the services (the fixture `study`)."""
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
