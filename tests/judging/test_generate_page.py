"""The "Generate L2" page (issue #19 item 13): a generator config file (or a generator made from one) starts a
generate job from the UI, as "Judge with..." does for judges; it needs jobs.add_job."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from h2e_site.jobs.models import Job
from judging.admin import generate as generate_page
from judging.job_kinds import GENERATE
from judging.models import Generator
from tests.factories import make_generator, make_procedure, make_user

pytestmark = pytest.mark.django_db
URL = "/admin/judging/generator/generate/"


@pytest.fixture
def bench() -> list[Any]:
    return [make_procedure(goal=f"Goal {i}") for i in range(3)] + [make_procedure(split="train")]


def test_it_is_linked_from_the_jobs_page_and_the_generators_list(admin_client: Client) -> None:
    assert reverse("admin:judging_generate") == URL
    assert f'href="{URL}"' in admin_client.get(reverse("jobs:job_list")).content.decode()
    generators = admin_client.get(reverse("admin:judging_generator_changelist")).content.decode()
    assert f'href="{URL}"' in generators and "/admin/judging/generator/add/" not in generators


def test_it_offers_every_shipped_generator_config_and_each_one_loads(admin_client: Client) -> None:
    files = generate_page.generator_config_files()
    assert {p.name for p in files} >= {"smollm2-local.yaml", "gpt-4.1-openai.yaml"}
    html = admin_client.get(URL).content.decode()
    for path in files:
        assert f'value="file:{path.name}"' in html
        assert generate_page.generator_from_choice(f"file:{path.name}").generator_id
    # once made, a file shows as its generator (named with the file); an imported generator never shows
    made = generate_page.generator_from_choice("file:smollm2-local.yaml")
    imported = make_generator(model="imported-model")
    html = admin_client.get(URL).content.decode()
    assert f'value="generator:{made.pk}"' in html and "configs/generators/smollm2-local.yaml" in html
    assert 'value="file:smollm2-local.yaml"' not in html and "imported-model" not in html
    assert imported.config == {}


def test_it_marks_the_demo_model_in_the_menu(admin_client: Client) -> None:
    """#31 item 6: the embedded SmolLM2 was offered like any model; it says it is a demo model, as a file and
    as the generator made from it, and no other choice does."""
    options = re.findall(
        r"<option value=\"([^\"]+)\"[^>]*>([^<]*)</option>", admin_client.get(URL).content.decode()
    )
    demo = {value for value, label in options if "demo model" in label}
    assert demo == {"file:smollm2-local.yaml"}, options
    made = generate_page.generator_from_choice("file:smollm2-local.yaml")
    options = re.findall(
        r"<option value=\"([^\"]+)\"[^>]*>([^<]*)</option>", admin_client.get(URL).content.decode()
    )
    assert {value for value, label in options if "demo model" in label} == {f"generator:{made.pk}"}


def test_it_starts_a_generate_job_from_a_config_file_and_follows_it(admin_client: Client, bench: Any) -> None:
    response = admin_client.post(
        URL, {"generator": "file:smollm2-local.yaml", "split": "bench", "limit": "2"}
    )
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("jobs:job_detail", args=[job.pk])
    generator = Generator.objects.get(pk=job.parameters["generator"])
    assert job.kind == GENERATE and generator.config["model"] == "SmolLM2-135M-Instruct"
    assert job.parameters["items"] == [p.pk for p in bench[:2]] and job.total == 2
    page = admin_client.get(response["Location"]).content.decode()
    assert generator.model in page and "progress" in page
    # the same file again makes no second generator
    admin_client.post(URL, {"generator": "file:smollm2-local.yaml", "split": "train"})
    assert Generator.objects.count() == 1 and Job.objects.count() == 2


def test_it_names_the_file_of_a_broken_config(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(generate_page, "GENERATOR_CONFIG_DIR", tmp_path)
    (tmp_path / "broken.yaml").write_text("model: x\nbackend: nope\n")
    response = admin_client.post(URL, {"generator": "file:broken.yaml", "split": "bench"})
    assert (
        response.status_code == 400 and "broken.yaml: backend: unknown backend" in response.content.decode()
    )
    for junk in ("file:../judges/smollm2-local.yaml", "generator:999", "generator:x", ""):
        response = admin_client.post(URL, {"generator": junk, "split": "bench"})
        assert response.status_code == 400, junk
    assert not Job.objects.exists() and not Generator.objects.exists()


def test_it_needs_the_add_job_permission(client: Client, bench: Any) -> None:
    staff = make_user(is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["view_generator", "view_job"]))
    client.force_login(staff)
    assert client.get(URL).status_code == 403
    assert client.post(URL, {"generator": "file:smollm2-local.yaml", "split": "bench"}).status_code == 403
    assert URL not in client.get(reverse("admin:judging_generator_changelist")).content.decode()
    staff.user_permissions.add(Permission.objects.get(codename="add_job"))
    client.force_login(staff)
    assert client.post(URL, {"generator": "file:smollm2-local.yaml", "split": "bench"}).status_code == 302
    assert Job.objects.get().created_by == staff
    anonymous = Client().get(URL)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
