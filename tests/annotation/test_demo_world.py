"""The synthetic demo world (issue #31 item 1): `manage.py demo_setup` seeds generators, judges and studies
answered by simulated annotators, so that every figure of the demo has data; the rows are marked synthetic on
the pages; a second run changes nothing."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.db.models import Max, Model
from django.test import Client
from django.urls import reverse

from annotation.base.models import AnnotatedFailure, Annotation, Assignment, Participant, Study, StudyItem
from annotation.kinds.critical_failures.adjudication import review_queue
from annotation.kinds.critical_failures.agreement_data import study_agreement
from annotation.kinds.critical_failures.calibration.calibrated import calibrated_lines
from annotation.kinds.critical_failures.models import CalibrationDraw, GoldEvent
from annotation.kinds.critical_failures.report_card import report_card
from annotation.kinds.multiple_choice.validation import study_answers, validate
from annotation.kinds.pairwise.figures import study_figures
from annotation.kinds.step_types.agreement import step_types_agreement, study_labels
from annotation.kinds.step_types.evaluation import step_type_models_table
from annotation.kinds.step_types.models import StepTypeLabel, StepTypePrediction
from demo.world import CALIBRATION_SLUG, MULTIPLE_CHOICE_SLUG, PAIRWISE_SLUG, STEP_TYPES_SLUG
from demo.world import training_runs as synthetic_training
from demo.world.mining_run import RUN_NAME, mining_run_create
from goal_step.models import TaskExample, TaskSet
from h2e_site.synthetic import BADGE_TEXT, synthetic_badge
from judging.models import (
    CriticalFailure,
    Generation,
    Generator,
    Judge,
    Judgment,
    PairwiseJudgment,
    RewardCall,
    TrainingRun,
)
from judging.training.selectors import watch_of
from mining.config import RunConfig, run_config_from_mapping
from mining.models import NOT_SENT, STAGE_ORDER, MiningRun, Procedure, SourceDocument, Split, StageOutcome
from mining.runs import SyntheticRun, mine_job_run, mining_run_start
from mining.runs import mining_run_create as real_run_create
from mining.selectors import run_funnel, run_stage_drops, run_unstored
from tests.factories import make_procedure
from tests.llm_server import LoopbackLLM
from tests.mining.canned import canned_responder

pytestmark = pytest.mark.django_db
COUNTED: list[type[Model]] = [
    Procedure, Generator, Generation, Judge, Judgment, CriticalFailure, Study, StudyItem, Participant,
    Assignment, Annotation, AnnotatedFailure, GoldEvent, CalibrationDraw, StepTypeLabel, StepTypePrediction,
    PairwiseJudgment, TaskSet, TaskExample, MiningRun, StageOutcome, TrainingRun, RewardCall,
]  # fmt: skip
ROOT = Path(__file__).resolve().parents[2]
DEMO_DOCUMENTS = ROOT / "demo" / "mining" / "documents.jsonl"
CONFIGS = ROOT / "configs" / "mining"
# The synthetic run over the 14 sample documents, stage by stage: (entered, passed). Extraction drops the
# three pages without a procedure, the heuristics the three-step passport renewal, the LLM filter the
# router's clicks, the final validation the cover letter (its paragraphs in any order).
SYNTHETIC_FUNNEL = [(14, 11), (11, 10), (10, 9), (9, 9), (9, 9), (9, 8)]


def snapshot() -> dict[str, tuple[int, Any]]:
    """Each table's row count and largest id: what a second run must leave as it is."""
    return {
        model.__name__: (
            model._default_manager.count(),
            model._default_manager.aggregate(last=Max("pk"))["last"],
        )
        for model in COUNTED
    }


def demo_setup(var_dir: Path) -> str:
    out = io.StringIO()
    call_command("demo_setup", skip_migrate=True, stdout=out)
    return out.getvalue()


