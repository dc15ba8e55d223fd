"""The pairwise kind's pages: a participant's item page and its form over HTTP, the study page, the figures
page and its LLM twin's start, the JSON API and the export; staff only where staff."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.base.models import Annotation, Assignment, Study
from h2e_site.jobs.models import Job
from h2e_site.llm.config import config_from_mapping
from h2e_site.llm.prompts import prompt_sha256
from judging.configs import judge_for_config
from judging.job_kinds import PAIRWISE_JUDGE
from judging.models import Judge
from tests.annotation.conftest import qualified
from tests.factories import make_judge

from .helpers import make_generators, make_pairwise_study

pytestmark = pytest.mark.django_db


def participant_client(study: Any, n: int = 1) -> Client:
    participant = qualified(study, n)
    client = Client()
    session = client.session
    session[f"annotation:participant:{study.slug}"] = participant.pk
    session.save()
    return client


def read_all(client: Client, study: Any) -> Assignment:
    page = client.get(reverse("annotator:item", args=[study.slug]))
    assignment = page.context["assignment"]
    client.post(reverse("annotator:acknowledge_goal", args=[study.slug, assignment.pk]))
    for n in range(1, assignment.n_reading_steps + 1):
        client.post(reverse("annotator:reveal_step", args=[study.slug, assignment.pk, n]))
    Assignment.objects.filter(pk=assignment.pk).update(issued_at=timezone.now() - timedelta(minutes=5))
    return assignment


def test_the_item_page_shows_l1_and_both_l2s_and_takes_the_form() -> None:
    study = make_pairwise_study(n_goals=1, k=1)
    client = participant_client(study)
    page = client.get(reverse("annotator:item", args=[study.slug]))
    text = page.content.decode()
    assert page.status_code == 200
    # #31 item 8: "first" and "second" hold side by side and stacked (a phone); "left"/"right" did not
    assert "First L2" in text and "Second L2" in text and "Boil water." in text
    assert "left l2" not in text.lower() and "right l2" not in text.lower()
    assert "gen-a" not in text and "gen-b" not in text  # the generators are not named to participants
    assignment = read_all(client, study)
    submit = reverse("annotator:submit", args=[study.slug, assignment.pk])
    refused = client.post(submit, {"verdict": "left"})
    assert (
        refused.status_code == 400
        and "list the critical failures of the second L2" in refused.content.decode()
    )
    assert not Annotation.objects.exists()
    data = {
        "verdict": "right",
        "failure-0-side": "left",
        "failure-0-description": "pours cold water",
        "failure-0-l1": ["1"],
        "failure-0-l2": ["1"],
        "comments": "fine",
    }
    accepted = client.post(submit, data)
    assert accepted.status_code == 302
    annotation = Annotation.objects.get()
    assert annotation.answer["failures"] == [
        {"side": "left", "description": "pours cold water", "l1_steps": [1], "l2_steps": [1]}
    ]


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("verdict", "middle", "verdict"),
        ("failure-0-side", "up", "failure-0-side"),
        ("failure-0-l2", "٣", "failure-0-l2"),
        ("failure-0-l1", "99", "failure-0-l1"),
    ],
)
def test_a_field_that_does_not_parse_is_a_400_naming_it(field: str, value: str, named: str) -> None:
    study = make_pairwise_study(n_goals=1, k=1)
    client = participant_client(study)
    assignment = read_all(client, study)
    data = {"verdict": "both_none", "failure-0-description": "x", field: value}
    response = client.post(reverse("annotator:submit", args=[study.slug, assignment.pk]), data)
    assert response.status_code == 400
    assert named in response.content.decode()
    assert not Annotation.objects.exists()


def test_the_study_page_lists_the_pairs(staff: Client) -> None:
    study = make_pairwise_study(n_goals=1, k=2)
    page = staff.get(reverse("annotation:study_detail", args=[study.slug]))
    text = page.content.decode()
    assert page.status_code == 200
    assert "Generator A" in text and text.count(">model gen-a</td>") == 2 and "LLM twin" in text
    assert "<td>gen-a</td>" not in text  # #31 item 6: named, not by generator_id


def test_the_figures_page_names_the_generators_it_ranks(staff: Client) -> None:
    """#31 item 6: the rankings showed generator_ids (hex in practice); they show the generators' names."""
    study = make_pairwise_study(n_goals=1, k=1, items_per_participant=3)
    client = participant_client(study)
    for _ in range(3):
        assignment = read_all(client, study)
        client.post(reverse("annotator:submit", args=[study.slug, assignment.pk]), {"verdict": "both_none"})
    assert Annotation.objects.count() == 3
    page = staff.get(reverse("agreement:study", args=[study.slug])).content.decode()
    ranking = page.split("Ranking of the generators")[1].split("</table>")[0]
    for name in ("a", "b", "c"):
        assert f'<td title="generator_id gen-{name}">model gen-{name}</td>' in ranking
    assert ">gen-a<" not in ranking


