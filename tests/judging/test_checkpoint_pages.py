"""A training run's checkpoints (#32 item 4): registering them (command and form), the generate and judge
buttons on the existing jobs end to end, permissions, the page and the JSON endpoint; the table's figures and
the OOD import are tests/judging/test_checkpoints.py's."""

from __future__ import annotations

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

from h2e_site.jobs.models import Job
from h2e_site.llm.config import ConfigError, config_from_mapping
from judging.configs import judge_for_config
from judging.generate_jobs import generate_job_run
from judging.job_kinds import GENERATE, JUDGE
from judging.judge_jobs import judge_job_run
from judging.models import Generator, Judge
from judging.training.checkpoint_models import Checkpoint
from judging.training.checkpoints import CheckpointRefused, checkpoint_register, checkpoint_table
from tests.factories import make_generation, make_judge, make_procedure
from tests.judging.test_checkpoints import (
    SHIPPED,
    checkpoint_of,
    make_run,
    make_world,
    page_url,
)
from tests.llm_server import LoopbackLLM, failure, judge_json

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> dict[str, Any]:
    """The checkpoints' world of tests/judging/test_checkpoints.py (its fixture is that module's)."""
    return make_world()


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
