"""A training run's checkpoints on the benchmark (#32 item 4, paper Table 2 and Table 13): the table's figures
against hand computation (and scipy/statsmodels), the OOD import's refusals by line and field, registering
checkpoints (command and form), the job buttons, permissions, and the JSON endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from h2e_site.jobs.models import Job
from h2e_site.llm.config import ConfigError, config_from_mapping
from judging import paired
from judging.configs import judge_for_config
from judging.generate_jobs import generate_job_run
from judging.job_kinds import GENERATE, JUDGE
from judging.judge_jobs import judge_job_run
from judging.models import Generation, Generator, Judge
from judging.training.checkpoint_models import Checkpoint, OODResult
from judging.training.checkpoints import CheckpointRefused, checkpoint_register, checkpoint_table
from judging.training.models import TrainingRun
from judging.training.ood import OODFileRefused, ood_import
from tests.factories import make_generation, make_generator, make_judge, make_judgment, make_procedure
from tests.llm_server import LoopbackLLM, failure, judge_json

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


def write_config(tmp_path: Path, model: str, base_url: str = "http://127.0.0.1:8000/v1") -> Path:
    path = tmp_path / f"{model.replace('/', '-')}.yaml"
    body = {"model": model, "backend": "openai", "provider": "vllm-server", "base_url": base_url}
    path.write_text(yaml.safe_dump(body))
    return path


def test_the_command_registers_checkpoints_from_configs(tmp_path: Path, capsys: Any) -> None:
    run = make_run()
    call_command(
        "register_checkpoint", run=run.name, step=0, config=str(write_config(tmp_path, "policy/step-0"))
    )
    call_command(
        "register_checkpoint", run=run.name, step=1000, label="+RL",
        config=str(write_config(tmp_path, "policy/step-1000")),
    )  # fmt: skip
    assert "checkpoint +RL (step 1,000) is policy/step-1000" in capsys.readouterr().out
    steps = [
        (c.step, c.label, c.generator.model, c.generator.config["base_url"]) for c in run.checkpoints.all()
    ]
    assert steps == [
        (0, "", "policy/step-0", "http://127.0.0.1:8000/v1"),
        (1000, "+RL", "policy/step-1000", "http://127.0.0.1:8000/v1"),
    ]
    # the same step and config again: relabelled, not duplicated
    call_command(
        "register_checkpoint", run=run.name, step=0, label="base", config=str(tmp_path / "policy-step-0.yaml")
    )
    assert list(run.checkpoints.values_list("label", flat=True)) == ["base", "+RL"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"run": "nope", "step": 0}, "--run: no training run is named 'nope'"),
        (
            {"step": 0, "config": "configs/generators/missing.yaml"},
            "configs/generators/missing.yaml: (file): no such file",
        ),
        ({"step": -1}, "step: -1 is not a number from 0"),
        ({"step": 5, "label": "500"}, "--label: '500' is a number"),
    ],
)
def test_the_command_refuses_naming_the_field(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    run = make_run()
    arguments = {"run": run.name, "config": str(write_config(tmp_path, "policy/step-5")), **options}
    with pytest.raises(CommandError) as refused:
        call_command("register_checkpoint", **arguments)
    assert message in str(refused.value)
    assert not Checkpoint.objects.exists()


def test_two_checkpoints_cannot_share_a_generator(tmp_path: Path) -> None:
    """The generator_id hashes the model, not the server: a second step served as the same model name would
    take the first one's row (and its server)."""
    run, other = make_run(), make_run("other-run")
    checkpoint_register(run=run, step=0, config_path=write_config(tmp_path, "policy"))
    with pytest.raises(
        ConfigError, match=r"model: makes generator .*, already step 0 of run 'qwen3-4b-grpo'"
    ):
        checkpoint_register(
            run=run, step=1000, config_path=write_config(tmp_path, "policy", "http://10.0.0.2/v1")
        )
    with pytest.raises(ConfigError, match="on other servers"):
        checkpoint_register(
            run=other, step=0, config_path=write_config(tmp_path, "policy", "http://10.0.0.2/v1")
        )
    # the same model on the same server may start another run (the original model, step 0)
    assert (
        checkpoint_register(run=other, step=0, config_path=write_config(tmp_path, "policy")).generator
        == run.checkpoints.get().generator
    )
    assert Generator.objects.get().config["base_url"] == "http://127.0.0.1:8000/v1"
    with pytest.raises(CheckpointRefused, match="step: step 0 of run 'other-run' is already policy"):
        checkpoint_register(run=other, step=0, config_path=write_config(tmp_path, "policy-2"))


