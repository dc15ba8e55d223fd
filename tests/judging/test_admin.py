"""Django admin: every model's list and change pages, raw texts escaped, jobs read-only, the import page."""

from __future__ import annotations

import io
import tarfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from h2e_site.jobs.models import Job
from judging.models import CriticalFailure
from tests.factories import (
    make_generation,
    make_job,
    make_judgment,
    make_procedure,
    make_scored_world,
    make_user,
)

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script>"
MODELS = ["mining.topic", "mining.procedure", "jobs.job"] + [
    f"judging.{m}" for m in ("generator", "generation", "judge", "judgment", "criticalfailure")
]


def admin_url(model: str, view: str, *args: Any) -> str:
    app, name = model.split(".")
    return reverse(f"admin:{app}_{name}_{view}", args=args)


@pytest.fixture
def judgment() -> Any:
    procedure = make_procedure(goal=f"Goal {XSS}")
    generation = make_generation(procedure=procedure, completion=f"1. {XSS}")
    return make_judgment(generation=generation, failures=[("Misses a step", [1], [2])], raw_output=XSS)


@pytest.mark.parametrize("model", MODELS)
def test_it_lists_every_model(admin_client: Client, judgment: Any, model: str) -> None:
    make_job()
    response = admin_client.get(admin_url(model, "changelist"))
    assert response.status_code == 200


@pytest.mark.parametrize("model", MODELS)
def test_it_searches_every_model(admin_client: Client, judgment: Any, model: str) -> None:
    response = admin_client.get(admin_url(model, "changelist"), {"q": "ex-1"})
    assert response.status_code == 200


def test_it_opens_every_change_page(admin_client: Client, judgment: Any) -> None:
    job = make_job()
    failure = CriticalFailure.objects.get(judgment=judgment)
    generation = judgment.generation
    objects = {
        "mining.topic": generation.procedure.topic,
        "mining.procedure": generation.procedure,
        "judging.generator": generation.generator,
        "judging.generation": generation,
        "judging.judge": judgment.judge,
        "judging.judgment": judgment,
        "judging.criticalfailure": failure,
        "jobs.job": job,
    }
    for model, obj in objects.items():
        assert admin_client.get(admin_url(model, "change", obj.pk)).status_code == 200, model


def test_it_shows_raw_texts_escaped_in_pre_blocks(admin_client: Client, judgment: Any) -> None:
    html = admin_client.get(admin_url("judging.judgment", "change", judgment.pk)).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;</pre>" in html
    assert XSS not in html
    assert reverse("failures:generation_detail", args=[judgment.generation_id]) in html
    html = admin_client.get(
        admin_url("judging.generation", "change", judgment.generation_id)
    ).content.decode()
    assert "1. &lt;script&gt;alert(1)&lt;/script&gt;</pre>" in html and XSS not in html
    assert admin_url("judging.judgment", "change", judgment.pk) in html  # link to its judgments


def test_it_lists_judgments_without_counting_the_whole_table(
    admin_client: Client, django_assert_max_num_queries: Any
) -> None:
    make_scored_world()
    admin_client.get(admin_url("judging.judgment", "changelist"))
    with django_assert_max_num_queries(12):
        response = admin_client.get(admin_url("judging.judgment", "changelist"), {"has_failure__exact": "1"})
    assert response.status_code == 200
    assert "Show all" in response.content.decode()  # show_full_result_count=False


def test_it_keeps_jobs_read_only(admin_client: Client) -> None:
    job = make_job(total=10, done=5)
    assert admin_client.get(admin_url("jobs.job", "add")).status_code == 403
    html = admin_client.get(admin_url("jobs.job", "change", job.pk)).content.decode()
    assert '<progress max="100" value="50">' in html
    assert 'name="status"' not in html


def test_it_offers_the_import_page_to_staff_only(admin_client: Client, client: Client) -> None:
    url = reverse("admin:judging_import")
    html = admin_client.get(url).content.decode()
    assert 'enctype="multipart/form-data"' in html and 'name="skip_invalid"' in html
    assert 'name="uploads"' in html and "multiple" in html
    assert url in admin_client.get(admin_url("jobs.job", "changelist")).content.decode()
    assert client.get(url).status_code == 302
    staff = make_user(is_staff=True)
    client.force_login(staff)
    assert client.get(url).status_code == 403  # staff without the add-job permission


def test_it_refuses_a_tar_with_links(admin_client: Client, settings: Any, tmp_path: Any) -> None:
    settings.VAR_DIR = tmp_path
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        link = tarfile.TarInfo("out/secrets")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tf.addfile(link)
    upload = SimpleUploadedFile("tree.tar.gz", buffer.getvalue())
    response = admin_client.post(
        reverse("admin:judging_import"), {"uploads": [upload], "kind": "h2e", "split": "bench"}
    )
    assert response.status_code == 200
    assert "links are refused" in response.content.decode()
    assert not Job.objects.exists()
    assert not list((tmp_path / "uploads").iterdir())  # the rejected batch is removed


def test_it_starts_an_import_job_and_redirects_to_it(
    admin_client: Client, settings: Any, tmp_path: Any
) -> None:
    settings.VAR_DIR = tmp_path
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        data = b"{}\n"
        info = tarfile.TarInfo("out_root/run_abc/generations.jsonl")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    upload = SimpleUploadedFile("tree.tar.gz", buffer.getvalue())
    response = admin_client.post(
        reverse("admin:judging_import"), {"uploads": [upload], "kind": "h2e", "split": "bench"}
    )
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("jobs:job_detail", args=[job.pk])
    assert list((tmp_path / "uploads").glob("*/out_root_0/out_root/run_abc/generations.jsonl"))
