"""The world the staff-form fuzz tests post into (tests/test_fuzz_staff_forms.py and
tests/test_fuzz_job_bodies.py)."""

from __future__ import annotations

from typing import Any

from annotation.flow import services
from h2e_site.embeddings.specs import minilm_spec
from h2e_site.embeddings.store import model_row
from mining.config import run_config_from_mapping
from mining.runs import mining_run_create
from tests.annotation.conftest import make_study, no_failure, qualified, read_everything
from tests.annotation.goal_step.conftest import make_task_set
from tests.factories import make_procedure, make_scored_world
from tests.mining.canned import loopback_config, make_document


def make_admin_world() -> dict[str, Any]:
    """One row of every model the admin edits (a study with a participant's annotation, a task set, a
    mining run, judgments with failures), and bodies a job-starting request can start from."""
    world = make_scored_world()
    study = make_study(n_items=2, k=2, slug="fuzz-taken")
    participant = qualified(study, 1)
    assignment = services.assignment_next(participant=participant)
    assert assignment is not None
    services.annotation_submit(assignment=read_everything(assignment), submission=no_failure())
    for i in range(2):
        make_procedure(goal=f"Step-type procedure {i}", steps=["a", "b", "c", "d"], topic="Home")
    make_task_set("fuzz-taken")
    services.study_create(
        title="Calibration", slug="fuzz-calibration",
        selection=services.Selection(calibration_design="uniform", sample_size=2),
    )  # fmt: skip
    services.study_create(
        title="Pairs", slug="fuzz-pairwise", kind="pairwise",
        selection=services.Selection(generator_ids=[g.pk for g in world["generators"]]),
    )  # fmt: skip
    make_document("fuzz-doc")
    model_row(minilm_spec())  # the embedding store's model, for its admin action
    mining_run_create(config=run_config_from_mapping(loopback_config("http://127.0.0.1:9/v1")), enqueue=False)
    generator = world["generators"][0]
    return {
        **world,
        "bodies": {
            "build_tasks": {"name": "fuzz-new", "seed": 1, "splits": ["bench"]},
            "generate": {"generator_id": generator.generator_id, "limit": 1},
            "judge": {"judge_id": world["judges"][0].judge_id, "generator_id": generator.generator_id},
            "answer_tasks": {"model_id": "no-such-model", "task_set": "fuzz-taken"},
            "classify_steps": {"classifier_id": "no-such", "study": "fuzz-taken"},
            "embed": {"sources": ["procedures"]},
            "failure_patterns": {"topic": "Home"},
        },
    }