def test_the_figures_page_the_api_and_the_export(staff: Client, user_client: Client) -> None:
    study = make_pairwise_study(n_goals=1, k=1)
    client = participant_client(study)
    assignment = read_all(client, study)
    client.post(reverse("annotator:submit", args=[study.slug, assignment.pk]), {"verdict": "both_none"})
    page = staff.get(reverse("agreement:study", args=[study.slug]))
    assert page.status_code == 200 and "Pairwise figures" in page.content.decode()
    api = staff.get(reverse("pairwise-figures-api", args=[study.slug]))
    body = api.json()
    assert api.status_code == 200 and body["humans"]["n_answers"] == 1 and body["n_pairs"] == 3
    assert user_client.get(reverse("pairwise-figures-api", args=[study.slug])).status_code == 403
    assert user_client.get(reverse("agreement:study", args=[study.slug])).status_code in (302, 403)
    assert staff.get(reverse("pairwise-figures-api", args=["no-such-study"])).status_code == 404
    rows = staff.get(reverse("annotation:study_export_jsonl", args=[study.slug]))
    content = b"".join(rows.streaming_content) if rows.streaming else rows.content
    [row] = [json.loads(line) for line in content.splitlines()]
    assert row["verdict"] == "both_none" and row["outcome"] == "tie_none"


def test_the_twin_starts_a_pairwise_judge_job_on_the_study_s_pairs(runner: Client, staff: Client) -> None:
    study = make_pairwise_study(n_goals=1, k=1)
    url = reverse("annotation:pairwise_judge", args=[study.slug])
    imported = make_judge(judge_id="imported")
    refused = runner.post(url, {"judge": f"judge:{imported.pk}"})  # offered no more: see the next test
    assert refused.status_code == 400 and "Select a valid choice" in refused.content.decode()
    assert runner.post(url, {"judge": "judge:999999"}).status_code == 400
    config = {
        "model": "twin-model",
        "backend": "openai",
        "provider": "loopback",
        "base_url": "http://127.0.0.1:9/v1",
    }
    judge = judge_for_config(config_from_mapping(config, role="judge"))
    assert staff.post(url, {"judge": f"judge:{judge.pk}"}).status_code == 403  # no run permission
    assert not Job.objects.filter(kind=PAIRWISE_JUDGE).exists()
    started = runner.post(url, {"judge": f"judge:{judge.pk}"})
    assert started.status_code == 302
    job = Job.objects.get(kind=PAIRWISE_JUDGE)
    assert job.parameters["study"] == study.pk and len(job.parameters["pairs"]) == 3
    page = runner.get(reverse("annotation:study_detail", args=[study.slug]))
    assert f"#{job.pk}" in page.content.decode() or str(job.pk) in page.content.decode()


