"""A seeded synthetic world for the demo (issue #31 item 1), so that every figure the app draws has data to
mean something: 300 bench procedures over the 14 topics, four generators' L2s with planted critical failures
(failure rates that differ by generator and topic), two judges' verdicts with their failures linked to steps,
and three studies answered by simulated annotators (annotators.py): a calibration sample drawn by the
calibration code, a pairwise study and a step-types study, plus an imported step-type classifier and a few
adjudicated gold decisions; a multiple-choice study over goal-step examples written from the procedures and
imported as BIG-bench files (multiple_choice.py); and a finished How2Mine run over the imported sample
documents, its stage answers written as data and kept out of every real run's reuse (mining_run.py); and
two training runs' reward calls, one gaming the length reward and its control (training_runs.py).

Every row it writes is marked synthetic by its name (h2e_site/synthetic.py), and the pages show a "synthetic
demo data" badge beside it. `demo_world_build` writes it in one transaction, through the services the app's
own runs and participants use; a second call finds it and writes nothing. The same seed gives the same
figures every time.
"""

from __future__ import annotations

import json
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.urls import reverse

from annotation.base.embedding import HUMAN_FAILURES
from annotation.base.models import Study
from annotation.base.types import Selection
from annotation.flow.services import study_create
from annotation.kinds.critical_failures.adjudication import review_queue, with_subjects
from annotation.kinds.critical_failures.gold import CriticalGold, GoldFailure
from annotation.kinds.critical_failures.gold_events import gold_decide
from annotation.kinds.critical_failures.models import CalibrationDesign
from annotation.kinds.pairwise.data import study_pairs
from annotation.kinds.step_types.candidates import StepType
from annotation.kinds.step_types.imports import step_type_predictions_import
from annotation.kinds.step_types.models import StepTypeClassifier
from annotation.kinds.step_types.spec import procedure_candidates
from demo.world import annotators
from demo.world import mining_run as synthetic_mining
from demo.world import multiple_choice as goal_step_tasks
from demo.world import training_runs as synthetic_training
from demo.world.models_under_test import (
    Truth,
    generations_create,
    judgments_create,
    pairwise_judgments_create,
    procedures_create,
)
from goal_step.jobs import task_set_create
from goal_step.models import TaskSet
from h2e_site.embeddings.jobs import embed_after
from h2e_site.synthetic import SYNTHETIC_ID_PREFIX, SYNTHETIC_MODEL_PREFIX
from judging.embedding import JUDGE_FAILURES
from judging.models import Judge, TrainingRun
from mining.embedding import PROCEDURES
from mining.models import MiningRun, Procedure, Split

SEED = 31
CALIBRATION_SLUG = "synthetic-calibration"
PAIRWISE_SLUG = "synthetic-pairwise"
STEP_TYPES_SLUG = "synthetic-step-types"
MULTIPLE_CHOICE_SLUG = "synthetic-multiple-choice"
SLUGS = (CALIBRATION_SLUG, PAIRWISE_SLUG, STEP_TYPES_SLUG)  # the core: built together, or not at all
CALIBRATION_SIZE = 100
PAIRWISE_SIZE = 36
STEP_TYPES_SIZE = 18
GOLD_DECISIONS = 4
CLASSIFIER = "synthetic-demo-step-classifier"
TASK_SET = "synthetic-demo-tasks"
MC_TASK_SET = "synthetic-demo-goal-step"
TITLE_MARK = "(synthetic demo data)"


@dataclass(frozen=True)
class DemoWorld:
    """The synthetic world's studies, and whether this call built it (False: it was there already)."""

    calibration: Study
    pairwise: Study
    step_types: Study
    multiple_choice: Study
    mining_run: MiningRun | None  # None: no document was imported
    built: bool
    training_runs: tuple[TrainingRun, ...] = ()  # the run that games the length, then its control


class DemoWorldIncomplete(Exception):
    """Some of the synthetic world's rows are there and some are not (deleted by hand): it is not rebuilt
    over them."""


def demo_world_build(*, seed: int = SEED) -> DemoWorld:
    """The synthetic world, built (in one transaction) unless it is there already; DemoWorldIncomplete when
    only part of its core (the procedures and the first three studies) is. The multiple-choice study and the
    mining run, added later, are each written once too, beside a core built by an earlier version."""
    existing = {study.slug: study for study in Study.objects.filter(slug__in=SLUGS)}
    if len(existing) != len(SLUGS) and (
        existing or Procedure.objects.filter(source_example_id__startswith=SYNTHETIC_ID_PREFIX).exists()
    ):
        missing = ", ".join(slug for slug in SLUGS if slug not in existing)
        raise DemoWorldIncomplete(
            f"the synthetic demo world is incomplete (no study {missing}): delete its rows (names starting "
            f"with 'synthetic') or start from an empty database (make clean-demo)"
        )
    with transaction.atomic():
        built = len(existing) != len(SLUGS)
        if built:
            existing = _core_build(seed)
        multiple_choice, new_study = _multiple_choice_study(seed)
        mining_run, new_run = _mining_run(seed)
        new_training = TrainingRun.objects.filter(name__in=synthetic_training.NAMES).count() < 2
        training_runs = synthetic_training.training_runs_create(seed=seed)
        if built or new_study or new_run:
            _queued_work(seed)
    return DemoWorld(
        existing[CALIBRATION_SLUG],
        existing[PAIRWISE_SLUG],
        existing[STEP_TYPES_SLUG],
        multiple_choice,
        mining_run,
        built=built or new_study or new_run or new_training,
        training_runs=tuple(training_runs),
    )