def test_it_seeds_a_synthetic_world_whose_figures_mean_something_once(
    staff: Client, runner: Client, tmp_path: Path, settings: Any
) -> None:
    settings.VAR_DIR = tmp_path
    output = demo_setup(tmp_path)

    built = re.search(r"Synthetic demo world \(built, ([0-9.]+) s, ([0-9.]+) s of CPU\)", output)
    assert built, output
    calibration, pairwise, step_types = (Study.objects.get(slug=slug) for slug in
                                         (CALIBRATION_SLUG, PAIRWISE_SLUG, STEP_TYPES_SLUG))  # fmt: skip
    assert Procedure.objects.filter(source_example_id__startswith="synthetic-demo-").count() >= 300
    assert Generator.objects.filter(model__startswith="synthetic/").count() >= 3
    assert Judge.objects.filter(model__startswith="synthetic/").count() == 2

    # the calibrated leaderboard: every synthetic generator x judge line calibrated, with its interval
    lines = [line for line in calibrated_lines() if line.generator_model.startswith("synthetic/")]
    assert len(lines) == 8
    for line in lines:
        score = line.overall
        assert score.estimate is not None and score.ci_low is not None and score.ci_high is not None, line
        assert score.ci_low < score.estimate < score.ci_high and 0 < score.estimate <= 1, line  # raw bounds
    # the judges rank the generators differently (the leaderboard differs by judge)
    orders = {
        judge: [line.generator_model for line in sorted(lines, key=lambda line: -(line.judge_only or 0))
                if line.judge_id == judge]
        for judge in {line.judge_id for line in lines}
    }  # fmt: skip
    assert len({tuple(order) for order in orders.values()}) == 2, orders

    # agreement: several annotators an item who disagree as people do
    agreement = study_agreement(study=calibration)
    assert agreement.alpha_binary is not None and 0.2 < agreement.alpha_binary < 0.9, agreement.alpha_binary
    assert agreement.n_annotators >= 10 and agreement.n_items == calibration.items.count()
    # seeded: the same figure on every build, whatever the database held before (annotators are named by the
    # study's slug, never its id)
    assert agreement.alpha_binary == pytest.approx(0.42298512010563205, abs=1e-9)
    assert {item.completed_count for item in calibration.items.all()} == {3}  # exactly k, through the engine
    # the adjudication queue: open items left, and the gold decisions recorded as events
    queue = review_queue(calibration)
    assert (
        queue.n_open > 0 and queue.n_decided == GoldEvent.objects.filter(item__study=calibration).count() > 0
    )
    # the judge's report card has its bias against people
    card = report_card(Judge.objects.get(model="synthetic/judge-strict"))
    assert card.bias is not None, card.no_bias_reason

    figures = study_figures(pairwise, resamples=50)
    assert figures.humans.n_answers == 3 * pairwise.items.count()
    assert not figures.humans.ranking.undefined and len(figures.humans.ranking.generators) == 4
    assert figures.humans.alpha.value is not None and 0 < figures.humans.alpha.value < 1
    assert figures.pointwise, "no pairwise-vs-pointwise figure"
    assert len(figures.judges) == 2, "no LLM twin"  # the synthetic judges, in both orders
    for twin in figures.judges:
        assert twin.n_answers == 2 * pairwise.items.count() and not twin.ranking.undefined

    models = step_type_models_table(study=step_types)
    assert models.models, "no step-type classifier to score"
    f1 = models.models[0].overall.evaluation.all.f1
    assert f1 is not None and 0 < f1 < 1, f1
    labels, task_labels, _ = study_labels(study=step_types)
    step_agreement = step_types_agreement(labels, task_labels)
    assert step_agreement.n_annotators >= 3 and step_agreement.n_procedures == step_types.items.count()

    # the pages say the data is synthetic, and the demo prints a link to each
    for url in (
        reverse("calibrated:leaderboard"),
        reverse("annotation:study_list"),
        reverse("annotation:study_detail", args=[calibration.slug]),
        reverse("agreement:study", args=[calibration.slug]),
        reverse("annotation:adjudication_queue", args=[calibration.slug]),
        reverse("agreement:study", args=[pairwise.slug]),
        reverse("annotation:step_type_models", args=[step_types.slug]),
        f"{reverse('judging:leaderboard')}?judge=synthetic-demo-judge-lenient",
        f"{reverse('judging:topic_heatmap')}?judge=synthetic-demo-judge-lenient",
    ):
        page = staff.get(url)
        assert page.status_code == 200, url
        assert BADGE_TEXT in page.content.decode(), f"no synthetic badge on {url}"
    calibrated = staff.get(reverse("calibrated:leaderboard")).content.decode()
    assert re.search(r"\b4 of 4 lines calibrated", calibrated), "the calibrated page shows no calibrated line"
    studies = (calibration, pairwise, step_types)
    for path in (reverse("calibrated:leaderboard"), *(f"/studies/{study.slug}/" for study in studies)):
        assert f": {path}\n" in output, f"no link to {path} in:\n{output}"

    # the worker's share, queued: the vectors of the new texts, and a goal-step task set for the Tasks page
    task_set = TaskSet.objects.get(name="synthetic-demo-tasks")
    assert task_set.job is not None and task_set.job.status == "queued"
    assert BADGE_TEXT in staff.get(reverse("goal_step:task_sets")).content.decode()

    assert_multiple_choice_study(staff, output)
    assert_synthetic_mining_run(staff, runner, output)
    assert_synthetic_training_runs(staff, output)
    assert (tmp_path / "demo-pages.txt").read_text().count("\t") == 7

    before = snapshot()
    again = demo_setup(tmp_path)
    assert "Synthetic demo world (already there, unchanged" in again
    assert snapshot() == before

    # a world seeded before the multiple-choice study and the mining run existed gets them, the rest as it was
    Study.objects.filter(slug=MULTIPLE_CHOICE_SLUG).delete()
    TaskSet.objects.filter(name="synthetic-demo-goal-step").delete()
    Procedure.objects.filter(mining_run__name=RUN_NAME).delete()
    MiningRun.objects.filter(name=RUN_NAME).delete()
    annotations = Annotation.objects.count()
    assert "Synthetic demo world (built" in demo_setup(tmp_path)
    assert Annotation.objects.count() == annotations + 36 * 3
    assert MiningRun.objects.get(name=RUN_NAME).kept_procedures.count() == 8
    assert Study.objects.filter(slug__startswith="synthetic-").count() == 4