def test_the_twin_offers_runnable_judges_and_attaches_a_config_to_an_imported_one(
    runner: Client, staff: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#31 item 6: the twin offered imported judges, which cannot run (400 "attach a config"): it offers
    judges with a config and the config files, and attaches a config to an imported judge there."""
    from judging import judge_files

    study = make_pairwise_study(n_goals=1, k=1)
    prompt = (Path(settings.BASE_DIR) / "prompts" / "judge.txt").read_text(encoding="utf-8")
    imported = Judge.objects.create(  # as import_h2e leaves it: the reference's id and prompt hash, no config
        judge_id="0a1b2c3d4e5f",
        model="org/judge-x",
        temperature=0.0,
        max_new_tokens=4096,
        prompt_sha256=prompt_sha256(prompt),
    )
    config = {
        "model": "org/judge-x",
        "backend": "openai",
        "provider": "openai",
        "base_url": "http://127.0.0.1:9/v1",
    }
    (tmp_path / "judge-x.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (tmp_path / "other.yaml").write_text(yaml.safe_dump({**config, "model": "org/other"}), encoding="utf-8")
    monkeypatch.setattr(judge_files, "JUDGE_CONFIG_DIR", tmp_path)

    figures = reverse("agreement:study", args=[study.slug])
    page = runner.get(figures).content.decode()
    menu = page.split('name="judge"')[1].split("</select>")[0]
    assert f'value="judge:{imported.pk}"' not in menu and 'value="file:judge-x.yaml"' in menu
    attach = reverse("annotation:pairwise_attach_config", args=[study.slug])
    assert f'action="{attach}"' in page and 'value="0a1b2c3d4e5f"' in page

    fields = {"imported_judge": "0a1b2c3d4e5f", "config_file": "judge-x.yaml"}
    assert staff.post(attach, fields).status_code == 403
    assert runner.get(attach).status_code == 405
    wrong = runner.post(attach, {**fields, "config_file": "other.yaml"})
    assert wrong.status_code == 400 and "model: the config says" in wrong.content.decode()
    imported.refresh_from_db()
    assert imported.config == {}
    attached = runner.post(attach, fields)
    assert attached.status_code == 302 and attached["Location"].endswith("#llm-twin")
    imported.refresh_from_db()
    assert imported.judge_id == "0a1b2c3d4e5f" and imported.config["model"] == "org/judge-x"
    menu = runner.get(figures).content.decode().split('name="judge"')[1].split("</select>")[0]
    assert f'value="judge:{imported.pk}"' in menu
    started = runner.post(
        reverse("annotation:pairwise_judge", args=[study.slug]), {"judge": f"judge:{imported.pk}"}
    )
    assert started.status_code == 302 and Job.objects.get(kind=PAIRWISE_JUDGE).parameters["study"] == study.pk


def _builder(**fields: Any) -> dict[str, Any]:
    data = {
        "kind": "pairwise", "title": "Tea", "slug": "tea-built", "seed": "0", "annotators_per_item": "3",
        "items_per_participant": "10", "min_dwell_seconds": "5", "estimated_item_minutes": "2",
        "attention_checks": "1", "attention_check_every": "0", "instructions": "Read.", "consent_text": "Ok.",
        "training_text": "## Hi", "comprehension_questions": "Is it so?\n- No\n* Yes",
    }  # fmt: skip
    return {**data, **fields}


def test_the_builder_makes_a_pairwise_study_of_two_generators_or_more(boss: Client) -> None:
    generators = make_generators()
    make_pairwise_study(n_goals=1, k=1, generators=generators)  # the goals and L2s (one study exists)
    url = reverse("annotation:study_create") + "?kind=pairwise"
    page = boss.get(url)
    assert page.status_code == 200 and 'name="generators"' in page.content.decode()
    one = boss.post(url, _builder(generators=[generators[0].pk]))
    assert one.status_code == 400 and "at least two generators" in one.content.decode()
    assert not Study.objects.filter(slug="tea-built").exists()
    made = boss.post(url, _builder(generators=[g.pk for g in generators[:2]]))
    assert made.status_code == 302
    study = Study.objects.get(slug="tea-built")
    assert study.kind == "pairwise" and study.items.not_attention_checks().count() == 1
    assert study.items.filter(is_attention_check=True).count() == 1
