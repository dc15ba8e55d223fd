"""A training run's checkpoints on the benchmark (#32 item 4, paper Table 2 and Table 13): the table's figures
against hand computation (and scipy/statsmodels), the OOD import's refusals by line and field, registering
checkpoints (command and form), the job buttons, permissions, and the JSON endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from judging import paired
from judging.models import Generation, Judge
from judging.training.checkpoint_models import Checkpoint, OODResult
from judging.training.checkpoints import checkpoint_table
from judging.training.models import TrainingRun
from judging.training.ood import OODFileRefused, ood_import
from tests.factories import make_generator, make_judge, make_judgment, make_procedure

pytestmark = pytest.mark.django_db
SHIPPED = "configs/generators/qwen3-8b-openai-server.yaml"
FAIL = [("Skips a step", [1], [1])]


def page_url(run: TrainingRun, what: str = "") -> str:
    name = {"": "training_checkpoints", "register": "training_checkpoint_register"}.get(what, what)
    return reverse(f"judging:{name}", args=[run.name])


def make_run(name: str = "qwen3-4b-grpo", judge: Judge | None = None) -> TrainingRun:
    return TrainingRun.objects.create(name=name, policy="Qwen/Qwen3-4B", reward_name="how2score", judge=judge)


def checkpoint_of(run: TrainingRun, step: int, label: str = "", model: str = "") -> Checkpoint:
    generator = make_generator(model=model or f"{run.name}/step-{step}")
    return Checkpoint.objects.create(run=run, step=step, label=label, generator=generator)


def verdicts(checkpoint: Checkpoint, judge: Judge, procedures: list[Any], marks: str) -> None:
    """One L2 per procedure (if missing) and a verdict by `judge`: p pass, f fail, x parse failure, - none."""
    for procedure, mark in zip(procedures, marks, strict=True):
        if mark == "-":
            continue
        generation, _ = Generation.objects.get_or_create(
            generator=checkpoint.generator,
            procedure=procedure,
            defaults={"predicted_steps": ["a"], "n_tokens": 20},
        )
        make_judgment(
            generation=generation, judge=judge, failures=FAIL if mark == "f" else (), parse_failed=mark == "x"
        )


@pytest.fixture
def world() -> dict[str, Any]:
    return make_world()


def make_world() -> dict[str, Any]:
    """Table 2 in miniature: a run judged by How2Judge, three checkpoints, an external judge, OOD scores."""
    judge, external = make_judge(model="how2everything/how2judge"), make_judge(model="openai/gpt-5")
    run = make_run(judge=judge)
    procedures = [make_procedure(goal=f"Goal {i}") for i in range(6)]
    for procedure in procedures:
        procedure.n_tokens = 40
        procedure.save(update_fields=["n_tokens"])
    base, mid, last = (
        checkpoint_of(run, 0, "base"),
        checkpoint_of(run, 500, "mid"),
        checkpoint_of(run, 1000, "+RL"),
    )
    verdicts(base, judge, procedures, "ppffff")  # 2 of 6
    verdicts(mid, judge, procedures, "ppppfx")  # 4 of 5 scored
    verdicts(last, judge, procedures, "fppppp")  # 5 of 6
    verdicts(base, external, procedures, "pppfff")  # 3 of 6
    verdicts(last, external, procedures, "pppppp")  # 6 of 6; mid not judged by it
    for tokens, generation in zip(
        [30, 40, 50, 60, 70, 80], last.generator.generations.order_by("procedure"), strict=True
    ):
        generation.n_tokens = tokens
        generation.save(update_fields=["n_tokens"])
    ood = (
        "benchmark,checkpoint,score,higher_is_better\n"
        "GSM8K,0,94.09,\nMMLU-Pro,base,60.16,true\nPerplexity,0,10.0,false\n"
        "GSM8K,+RL,93.78,\nMMLU-Pro,1000,61.70,\nPerplexity,1000,9.0,false\n"
        "GSM8K,mid,94.5,\n"
    )
    ood_import(run=run, data=ood.encode(), name="ood.csv")
    return {"run": run, "judge": judge, "external": external, "checkpoints": (base, mid, last)}


# --- the table's figures ------------------------------------------------------------------------------------


def test_it_shows_how2score_with_the_leaderboards_wilson_interval(world: dict[str, Any]) -> None:
    table = checkpoint_table(world["run"])
    assert table.judge == world["judge"] and [r.checkpoint.step for r in table.rows] == [0, 500, 1000]
    for row, (passed, n) in zip(table.rows, [(2, 6), (4, 5), (5, 6)], strict=True):
        score = row.judge.score
        assert score is not None and score.n_examples == n
        assert score.how2score_percent == pytest.approx(100 * passed / n)
        low, high = proportion_confint(passed, n, alpha=0.05, method="wilson")
        assert score.interval_percent == pytest.approx((100 * low, 100 * high))
    assert table.rows[1].judge.score.n_parse_failed == 1  # type: ignore[union-attr]


def test_it_gives_each_delta_against_the_first_checkpoint_with_mcnemar_and_holm(
    world: dict[str, Any],
) -> None:
    base, mid, last = checkpoint_table(world["run"]).rows
    assert base.judge.delta_points is None and base.judge.test is None
    assert mid.judge.delta_points == pytest.approx(80 - 100 * 2 / 6)
    assert last.judge.delta_points == pytest.approx(100 * 5 / 6 - 100 * 2 / 6)
    # mid vs base on the 5 procedures both have scored: only mid passes on goals 2 and 3, only base on none
    assert (mid.judge.test.n_shared, mid.judge.test.first_only, mid.judge.test.this_only) == (5, 0, 2)  # type: ignore[union-attr]
    # last vs base on all 6: only base passes goal 0, only last passes goals 2..5
    assert (last.judge.test.n_shared, last.judge.test.first_only, last.judge.test.this_only) == (6, 1, 4)  # type: ignore[union-attr]
    p_mid, p_last = 2 * 0.5**2, 2 * (1 + 5) / 2**5  # P(X <= 0 | 2), P(X <= 1 | 5), two-sided
    assert p_mid == pytest.approx(binomtest(0, 2).pvalue) and p_last == pytest.approx(binomtest(1, 5).pvalue)
    assert mid.judge.test.p_value == pytest.approx(p_mid)  # type: ignore[union-attr]
    assert last.judge.test.p_value == pytest.approx(p_last)  # type: ignore[union-attr]
    assert p_mid == paired.mcnemar_exact_p(0, 2)
    holm = list(multipletests([p_mid, p_last], method="holm")[1])
    assert holm == pytest.approx([0.75, 0.75])
    assert [mid.judge.test.p_holm, last.judge.test.p_holm] == pytest.approx(holm)  # type: ignore[union-attr]
    assert not last.judge.test.separable  # type: ignore[union-attr]


def test_it_shows_the_same_under_the_external_judge(world: dict[str, Any]) -> None:
    base, mid, last = checkpoint_table(world["run"], external=world["external"]).rows
    assert base.external.score.how2score_percent == pytest.approx(50.0)  # type: ignore[union-attr]
    assert mid.external.score is None and mid.external.delta_points is None and mid.external.test is None  # type: ignore[union-attr]
    assert last.external.delta_points == pytest.approx(50.0)  # type: ignore[union-attr]
    test = last.external.test  # type: ignore[union-attr]
    assert (test.first_only, test.this_only) == (0, 3)  # type: ignore[union-attr]
    assert test.p_value == pytest.approx(0.25) and test.p_holm == pytest.approx(0.25)  # type: ignore[union-attr]
    assert checkpoint_table(world["run"]).rows[0].external is None


def test_it_shows_generated_tokens_and_the_gen_ref_ratio(world: dict[str, Any]) -> None:
    base, _, last = checkpoint_table(world["run"]).rows
    assert base.metrics.avg_tokens == pytest.approx(
        20
    ) and base.metrics.gen_ref_ratio_percent == pytest.approx(50)
    assert last.metrics.avg_tokens == pytest.approx(55)
    assert last.metrics.gen_ref_ratio_percent == pytest.approx(
        sum(100 * t / 40 for t in [30, 40, 50, 60, 70, 80]) / 6
    )


def test_it_gives_each_ood_delta_and_their_mean_lower_is_better_negated(world: dict[str, Any]) -> None:
    table = checkpoint_table(world["run"])
    assert [(b.name, b.higher_is_better) for b in table.benchmarks] == [
        ("GSM8K", True), ("MMLU-Pro", True), ("Perplexity", False),
    ]  # fmt: skip
    base, mid, last = table.rows
    assert [c.score for c in base.ood] == [94.09, 60.16, 10.0] and all(c.delta is None for c in base.ood)
    assert [c.delta for c in last.ood] == pytest.approx([93.78 - 94.09, 61.70 - 60.16, 9.0 - 10.0])
    assert last.ood_mean_delta == pytest.approx(((93.78 - 94.09) + (61.70 - 60.16) + (10.0 - 9.0)) / 3)
    assert last.ood_n == 3
    assert [c.score for c in mid.ood] == [94.5, None, None]
    assert mid.ood_mean_delta == pytest.approx(94.5 - 94.09) and mid.ood_n == 1
    assert base.ood_mean_delta is None


def test_a_run_without_checkpoints_or_judgments_has_an_empty_table() -> None:
    run = make_run()
    assert checkpoint_table(run).rows == []
    checkpoint_of(run, 0)
    (row,) = checkpoint_table(run).rows
    assert row.judge.score is None and row.judge.delta_points is None and row.ood == []


# --- OOD import: all or nothing, refusals by line and field ----------------------------------------------


@pytest.fixture
def run_with_two() -> TrainingRun:
    run = make_run()
    checkpoint_of(run, 0, "base")
    checkpoint_of(run, 1000, "+RL")
    return run


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        (
            "r.csv",
            "benchmark,checkpoint,score\nGSM8K,0,94\nGSM8K,1000,ninety\n",
            "line 3, score: must be a number",
        ),
        (
            "r.csv",
            "benchmark,checkpoint,score\nGSM8K,0,94\nGSM8K,250,93\n",
            "line 3, checkpoint: no checkpoint",
        ),
        ("r.csv", "benchmark,checkpoint,score\nGSM8K,0,94\n,1000,93\n", "line 3, benchmark: missing"),
        ("r.csv", "benchmark,score\nGSM8K,94\n", "line 1, checkpoint: missing column"),
        ("r.csv", "benchmark,checkpoint,score,split\nGSM8K,0,94,x\n", "line 1, split: unknown column"),
        ("r.csv", "benchmark,checkpoint,score\nGSM8K,0,nan\n", "line 2, score: must be a finite number"),
        ("r.csv", "benchmark,checkpoint,score\nGSM8K,0,94,extra\n", "line 2, (row): more values"),
        (
            "r.csv",
            "benchmark,checkpoint,score\nGSM8K,0,94\nGSM8K,base,95\n",
            "line 3, checkpoint: GSM8K of this checkpoint again (line 2)",
        ),
        (
            "r.csv",
            "benchmark,checkpoint,score,higher_is_better\nPPL,0,9,false\nPPL,1000,8,maybe\n",
            "line 3, higher_is_better: must be true or false",
        ),
        (
            "r.csv",
            "benchmark,checkpoint,score,higher_is_better\nPPL,0,9,false\nPPL,1000,8,\n",
            "line 3, higher_is_better: PPL is lower is better in line 2",
        ),
        (
            "r.jsonl",
            '{"benchmark": "GSM8K", "checkpoint": 0, "score": 94}\n\n[1, 2]\n',
            "line 3, (line): must be a JSON object",
        ),
        (
            "r.jsonl",
            '{"benchmark": "GSM8K", "checkpoint": 0, "score": true}\n',
            "line 1, score: must be a number",
        ),
        (
            "r.jsonl",
            '{"benchmark": "GSM8K", "checkpoint": 0, "score": 1, "step": 3}\n',
            "line 1, step: unknown field",
        ),
        (
            "r.jsonl",
            '{"benchmark": "GSM8K", "checkpoint": 0, "score": 1}\n{"benchmark": "GSM8K", "checkpoint"\n',
            "line 2, (line): not JSON",
        ),
        ("r.csv", "", "line 1, benchmark: missing column"),
        ("r.jsonl", "\n\n", "line 1, file: no rows"),
    ],
)
def test_the_import_refuses_a_bad_row_by_line_and_field_and_stores_nothing(
    run_with_two: TrainingRun, staff: Client, name: str, text: str, problem: str
) -> None:
    with pytest.raises(OODFileRefused) as refused:
        ood_import(run=run_with_two, data=text.encode(), name=name)
    assert problem in str(refused.value)
    upload = _upload(name, text.encode())
    response = staff.post(page_url(run_with_two, "training_checkpoints_ood"), {"file": upload})
    assert response.status_code == 400
    assert (
        "Nothing was imported." in response.content.decode()
        and problem.replace("'", "&#x27;") in response.content.decode()
    )
    assert not OODResult.objects.exists()


def _upload(name: str, data: bytes) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="text/plain")


def test_the_import_names_a_line_that_is_not_utf8(run_with_two: TrainingRun) -> None:
    data = b"benchmark,checkpoint,score\nGSM8K,0,94\nGSM\xff8K,1000,93\n"
    with pytest.raises(OODFileRefused, match=r"r.csv: line 3, file: not UTF-8"):
        ood_import(run=run_with_two, data=data, name="r.csv")


def test_the_import_names_every_bad_row_at_once(run_with_two: TrainingRun) -> None:
    text = "benchmark,checkpoint,score\nA,0,x\nB,0,1\nC,7,2\n"
    with pytest.raises(OODFileRefused) as refused:
        ood_import(run=run_with_two, data=text.encode(), name="r.csv")
    assert [(p.line, p.field) for p in refused.value.problems] == [(2, "score"), (4, "checkpoint")]


def test_the_import_refuses_a_direction_that_contradicts_the_stored_results(
    run_with_two: TrainingRun,
) -> None:
    ood_import(
        run=run_with_two, data=b"benchmark,checkpoint,score,higher_is_better\nPPL,0,9,false\n", name="a.csv"
    )
    with pytest.raises(
        OODFileRefused, match="line 2, higher_is_better: PPL is lower is better in the results"
    ):
        ood_import(run=run_with_two, data=b"benchmark,checkpoint,score\nPPL,1000,8\n", name="b.csv")
    # the same rows again replace what was stored, direction and all
    report = ood_import(
        run=run_with_two, data=b"benchmark,checkpoint,score\nPPL,0,9.5\nPPL,1000,8\n", name="c.csv"
    )
    assert (report.n_created, report.n_updated) == (1, 1)
    assert sorted(OODResult.objects.values_list("score", "higher_is_better")) == [(8.0, None), (9.5, None)]


def test_the_import_reads_jsonl_with_steps_and_labels_and_replaces_scores(run_with_two: TrainingRun) -> None:
    lines = [
        {"benchmark": "AIME25", "checkpoint": 0, "score": 46.04},
        {"benchmark": "AIME25", "checkpoint": "+RL", "score": "49.48", "higher_is_better": True},
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    report = ood_import(run=run_with_two, data=data, name="ood.jsonl")
    assert (report.n_created, report.n_updated, report.benchmarks) == (2, 0, ["AIME25"])
    report = ood_import(run=run_with_two, data=data.replace(b"46.04", b"46.5"), name="ood.jsonl")
    assert (report.n_created, report.n_updated) == (0, 2)
    assert sorted(OODResult.objects.values_list("checkpoint__step", "score")) == [(0, 46.5), (1000, 49.48)]


def test_the_page_imports_a_file_and_shows_the_columns(run_with_two: TrainingRun, staff: Client) -> None:
    data = b"benchmark,checkpoint,score\nMMLU-Pro,0,60.16\nMMLU-Pro,1000,61.70\n"
    response = staff.post(
        page_url(run_with_two, "training_checkpoints_ood"), {"file": _upload("o.csv", data)}
    )
    assert response.status_code == 302 and response["Location"] == page_url(run_with_two)
    html = staff.get(response["Location"]).content.decode()
    assert "MMLU-Pro" in html and "+1.54" in html and "2 new, 0 replaced" in html


# --- registering checkpoints -------------------------------------------------------------------------------


def test_the_import_command_imports_or_names_each_bad_row(
    run_with_two: TrainingRun, tmp_path: Path, capsys: Any
) -> None:
    path = tmp_path / "ood.jsonl"
    path.write_text(
        '{"benchmark": "GSM8K", "checkpoint": 0, "score": 94}\n{"benchmark": "GSM8K", "checkpoint": "+RL"}\n'
    )
    with pytest.raises(CommandError, match=r"nothing imported: .*ood.jsonl: line 2, score: missing"):
        call_command("import_ood", str(path), run=run_with_two.name)
    assert not OODResult.objects.exists()
    rows = [
        {"benchmark": "GSM8K", "checkpoint": 0, "score": 94},
        {"benchmark": "GSM8K", "checkpoint": "+RL", "score": 95},
    ]
    path.write_text("\n".join(json.dumps(row) for row in rows))
    call_command("import_ood", str(path), run=run_with_two.name)
    assert "2 new, 0 replaced (GSM8K)" in capsys.readouterr().out
    with pytest.raises(CommandError, match=r"no-such\.csv"):
        call_command("import_ood", str(tmp_path / "no-such.csv"), run=run_with_two.name)
    with pytest.raises(CommandError, match="--run: no training run is named 'nope'"):
        call_command("import_ood", str(path), run="nope")
