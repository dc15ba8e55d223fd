"""The Mining page (#31 item 7): a run started from a config of configs/mining/ (a job with a live row), the
run's page with, per stage, what entered, passed and was dropped and why; the demo's document sample."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from h2e_site.jobs.models import JobStatus
from mining import forms
from mining.job_kinds import MINE
from mining.models import MiningRun, SourceDocument
from mining.runs import mine_job_run, mining_run_create
from tests.factories import make_user
from tests.llm_server import LoopbackLLM
from tests.mining.canned import canned_responder, loopback_config, make_document

pytestmark = pytest.mark.django_db

MARKERS = {"p-good": "", "p-noproc": "NOPROC", "p-few": "FEWSTEPS", "p-brand": "BRAND", "p-nogoal": "NOGOAL"}


@pytest.fixture
def configs(tmp_path: Path, llm_server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch) -> Path:
    """configs/mining/ as the page reads it: a run config for the loopback LLM."""
    llm_server.responder = canned_responder
    (tmp_path / "loopback.yaml").write_text(yaml.safe_dump(loopback_config(llm_server.base_url)))
    monkeypatch.setattr(forms, "CONFIG_DIR", tmp_path)
    return tmp_path


@pytest.fixture
def documents(db: None) -> None:
    for doc_id, marker in MARKERS.items():
        make_document(doc_id, marker)


def test_it_starts_a_run_from_the_page_and_shows_its_job_and_funnel(
    configs: Path, documents: None, runner: Client
) -> None:
    page = runner.get(reverse("mine:runs")).content.decode()
    assert 'value="loopback.yaml"' in page and "5 documents imported, in 1 topic." in page

    response = runner.post(reverse("mine:start"), {"config": "loopback.yaml", "name": "from the page"})
    run = MiningRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("mine:run", args=[run.pk])
    assert (run.name, run.job.kind, run.job.status, run.documents.count()) == (
        "from the page",
        MINE,
        JobStatus.QUEUED,
        5,
    )
    queued = runner.get(response["Location"]).content.decode()
    assert f'id="job-{run.job_id}"' in queued and 'hx-trigger="every 2s"' in queued  # the live job row
    assert 'hx-trigger="every 3s, jobs-changed from:body"' in queued

    mine_job_run(job_id=run.job_id or 0)  # what the worker does with the queued job
    with CaptureQueriesContext(connection) as queries:
        html = runner.get(response["Location"], HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<div id="run-body"') and "every 3s" not in html
    assert len(queries) <= 16
    counts = {
        stage: [
            html.split(f'data-stage="{stage}"', 1)[1].split(f'data-count="{c}"><strong>', 1)[1][:2]
            for c in ("entered", "passed", "dropped")
        ]
        for stage in ("extraction", "prefilter", "filter", "final_filter")
    }
    assert counts["extraction"] == ["5<", "4<", "1<"]  # NOPROC
    assert counts["prefilter"] == ["4<", "3<", "1<"]  # FEWSTEPS
    assert counts["filter"] == ["3<", "1<", "2<"]  # BRAND, and NOGOAL without a request
    assert counts["final_filter"] == ["1<", "1<", "0<"]
    assert "no valid process in the document" in html and "3 steps, outside 5-15" in html
    assert "Named-entity focused: a branded product." in html and "(1 without a request)" in html
    assert "1 procedure stored" in html


def test_it_refuses_a_config_that_cannot_run_naming_the_file_and_field(
    configs: Path, documents: None, runner: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    (configs / "broken.yaml").write_text("name: x\nstages: {default: {model: m}}\nseeds: 3\n")
    broken = runner.post(reverse("mine:start"), {"config": "broken.yaml"})
    assert broken.status_code == 400 and "seeds: unknown field" in broken.content.decode()

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (configs / "openai.yaml").write_text(
        "stages: {default: {model: gpt-4.1, backend: openai, provider: openai}}\n"
    )
    keyless = runner.post(reverse("mine:start"), {"config": "openai.yaml"})
    assert keyless.status_code == 400
    assert "openai.yaml: stages.extraction: the OpenAI API needs a key" in keyless.content.decode()

    outside = runner.post(reverse("mine:start"), {"config": "../loopback.yaml"})
    assert outside.status_code == 400 and "Select a valid choice" in outside.content.decode()
    assert not MiningRun.objects.exists()


def test_it_refuses_a_config_that_selects_no_document(configs: Path, runner: Client) -> None:
    response = runner.post(reverse("mine:start"), {"config": "loopback.yaml"})
    assert response.status_code == 400 and "loopback.yaml selects no document" in response.content.decode()
    assert not MiningRun.objects.exists()


def test_it_needs_staff_and_the_run_permission(configs: Path, documents: None, staff: Client) -> None:
    anonymous = Client().get(reverse("mine:runs"))
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    outsider = Client()
    outsider.force_login(make_user(is_staff=False))
    assert outsider.get(reverse("mine:runs")).status_code == 403
    assert "needs the “add job” permission" in staff.get(reverse("mine:runs")).content.decode()
    assert staff.post(reverse("mine:start"), {"config": "loopback.yaml"}).status_code == 403
    assert not MiningRun.objects.exists()


def test_it_lists_the_runs_in_a_fixed_number_of_queries(
    configs: Path, documents: None, staff: Client
) -> None:
    config = forms.load_run_config(configs / "loopback.yaml")
    for _ in range(3):
        mining_run_create(config=config, enqueue=False)
    with CaptureQueriesContext(connection) as queries:
        html = staff.get(reverse("mine:runs")).content.decode()
    assert html.count('<tr data-run="') == 3
    assert len(queries) <= 8


def test_it_refuses_other_methods(configs: Path, runner: Client) -> None:
    assert runner.post(reverse("mine:runs")).status_code == 405
    assert runner.get(reverse("mine:start")).status_code == 405


def test_it_links_the_mining_page_from_the_navigation(staff: Client) -> None:
    html = staff.get(reverse("judging:leaderboard")).content.decode()
    nav = html.split('<nav class="nav"', 1)[1].split("</nav>", 1)[0]
    assert f'href="{reverse("mine:runs")}"' in nav and ">Mining</a>" in nav


def test_the_demo_sample_imports_as_the_importer_expects(db: None) -> None:
    out = StringIO()
    call_command("import_documents", "demo/mining/documents.jsonl", stdout=out, verbosity=0)
    assert SourceDocument.objects.count() == 14
    topics = set(SourceDocument.objects.values_list("topic__name", flat=True))
    assert len(topics) == 7 and None not in topics


def test_it_offers_first_a_config_that_can_run_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an OpenAI key the form starts on the embedded model's config, not the paper's (which it would
    refuse); with the key, the first file."""
    from mining.forms import MineForm, config_files

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert MineForm().fields["config"].initial == "smollm2-local.yaml"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert MineForm().fields["config"].initial == config_files()[0].name == "gpt-4.1-openai.yaml"