def _core_build(seed: int) -> dict[str, Study]:
    """The procedures, generators, judges and the first three studies, by slug."""
    rng = random.Random(seed)
    procedures = procedures_create(rng)
    generators, truth = generations_create(rng, procedures)
    judges = judgments_create(rng, generators, truth)
    generator_ids = [g.pk for g in generators]
    calibration = _calibration_study(generator_ids, [j.pk for j in judges], truth, seed)
    pairwise = _pairwise_study(generator_ids, truth, seed)
    _pairwise_twin(rng, pairwise, judges, truth)
    step_types = _step_types_study(seed)
    return {CALIBRATION_SLUG: calibration, PAIRWISE_SLUG: pairwise, STEP_TYPES_SLUG: step_types}


def _multiple_choice_study(seed: int) -> tuple[Study, bool]:
    """The multiple-choice study over the synthetic goal-step task set (multiple_choice.py), answered by
    simulated annotators; and whether this call made it."""
    study = Study.objects.filter(slug=MULTIPLE_CHOICE_SLUG).first()
    if study is not None:
        return study, False
    bench = Procedure.objects.filter(source_example_id__startswith=SYNTHETIC_ID_PREFIX, split=Split.BENCH)
    task_set = goal_step_tasks.task_set_import(MC_TASK_SET, list(bench.order_by("pk")), seed=seed)
    study = _study(
        MULTIPLE_CHOICE_SLUG,
        "Goal-step examples of synthetic procedures",
        "multiple_choice",
        Selection(task_set=task_set.name, seed=seed),
    )
    annotators.study_answer(study, annotators.multiple_choice_answer(seed), seed=seed)
    return study, True


def _mining_run(seed: int) -> tuple[MiningRun | None, bool]:
    """The finished synthetic mining run over the imported documents (mining_run.py), and whether this call
    made it; None when there is no document to mine."""
    run = MiningRun.objects.filter(name=synthetic_mining.RUN_NAME).first()
    if run is not None:
        return run, False
    run = synthetic_mining.mining_run_create(seed=seed)
    return run, run is not None


def demo_world_pages(world: DemoWorld) -> list[tuple[str, str]]:
    """(what it shows, path) of the pages that show the synthetic world: the calibrated leaderboard, then one
    study of each kind with the pages of its figures (each study's page links to them too)."""
    calibration, pairwise, step_types = world.calibration.slug, world.pairwise.slug, world.step_types.slug
    return [
        ("Calibrated leaderboard", reverse("calibrated:leaderboard")),
        ("Critical-failures study", reverse("annotation:study_detail", args=[calibration])),
        ("  its agreement", reverse("agreement:study", args=[calibration])),
        ("  its adjudication queue", reverse("annotation:adjudication_queue", args=[calibration])),
        (
            "  a judge's report card",
            reverse("judges:report_card", args=[f"{SYNTHETIC_ID_PREFIX}judge-strict"]),
        ),
        ("Pairwise study", reverse("annotation:study_detail", args=[pairwise])),
        ("  its figures", reverse("agreement:study", args=[pairwise])),
        ("Step-types study", reverse("annotation:study_detail", args=[step_types])),
        ("  its agreement", reverse("agreement:study", args=[step_types])),
        ("  its models' F1", reverse("annotation:step_type_models", args=[step_types])),
        ("Multiple-choice study", reverse("annotation:study_detail", args=[world.multiple_choice.slug])),
        ("  its validation", reverse("agreement:study", args=[world.multiple_choice.slug])),
        *(
            [("Mining run", reverse("mine:run", args=[world.mining_run.pk]))]
            if world.mining_run is not None
            else []
        ),
        *_training_pages(world),
    ]


def _training_pages(world: DemoWorld) -> list[tuple[str, str]]:
    """The training run that games the length (its alarm raised), then its control (none)."""
    if len(world.training_runs) != 2:
        return []
    drift, control = world.training_runs
    return [
        ("Training run", reverse("judging:training_run", args=[drift.name])),
        ("  its control run", reverse("judging:training_run", args=[control.name])),
    ]


