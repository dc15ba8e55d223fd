"""The synthetic demo world (issue #31 item 1): `manage.py demo_setup` seeds generators, judges and studies
answered by simulated annotators, so that every figure of the demo has data; the rows are marked synthetic on
the pages; a second run changes nothing."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Max, Model
from django.test import Client
from django.urls import reverse

from annotation.agreement_data import study_agreement
from annotation.calibration import calibrated_lines
from annotation.critical_failures.adjudication import review_queue
from annotation.demo_world import CALIBRATION_SLUG, PAIRWISE_SLUG, STEP_TYPES_SLUG
from annotation.models import (
    AnnotatedFailure,
    Annotation,
    Assignment,
    CalibrationDraw,
    GoldEvent,
    Participant,
    StepTypeLabel,
    StepTypePrediction,
    Study,
    StudyItem,
)
from annotation.pairwise.figures import study_figures
from annotation.report_card import report_card
from annotation.step_types.agreement import step_types_agreement, study_labels
from annotation.step_types.evaluation import step_type_models_table
from goal_step.models import TaskSet
from h2e_site.synthetic import BADGE_TEXT, synthetic_badge
from judging.models import CriticalFailure, Generation, Generator, Judge, Judgment, PairwiseJudgment
from mining.models import Procedure
from tests.factories import make_procedure

pytestmark = pytest.mark.django_db
COUNTED: list[type[Model]] = [
    Procedure, Generator, Generation, Judge, Judgment, CriticalFailure, Study, StudyItem, Participant,
    Assignment, Annotation, AnnotatedFailure, GoldEvent, CalibrationDraw, StepTypeLabel, StepTypePrediction,
    PairwiseJudgment, TaskSet,
]  # fmt: skip


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
    staff: Client, tmp_path: Path, settings: Any
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
    # seeded: the same figure on every build, whatever the database (two fresh SQLite builds gave it too)
    assert agreement.alpha_binary == pytest.approx(0.5440874914559125, abs=1e-9)
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
    assert (tmp_path / "demo-pages.txt").read_text().count("\t") == 4

    # the worker's share, queued: the vectors of the new texts, and a goal-step task set for the Tasks page
    task_set = TaskSet.objects.get(name="synthetic-demo-tasks")
    assert task_set.job is not None and task_set.job.status == "queued"
    assert BADGE_TEXT in staff.get(reverse("goal_step:task_sets")).content.decode()

    before = snapshot()
    again = demo_setup(tmp_path)
    assert "Synthetic demo world (already there, unchanged" in again
    assert snapshot() == before


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