def test_the_form_registers_a_checkpoint_from_a_shipped_config(staff: Client) -> None:
    run = make_run()
    response = staff.post(page_url(run, "register"), {"step": "0", "label": "base", "config": SHIPPED})
    assert response.status_code == 302, response.content.decode()[:2000]
    checkpoint = run.checkpoints.get()
    assert (checkpoint.step, checkpoint.label, checkpoint.generator.model) == (0, "base", "Qwen/Qwen3-8B")
    assert checkpoint.config_path == SHIPPED
    html = staff.get(page_url(run)).content.decode()
    assert (
        "base (step 0)" in html and "Qwen/Qwen3-8B" in html and "Checkpoint base (step 0) registered" in html
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("configs/generators/nope.yaml", "configs/generators/nope.yaml: no such file"),
        ("../etc/passwd", "&#x27;../etc/passwd&#x27; is not under configs/generators/"),
        ("/etc/hostname", "&#x27;/etc/hostname&#x27; is not under configs/generators/"),
        ("configs/judges/../generators/../rewards/how2score.yaml", "is not under configs/generators/"),
    ],
)
def test_the_form_refuses_a_config_path_naming_it(staff: Client, config: str, message: str) -> None:
    run = make_run()
    response = staff.post(page_url(run, "register"), {"step": "0", "config": config})
    assert response.status_code == 400 and message in response.content.decode()
    assert not Checkpoint.objects.exists()


def test_the_form_refuses_a_bad_step_and_a_taken_label(staff: Client) -> None:
    run = make_run()
    checkpoint_of(run, 0, "base")
    html = staff.post(page_url(run, "register"), {"step": "-3", "config": SHIPPED}).content.decode()
    assert "greater than or equal to 0" in html
    response = staff.post(page_url(run, "register"), {"step": "9", "label": "base", "config": SHIPPED})
    assert response.status_code == 400 and "&#x27;base&#x27; is already step 0" in response.content.decode()


# --- generate and judge buttons: the existing jobs ----------------------------------------------------------


def loopback_judge_row(server: LoopbackLLM) -> Judge:
    return judge_for_config(
        config_from_mapping(
            {
                "model": "loopback-judge",
                "backend": "openai",
                "provider": "loopback",
                "base_url": server.base_url,
                "max_requests_per_minute": 100_000,
                "max_tokens_per_minute": 100_000_000,
            },
            role="judge",
        )
    )