def test_it_marks_only_synthetic_names() -> None:
    assert BADGE_TEXT in synthetic_badge("synthetic/judge-strict")
    assert BADGE_TEXT in synthetic_badge("synthetic-calibration")
    assert synthetic_badge("gpt-5") == "" and synthetic_badge(None) == ""
    assert synthetic_badge("paper-synthetic-biology") == ""


def test_it_refuses_to_rebuild_over_part_of_the_world(tmp_path: Path, settings: Any) -> None:
    settings.VAR_DIR = tmp_path
    make_procedure(source_example_id="synthetic-demo-0001")
    with pytest.raises(CommandError, match=r"synthetic demo world is incomplete .*synthetic-calibration"):
        call_command("demo_setup", skip_migrate=True, stdout=io.StringIO())
    assert not Study.objects.filter(slug__startswith="synthetic-").exists()


def assert_multiple_choice_study(staff: Client, output: str) -> None:
    """A multiple-choice study over a synthetic goal-step task set of the three tasks, imported as BIG-bench
    files, each item answered by k simulated annotators who disagree now and then."""
    study = Study.objects.get(slug=MULTIPLE_CHOICE_SLUG, kind="multiple_choice")
    task_set = TaskSet.objects.get(name=study.selection["task_set"])
    assert task_set.source == "bigbench" and task_set.name.startswith("synthetic-")
    assert set(task_set.examples.values_list("task", flat=True)) == {"step_inference", "goal_inference",
                                                                     "step_ordering"}  # fmt: skip
    assert study.items.count() == task_set.examples.filter(split="test").count() == 36
    assert not task_set.examples.filter(topic=None).exists()  # its procedures' topics: the by-topic table
    assert {item.completed_count for item in study.items.all()} == {study.annotators_per_item} == {3}
    tasks = validate(study_answers(study), k=study.annotators_per_item)
    assert len(tasks) == 3
    for task in tasks:
        assert sum(task.by_correct.values()) == 12, task  # every example with its k answers
        assert 0 < task.kept.k < task.kept.n, task  # some examples kept by every worker, some not
        assert task.accuracy.rate is not None and 0.5 < task.accuracy.rate < 1, task
        assert task.alpha is not None and 0 < task.alpha < 1, task
    page = staff.get(reverse("agreement:study", args=[study.slug])).content.decode()
    assert BADGE_TEXT in page and "examples kept (all workers right)" in page
    assert BADGE_TEXT in staff.get(reverse("annotation:study_detail", args=[study.slug])).content.decode()
    assert f"Multiple-choice study: {reverse('annotation:study_detail', args=[study.slug])}\n" in output


