"""Step-type classifiers scored against human labels (the SIO paper's Table 3, Figure 3): on crafted
predictions
worked out by hand, per type and topic, against a study's majority or an imported label set, and the models
page and its API; classification jobs are tests/annotation/step_types/test_classify.py's."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation.base.job_kinds import CLASSIFY_STEPS
from annotation.base.models import Annotation, Study
from annotation.kinds.step_types.candidates import StepType
from annotation.kinds.step_types.classify import (
    classifier_for_config,
)
from annotation.kinds.step_types.evaluation import step_type_models_table
from annotation.kinds.step_types.measures import ALL
from annotation.kinds.step_types.models import (
    StepTypeClassifier,
    StepTypeLabel,
    StepTypeLabelSet,
    StepTypePrediction,
)
from annotation.kinds.step_types.spec import procedure_candidates
from h2e_site.jobs.models import Job
from h2e_site.stats import wilson_interval
from tests.annotation.step_types.test_classify import (
    CRAFTED,
    candidate,
    config_file,
    labelled_study,
)
from tests.factories import make_user
from tests.llm_server import LoopbackLLM

pytestmark = pytest.mark.django_db


@pytest.fixture
def study() -> Study:
    return labelled_study()


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