def test_the_buttons_generate_and_judge_every_checkpoint_end_to_end(
    tmp_path: Path, llm_server: LoopbackLLM, boss: Client
) -> None:
    """Two checkpoints served by the loopback server (one terse, one complete), generated and judged with
    the existing jobs (run in-process as the worker runs them), then shown."""
    for i in range(4):
        make_procedure(goal=f"Make tea {i}", steps=["Boil", "Steep", "Pour"])

    def respond(body: dict[str, Any]) -> str:
        prompt = body.get("prompt") or body["messages"][0]["content"]
        if body["model"] == "loopback-judge":
            return judge_json([failure("Too terse.")] if "briefly" in prompt else [])
        if body["model"] == "policy/step-0":
            return "1. Do it briefly."
        return "1. Boil water.\n2. Steep the tea.\n3. Pour it."

    llm_server.responder = respond
    judge = loopback_judge_row(llm_server)
    run = make_run(judge=judge)
    for step in (0, 1000):
        checkpoint_register(
            run=run, step=step, config_path=write_config(tmp_path, f"policy/step-{step}", llm_server.base_url)
        )
    url = page_url(run, "training_checkpoints_jobs")
    response = boss.post(url, {"action": "generate", "step": "all", "table_query": "judge=x&evil=1"})
    assert response.status_code == 302 and response["Location"] == page_url(run) + "?judge=x"
    jobs = list(Job.objects.order_by("pk"))
    assert [(j.kind, j.total) for j in jobs] == [(GENERATE, 4), (GENERATE, 4)]
    for job in jobs:
        generate_job_run(job_id=job.pk)
    # nothing left to generate: no job, and the page says why
    response = boss.post(url, {"action": "generate", "step": "0"}, follow=True)
    assert Job.objects.count() == 2 and "nothing to generate" in response.content.decode()
    response = boss.post(url, {"action": "judge", "step": "1000", "judge": judge.judge_id})
    job = Job.objects.latest("pk")
    assert (
        job.kind == JUDGE
        and job.total == 4
        and response["Location"] == reverse("jobs:job_detail", args=[job.pk])
    )
    boss.post(url, {"action": "judge", "step": "0", "judge": judge.judge_id})
    for job in Job.objects.filter(kind=JUDGE):
        judge_job_run(job_id=job.pk)
    base, last = checkpoint_table(run).rows
    assert base.judge.score.how2score_percent == 0 and last.judge.score.how2score_percent == 100  # type: ignore[union-attr]
    assert last.judge.delta_points == 100 and last.judge.test.p_value == pytest.approx(2 * 0.5**4)  # type: ignore[union-attr]
    html = boss.get(page_url(run)).content.decode()
    assert "+100.00" in html and "p<sub>Holm</sub> = 0.125" in html


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"action": "judge", "step": "0", "judge": "nope"},
            "judge: no judge has the judge_id &#x27;nope&#x27;",
        ),
        ({"action": "judge", "step": "0"}, "judge: required"),
        ({"action": "generate", "step": "7"}, "step: run &#x27;qwen3-4b-grpo&#x27; has no checkpoint 7"),
        ({"action": "generate", "step": "x; drop"}, "step: &#x27;x; drop&#x27; is not a step or all"),
        ({"action": "delete", "step": "0"}, "action: Select a valid choice"),
    ],
)
def test_the_buttons_refuse_a_bad_field_with_a_400(
    runner: Client, data: dict[str, str], message: str
) -> None:
    run = make_run()
    checkpoint_of(run, 0)
    response = runner.post(page_url(run, "training_checkpoints_jobs"), data)
    assert response.status_code == 400 and message.replace("&#x27;", "'") in response.content.decode()
    assert not Job.objects.exists()


def test_a_judge_that_cannot_run_is_named_and_starts_no_job(runner: Client) -> None:
    run = make_run()
    checkpoint = checkpoint_of(run, 0, "base")
    make_generation(generator=checkpoint.generator)
    imported = make_judge()
    response = runner.post(
        page_url(run, "training_checkpoints_jobs"),
        {"action": "judge", "step": "all", "judge": imported.judge_id},
        follow=True,
    )
    assert "base (step 0): judge " in response.content.decode()
    assert "this row was imported" in response.content.decode() and not Job.objects.exists()


# --- permissions, the page, the API ----------------------------------------------------------------------


def test_it_is_for_staff_only(client: Client, user_client: Client, world: dict[str, Any]) -> None:
    run = world["run"]
    urls = [page_url(run), reverse("api:training-checkpoints", args=[run.name])]
    for url in urls:
        assert client.get(url).status_code in (302, 401, 403)
        assert user_client.get(url).status_code == 403
    assert client.get(urls[0])["Location"].startswith(reverse(settings.LOGIN_URL))
    for what in ("register", "training_checkpoints_ood", "training_checkpoints_jobs"):
        assert user_client.post(page_url(run, what), {}).status_code == 403
        assert client.post(page_url(run, what), {}).status_code == 302
    assert not Job.objects.exists()


def test_the_job_buttons_need_the_jobs_permission(
    staff: Client, runner: Client, world: dict[str, Any]
) -> None:
    run = world["run"]
    html = staff.get(page_url(run)).content.decode()
    assert "Generate every checkpoint" not in html and "need the “add job” permission" in html
    data = {"action": "generate", "step": "all"}
    assert staff.post(page_url(run, "training_checkpoints_jobs"), data).status_code == 403
    html = runner.get(page_url(run)).content.decode()
    assert "Generate every checkpoint" in html and html.count('value="generate"') == 1 + 3


