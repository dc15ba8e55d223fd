"""A job that cannot be queued because the broker is down (#31 item 19): what was stored stays stored, the
job row says it never ran and how to run it, and the command, the admin page and the API say so, never a
traceback or a 500. The broker is really unreachable: Celery's broker URL points at a closed port."""

from __future__ import annotations

import io
import socket
import tarfile
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from h2e_site.celery import app
from h2e_site.embeddings.job_kinds import EMBED
from h2e_site.jobs.models import Job, JobStatus
from judging.job_kinds import IMPORT
from judging.models import CriticalFailure
from mining.models import Procedure
from tests.h2e_trees import build_standard_tree
from tests.mining.conftest import BENCH_RECORDS, write_jsonl

pytestmark = pytest.mark.django_db(transaction=True)  # commits: the jobs are enqueued on commit


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def broker_down(settings: Any) -> Iterator[str]:
    """Celery's broker at a closed port (the app's connection and producer pools dropped, as after a fork,
    so no connection to the real one is reused), and the embed job queued after imports, as outside the
    tests."""
    url = f"redis://127.0.0.1:{closed_port()}/0"
    before = app.conf.broker_url
    settings.EMBED_AFTER_IMPORTS = True
    settings.CELERY_BROKER_URL = url
    app.conf.broker_url = url
    _drop_pools()
    try:
        yield url
    finally:
        app.conf.broker_url = before
        _drop_pools()


def _drop_pools() -> None:
    app._pool = None
    app.amqp._producer_pool = None


def test_import_bench_stores_everything_and_says_the_embed_job_could_not_be_queued(
    broker_down: str, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "bench.jsonl", [dict(r) for r in BENCH_RECORDS])
    out, err = StringIO(), StringIO()
    call_command("import_bench", str(path), stdout=out, stderr=err)  # exit status 0: no CommandError
    assert Procedure.objects.count() == len(BENCH_RECORDS)
    job = Job.objects.get(kind=EMBED)
    assert job.status == JobStatus.FAILED and job.parameters["sources"] == ["procedures"]
    warning = err.getvalue()
    assert "Warning: the import succeeded" in warning
    assert (
        "the job broker could not be reached" in warning and f"embed texts job #{job.pk} never ran" in warning
    )
    assert "python manage.py embed --source procedures --inline" in warning
    assert "Traceback" not in warning and "OperationalError" not in out.getvalue()
    assert job.error in warning


def test_import_h2e_stores_everything_and_says_the_embed_job_could_not_be_queued(
    broker_down: str, tmp_path: Path
) -> None:
    out_root = build_standard_tree(tmp_path / "out")
    err = StringIO()
    call_command("import_h2e", str(out_root), stdout=StringIO(), stderr=err)
    assert CriticalFailure.objects.exists()
    job = Job.objects.get(kind=EMBED)
    assert job.status == JobStatus.FAILED
    assert "python manage.py embed --source procedures --source judge_failures --inline" in err.getvalue()


def test_the_embed_command_named_in_the_warning_runs_without_the_broker(
    broker_down: str, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "bench.jsonl", [dict(r) for r in BENCH_RECORDS][:1])
    err = StringIO()
    call_command("import_bench", str(path), stdout=StringIO(), stderr=err)
    command = err.getvalue().split("Run it with: python manage.py ")[1].split()
    out = StringIO()
    call_command(*command, stdout=out, stderr=StringIO())
    assert "succeeded" in out.getvalue()


def test_a_command_whose_only_task_is_to_queue_a_job_fails_saying_why(broker_down: str) -> None:
    with pytest.raises(CommandError, match="the job broker could not be reached"):
        call_command("embed", "--source", "procedures", stdout=StringIO(), stderr=StringIO())
    assert Job.objects.get(kind=EMBED).status == JobStatus.FAILED


def _tree_upload() -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        data = b"{}\n"
        info = tarfile.TarInfo("out_root/run_abc/generations.jsonl")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return SimpleUploadedFile("tree.tar.gz", buffer.getvalue())


def test_the_admin_import_page_says_the_job_was_not_queued_not_a_500(
    broker_down: str, boss: Client, settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path
    response = boss.post(
        reverse("admin:judging_import"),
        {"uploads": [_tree_upload()], "kind": "h2e", "split": "bench"},
        follow=True,
    )
    assert response.status_code == 200
    job = Job.objects.get(kind=IMPORT)
    assert job.status == JobStatus.FAILED
    shown = [str(m) for m in response.context["messages"]]
    assert shown == [job.error], shown
    assert "The files are saved; import them with: python manage.py import_h2e" in job.error
    assert list((tmp_path / "uploads").glob("*/out_root_0/out_root/run_abc/generations.jsonl"))


def test_the_api_answers_503_saying_the_upload_is_stored_and_the_job_not_queued(
    broker_down: str, boss: Client, settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path
    response = boss.post("/api/imports/", {"files": [_tree_upload()], "kind": "h2e"})
    assert response.status_code == 503 and response["Content-Type"] == "application/json"
    body = response.json()
    job = Job.objects.get(kind=IMPORT)
    assert body["job"]["id"] == job.pk and body["job"]["status"] == "failed"
    assert body["detail"] == job.error and "The files are saved" in body["detail"]
    started = boss.post("/api/jobs/", {"kind": "embed"}, content_type="application/json")
    assert started.status_code == 503 and "python manage.py embed" in started.json()["detail"]


def test_a_participant_answer_is_stored_and_sees_no_warning_when_its_embed_job_is_not_queued(
    broker_down: str, client: Client
) -> None:
    from annotation.base.models import AnnotatedFailure
    from tests.annotation.conftest import make_study
    from tests.annotation.test_hardening import failure_post, ready_item
    from tests.annotation.test_views import url

    study = make_study(n_items=2)
    assignment = ready_item(client, study)
    response = client.post(url("submit", study, assignment), failure_post(), follow=True)
    assert response.status_code == 200 and AnnotatedFailure.objects.count() == 1
    assert "broker" not in response.content.decode()
    assert Job.objects.get(kind=EMBED).status == JobStatus.FAILED