def _queued_work(seed: int) -> None:
    """What the worker does once the world is committed, each a job with its live row: the vectors of the new
    procedures and failures (as an import queues them), then a goal-step task set over the bench procedures
    (the Tasks page's figures)."""
    embed_after(PROCEDURES, JUDGE_FAILURES, HUMAN_FAILURES)
    if not TaskSet.objects.filter(name=TASK_SET).exists():
        task_set_create(TASK_SET, seed=seed)


def _study(slug: str, title: str, kind: str, selection: Selection) -> Study:
    return study_create(
        title=f"{title} {TITLE_MARK}",
        slug=slug,
        kind=kind,
        selection=selection,
        completion_code=f"{slug.upper()}-DONE",
        screenout_code=f"{slug.upper()}-SCREENOUT",
        attention_failed_code=f"{slug.upper()}-ATTENTION",
        items_per_participant=12,
    )


def _calibration_study(generator_ids: list[int], judge_ids: list[int], truth: Truth, seed: int) -> Study:
    """A calibration sample stratified by topic over the synthetic generators' L2s, three labels an item,
    and a few of its adjudication queue's items decided."""
    study = _study(
        CALIBRATION_SLUG,
        "Calibration sample of the synthetic generators",
        "critical_failures",
        Selection(
            generator_ids=generator_ids,
            calibration_design=CalibrationDesign.STRATIFIED,
            calibration_judge_ids=judge_ids,
            sample_size=CALIBRATION_SIZE,
            seed=seed,
        ),
    )
    annotators.study_answer(study, annotators.critical_failures_answer(truth), seed=seed)
    _gold_decisions(study, truth)
    return study


def _gold_decisions(study: Study, truth: Truth) -> None:
    """The reviewer's gold on the first items of the adjudication queue (the planted truth), the rest left
    open for the demo's reviewer."""
    for entry in with_subjects(review_queue(study).entries[:GOLD_DECISIONS]):
        assert entry.item.generation_id is not None
        planted = truth.failures[entry.item.generation_id]
        failures = (
            [] if planted is None else [GoldFailure(planted.description, planted.l1_steps, planted.l2_steps)]
        )
        gold = CriticalGold(has_failure=planted is not None, failures=failures)
        gold_decide(
            item=entry.item,
            verdict=gold.as_json(),
            reason="Synthetic demo: the reviewer read L1 and L2 again, step by step, and settled the split.",
        )


def _pairwise_study(generator_ids: list[int], truth: Truth, seed: int) -> Study:
    study = _study(
        PAIRWISE_SLUG,
        "The synthetic generators, two at a time",
        "pairwise",
        Selection(generator_ids=generator_ids, sample_size=PAIRWISE_SIZE, seed=seed),
    )
    annotators.study_answer(study, annotators.pairwise_answer(truth), seed=seed)
    return study


def _pairwise_twin(rng: random.Random, study: Study, judges: list[Judge], truth: Truth) -> None:
    """The synthetic judges' pairwise verdicts on the study's pairs (its page's LLM twin)."""
    pairs = [(pair.generation_a, pair.generation_b) for pair in study_pairs(study)]
    pairs = [(a, b) if a.pk < b.pk else (b, a) for a, b in pairs]  # a judgment's A is the lower pk
    pairwise_judgments_create(rng, pairs, judges, truth)


def _step_types_study(seed: int) -> Study:
    study = _study(
        STEP_TYPES_SLUG,
        "Step types of synthetic procedures",
        "step_types",
        Selection(sample_size=STEP_TYPES_SIZE, seed=seed),
    )
    annotators.study_answer(study, annotators.step_types_answer(seed), seed=seed)
    _classifier_import(study, seed)
    return study


def _classifier_import(study: Study, seed: int) -> None:
    """A step-type classifier's predictions on the study's candidates (right 80 % of the time), imported as a
    file is (annotation/kinds/step_types/imports.py), so the study's Models (F1) page has a model to score."""
    rng = random.Random(f"{seed}:classifier")
    rows = []
    for item in study.items.filter(is_attention_check=False).select_related("procedure").order_by("position"):
        procedure = item.procedure
        assert procedure is not None
        for candidate in procedure_candidates(procedure):
            holds = annotators.candidate_holds(
                seed, procedure.source_example_id, candidate.key, StepType(candidate.step_type)
            )
            said = holds if rng.random() < 0.8 else not holds
            rows.append({"procedure": procedure.pk, "candidate": candidate.key, "holds": said,
                         "model": f"{SYNTHETIC_MODEL_PREFIX}step-classifier"})  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "synthetic-step-type-predictions.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        step_type_predictions_import(path=path, classifier=CLASSIFIER)
    assert StepTypeClassifier.objects.filter(classifier_id=CLASSIFIER).exists()


__all__ = ["SLUGS", "DemoWorld", "DemoWorldIncomplete", "demo_world_build", "demo_world_pages"]