def test_the_pages_refuse_wrong_methods_and_unknown_runs(staff: Client, world: dict[str, Any]) -> None:
    run = world["run"]
    assert staff.post(page_url(run)).status_code == 405
    assert staff.get(page_url(run, "register")).status_code == 405
    assert staff.get(reverse("judging:training_checkpoints", args=["no-such-run"])).status_code == 404


def test_the_page_shows_table_2s_columns(staff: Client, world: dict[str, Any]) -> None:
    run, external = world["run"], world["external"]
    response = staff.get(page_url(run), {"external": external.judge_id})
    html = response.content.decode()
    assert response.status_code == 200
    shown = ["33.33", "80.00", "83.33", "+46.67", "+50.00", "p<sub>Holm</sub> = 0.750", "GSM8K", "-0.31"]
    shown += ["Perplexity", "lower is better", "+0.74", "over 3", "openai/gpt-5", "50% of ref", "138% of ref"]
    for text in shown:
        assert text in html, text
    assert 'id="checkpoint-legend"' in html and "table-wrap" in html


def test_the_page_answers_an_htmx_swap_with_the_table_only(staff: Client, world: dict[str, Any]) -> None:
    response = staff.get(
        page_url(world["run"]), {"external": world["external"].judge_id}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert (
        html.lstrip().startswith('<div id="checkpoint-table">')
        and "<html" not in html
        and "openai/gpt-5" in html
    )


def test_the_page_refuses_an_unknown_judge_naming_the_field(staff: Client, world: dict[str, Any]) -> None:
    response = staff.get(page_url(world["run"]), {"external": "nope<script>"})
    assert response.status_code == 400 and response.content.decode().startswith(
        "external: no judge has the judge_id"
    )
    assert response["Content-Type"].startswith("text/plain")


def test_the_page_takes_a_bounded_number_of_queries(staff: Client, world: dict[str, Any]) -> None:
    run = world["run"]
    for step in range(2000, 2010):
        checkpoint_of(run, step)
    with CaptureQueriesContext(connection) as queries:
        assert staff.get(page_url(run), {"external": world["external"].judge_id}).status_code == 200
    assert len(queries) <= 25, [q["sql"][:120] for q in queries]


def test_the_api_answers_the_table_as_json(staff: Client, world: dict[str, Any]) -> None:
    run = world["run"]
    url = reverse("api:training-checkpoints", args=[run.name])
    body = staff.get(url, {"external": world["external"].judge_id}).json()
    assert body["run"] == run.name and body["judge"]["judge_id"] == world["judge"].judge_id
    assert [c["step"] for c in body["checkpoints"]] == [0, 500, 1000]
    last = body["checkpoints"][2]
    assert last["judge"]["delta_points"] == pytest.approx(50.0) and last["judge"]["test"]["this_only"] == 4
    assert last["external"]["how2score_percent"] == pytest.approx(100.0)
    assert last["ood_mean_delta"] == pytest.approx((-0.31 + 1.54 + 1.0) / 3)
    assert [b["name"] for b in body["benchmarks"]] == ["GSM8K", "MMLU-Pro", "Perplexity"]
    assert staff.get(url, {"judge": "nope"}).json() == {"judge": ["no judge has the judge_id 'nope'"]}
    assert staff.get(reverse("api:training-checkpoints", args=["nope"])).status_code == 404
    assert staff.post(url).status_code == 405


def test_the_api_is_in_the_schema(staff: Client) -> None:
    schema = staff.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/training/runs/{name}/checkpoints/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"name", "judge", "external"}


def test_a_run_name_with_a_slash_has_its_page(staff: Client) -> None:
    run = make_run("team/qwen3-grpo")
    assert page_url(run) == "/training/runs/team/qwen3-grpo/checkpoints/"
    assert staff.get(page_url(run)).status_code == 200


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