def assert_synthetic_mining_run(staff: Client, runner: Client, output: str) -> None:
    """A finished synthetic run over the sample documents: passes and drops with reasons at the stages that
    drop, its procedures in the pool under synthetic names, no outcome with a request identity or counted as
    not sent."""
    run = MiningRun.objects.get(name=RUN_NAME)
    assert run.status == "succeeded" and run.documents.count() == SourceDocument.objects.count() == 14
    funnel = run_funnel(run)
    assert [(cell.entered, cell.passed) for cell in funnel.total.cells] == SYNTHETIC_FUNNEL
    assert all(cell.not_sent == 0 and cell.errors == 0 for cell in funnel.total.cells)
    llm_cells = [cell for cell in funnel.total.cells if cell.stage != "prefilter"]
    assert all(cell.prompt_tokens > 0 and cell.completion_tokens > 0 for cell in llm_cells)
    drops = {drop.cell.stage: drop.reasons for drop in run_stage_drops(run, funnel)}
    assert drops["extraction"] == [("no valid process in the document", 3)]
    assert drops["prefilter"] == [("3 steps, outside 5-15", 1)]
    assert drops["filter"][0][0].startswith("UI interaction") and drops["final_filter"][0][0].startswith(
        "sequential: no"
    )
    outcomes = StageOutcome.objects.filter(run=run)
    assert not outcomes.exclude(request_sha256="").exists() and not outcomes.filter(NOT_SENT).exists()
    kept = run.kept_procedures.all()
    assert funnel.total.stored == kept.count() == funnel.total.cells[-1].passed == 8
    assert {p.split for p in kept} == {Split.POOL}
    assert all(p.source_example_id.startswith("synthetic-demo-mined-demo-web-") for p in kept)

    runs_page = staff.get(reverse("mine:runs")).content.decode()
    assert "No mining run yet" not in runs_page and BADGE_TEXT in runs_page
    page = staff.get(reverse("mine:run", args=[run.pk])).content.decode()
    assert BADGE_TEXT in page and "data-synthetic-note" in page
    assert 'data-count="entered"><strong>14</strong>' in page
    assert BADGE_TEXT in staff.get(reverse("admin:mining_miningrun_funnel", args=[run.pk])).content.decode()
    assert f"Mining run: {reverse('mine:run', args=[run.pk])}\n" in output
    with pytest.raises(SyntheticRun, match="synthetic demo data"):
        mining_run_start(run=run)
    refused = runner.post(reverse("mining-api:run-start", args=[run.pk]))
    assert refused.status_code == 409 and "synthetic demo data" in refused.json()["detail"], refused.content


def assert_synthetic_training_runs(staff: Client, output: str) -> None:
    """The run that games the length raises the alarm part-way, its control none; both badged, both linked."""
    drift = TrainingRun.objects.get(name=synthetic_training.DRIFT_NAME)
    control = TrainingRun.objects.get(name=synthetic_training.CONTROL_NAME)
    per_run = synthetic_training.STEPS * synthetic_training.CALLS_PER_STEP
    assert drift.calls.count() == control.calls.count() == per_run
    alarm = watch_of(drift).alarm
    assert alarm.flagged and 0 < (alarm.from_step or 0) < synthetic_training.STEPS - 1, alarm
    assert not watch_of(control).alarm.flagged
    listing = staff.get(reverse("judging:training_runs")).content.decode()
    assert listing.count(BADGE_TEXT) >= 2 and f"alarm from step {alarm.bucket}" in listing
    for run in (drift, control):
        url = reverse("judging:training_run", args=[run.name])
        page = staff.get(url).content.decode()
        assert BADGE_TEXT in page and "data-synthetic-note" in page and 'hx-trigger="every' not in page
        assert f": {url}\n" in output


def test_its_training_runs_are_built_in_well_under_a_second() -> None:
    started = time.process_time()  # this process's CPU: a loaded machine's wall clock says nothing of it
    runs = synthetic_training.training_runs_create(seed=31)
    assert time.process_time() - started < 0.5  # about 0.2 s here
    assert [run.name for run in runs] == list(synthetic_training.NAMES)
    assert synthetic_training.training_runs_create(seed=31) == runs and RewardCall.objects.count() == 2 * 640


def demo_config(base_url: str) -> RunConfig:
    """The demo's own mining config (the Mine form's default), served by the loopback LLM: the same request
    identities as on the embedded model (a URL is not identity)."""
    data = yaml.safe_load((CONFIGS / "smollm2-local.yaml").read_text(encoding="utf-8"))
    data["stages"]["default"] |= {"base_url": base_url, "request_timeout_s": 30, "max_concurrency": 4}
    del data["stages"]["default"]["base_url_env"]
    return run_config_from_mapping(data)


def test_a_real_run_after_the_synthetic_one_sends_its_requests(llm_server: LoopbackLLM) -> None:
    """Nothing of the synthetic run is reused: a real run of the demo's config over the same documents sends
    every request and stores its own procedures; a second real run then reuses the first one's answers
    (reuse works here)."""
    call_command("import_documents", str(DEMO_DOCUMENTS), stdout=io.StringIO())
    synthetic = mining_run_create(seed=31)
    assert synthetic is not None
    llm_server.responder = canned_responder
    config = demo_config(llm_server.base_url)

    real = real_run_create(config=config, name="real", enqueue=False)
    mine_job_run(job_id=real.job_id or 0)
    real.refresh_from_db()
    assert real.status == "succeeded", real.job
    outcomes = StageOutcome.objects.filter(run=real)
    sent = outcomes.exclude(stage="prefilter")
    assert not outcomes.filter(reused=True).exists()
    assert len(llm_server.completion_requests) == sent.count() > 14  # every LLM outcome was a request
    assert not sent.filter(request_sha256="").exists()
    funnel = run_funnel(real)
    assert funnel.total.cells[0].processed == 14 and all(cell.not_sent == 0 for cell in funnel.total.cells)
    assert funnel.total.stored == funnel.total.cells[-1].passed > 0 and not run_unstored(real)
    assert set(real.kept_procedures.values_list("source_example_id", flat=True)) <= set(
        SourceDocument.objects.values_list("doc_id", flat=True)
    )  # its own procedures, under the documents' ids; the synthetic ones are untouched
    assert synthetic.kept_procedures.count() == 8
    assert not StageOutcome.objects.filter(run=synthetic).exclude(request_sha256="").exists()

    llm_server.reset()
    again = real_run_create(config=config, name="again", enqueue=False)
    mine_job_run(job_id=again.job_id or 0)
    assert not llm_server.completion_requests
    assert StageOutcome.objects.filter(run=again, reused=True).count() == sent.count()
    assert len(STAGE_ORDER) == 6
