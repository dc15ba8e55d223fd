"""Failure patterns (a topic's failure descriptions clustered by faiss k-means): the same seed the same
patterns, the three themes found, representatives, shares by hand, the pages and the job; similar failures are
tests/annotation/test_failure_meaning.py's."""

from __future__ import annotations

import math
import re
from html import escape
from io import StringIO
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation.base.embedding import HUMAN_FAILURES
from annotation.base.models import AnnotatedFailure
from annotation.failures.meaning.jobs import (
    failure_patterns_job_create,
    failure_patterns_job_run,
    k_from_failures,
)
from annotation.failures.meaning.models import FailurePattern, FailurePatternRun
from h2e_site.bounds import OutOfRange
from h2e_site.embeddings.job_kinds import EMBED
from h2e_site.embeddings.jobs import embed_job_run
from h2e_site.embeddings.models import TextVector
from h2e_site.jobs.models import Job, JobStatus
from h2e_site.llm.base import LLMResult
from judging.embedding import JUDGE_FAILURES
from judging.models import CriticalFailure
from judging.results import judgments_store
from mining.models import Topic
from tests.annotation.test_failure_meaning import (
    THEMES,
    XSS,
    failure_world,
    store_vectors,
    stored_unit,
)
from tests.factories import make_generation, make_judge, make_judgment, make_procedure
from tests.llm_server import failure, judge_json

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> dict[str, Any]:
    return failure_world()


def run_patterns(topic: Topic, *, k: int = 3, seed: int = 7) -> FailurePatternRun:
    job = failure_patterns_job_create(topic=topic, k=k, seed=seed, enqueue=False)
    finished = failure_patterns_job_run(job_id=job.pk)
    assert finished is not None and finished.status == JobStatus.SUCCEEDED, finished and finished.error
    return FailurePatternRun.objects.get(job=job)


def clusters_of(run: FailurePatternRun) -> list[tuple[int, str, int, list[int], list[int]]]:
    return [
        (p.size, p.representative_source, p.representative_pk, p.judge_members, p.human_members)
        for p in run.patterns.order_by("rank")
    ]


def topic_rows(topic: Topic) -> list[tuple[str, int, str, str, str, str]]:
    """(source, id, text, generator_id, judge_id, study) of the topic's failures, judges' then humans'."""
    judge = (
        CriticalFailure.objects.filter(judgment__topic=topic)
        .order_by("pk")
        .values_list("pk", "description", "judgment__generator__generator_id", "judgment__judge__judge_id")
    )
    generation = "annotation__item__generation__"
    human = (
        AnnotatedFailure.objects.filter(**{f"{generation}procedure__topic": topic})
        .order_by("pk")
        .values_list("pk", "description", f"{generation}generator__generator_id", "annotation__study__slug")
    )
    return [("judge", pk, text, g, j, "") for pk, text, g, j in judge] + [
        ("human", pk, text, g, "", s) for pk, text, g, s in human
    ]


def test_the_same_seed_gives_the_same_patterns(world: dict[str, Any]) -> None:
    first, second = run_patterns(world["topic"], seed=11), run_patterns(world["topic"], seed=11)
    assert clusters_of(first) == clusters_of(second)
    assert first.pk != second.pk and first.n_failures == len(topic_rows(world["topic"]))


def test_it_finds_the_three_themes(world: dict[str, Any]) -> None:
    run = run_patterns(world["topic"])
    rows = {(s, pk): text for s, pk, text, *_ in topic_rows(world["topic"])}
    for pattern in run.patterns.all():
        members = [("judge", pk) for pk in pattern.judge_members] + [
            ("human", pk) for pk in pattern.human_members
        ]
        themes = {next(t for t in THEMES if t in rows[m]) for m in members}
        assert len(themes) == 1, themes  # one theme a cluster: the clustering follows the vectors


def test_the_representative_is_the_member_nearest_the_centroid(world: dict[str, Any]) -> None:
    run = run_patterns(world["topic"], k=4, seed=3)
    rows = topic_rows(world["topic"])
    place = {(s, pk): i for i, (s, pk, *_) in enumerate(rows)}
    vectors = stored_unit([text for _, _, text, *_ in rows])
    for pattern in run.patterns.all():
        members = [place["judge", pk] for pk in pattern.judge_members] + [
            place["human", pk] for pk in pattern.human_members
        ]
        centroid = vectors[members].mean(axis=0)
        centroid /= np.linalg.norm(centroid)
        nearest = members[int(np.argmin(np.linalg.norm(vectors[members] - centroid, axis=1)))]
        assert (pattern.representative_source, pattern.representative_pk) == rows[nearest][:2]
        assert pattern.representative_text == rows[nearest][2]
    sizes = list(run.patterns.order_by("rank").values_list("size", flat=True))
    assert sizes == sorted(sizes, reverse=True) and sum(sizes) == len(rows)


def test_the_shares_are_the_hand_counts(world: dict[str, Any]) -> None:
    run = run_patterns(world["topic"])
    rows = {(s, pk): (g, j, st) for s, pk, _, g, j, st in topic_rows(world["topic"])}
    by_generator: dict[str, int] = {}
    for g, _, _ in rows.values():
        by_generator[g] = by_generator.get(g, 0) + 1
    assert run.by_generator == by_generator
    for pattern in run.patterns.all():
        members = [rows["judge", pk] for pk in pattern.judge_members] + [
            rows["human", pk] for pk in pattern.human_members
        ]
        for generator in world["generators"]:
            k = sum(1 for g, _, _ in members if g == generator.generator_id)
            share = next(s for s in pattern.shares(run)["generators"] if s.name == generator.generator_id)
            assert (share.k, share.n) == (k, by_generator[generator.generator_id])
        for judge in world["judges"]:
            k = sum(1 for _, j, _ in members if j == judge.judge_id)
            n = sum(1 for _, j, _ in rows.values() if j == judge.judge_id)
            share = next(s for s in pattern.shares(run)["judges"] if s.name == judge.judge_id)
            assert (share.k, share.n, share.demo) == (k, n, judge.model == "judge-y")
        assert sum(pattern.by_study.values()) == len(pattern.human_members)


def test_the_patterns_page_shows_clusters_largest_first_with_their_shares(
    world: dict[str, Any], staff: Client, django_assert_max_num_queries: Any
) -> None:
    run = run_patterns(world["topic"], k=3)
    url = reverse("failures:failure_patterns", args=[world["topic"].pk])
    with django_assert_max_num_queries(12):
        response = staff.get(url)
    html = response.content.decode()
    assert response.status_code == 200
    positions = [html.index(f'id="pattern-{p.rank}"') for p in run.patterns.order_by("rank")]
    assert positions == sorted(positions)
    largest = run.patterns.get(rank=1)
    share = largest.shares(run)["generators"][0]
    assert f"({share.k} of {share.n})" in html
    assert f"?pattern={largest.pk}" in html
    assert "prove the plumbing" in html and world["judges"][1].judge_id in html  # the demo judge is named
    fragment = staff.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="pattern-results")
    assert b"<html" not in fragment.content and b'id="pattern-results"' in fragment.content


def test_a_pattern_opens_the_failure_browser_on_its_failures(world: dict[str, Any], staff: Client) -> None:
    run = run_patterns(world["topic"])
    pattern = run.patterns.get(rank=2)
    response = staff.get(reverse("failures:failure_list"), {"pattern": pattern.pk})
    html = response.content.decode()
    listed = response.context["page"].rows
    assert {(r.source, r.pk) for r in listed} == {("judge", pk) for pk in pattern.judge_members} | {
        ("human", pk) for pk in pattern.human_members
    }
    assert f"Pattern {pattern.rank} of" in html and response.context["total"] == pattern.size
    unknown = staff.get(reverse("failures:failure_list"), {"pattern": "999999"})
    assert "Filter pattern: no failure pattern with this id" in unknown.content.decode()
    assert not unknown.context["page"].rows
    api = staff.get("/api/failures/", {"pattern": pattern.pk, "counts": "true"})
    assert api.status_code == 200 and sum(c["total"] for c in api.json()["counts_by_topic"]) == pattern.size


def test_the_patterns_page_is_staff_only_and_starting_needs_the_run_permission(
    world: dict[str, Any], staff: Client, user_client: Client, client: Client
) -> None:
    url = reverse("failures:failure_patterns", args=[world["topic"].pk])
    assert user_client.get(url).status_code == 403 and client.get(url).status_code == 302
    assert user_client.get(reverse("failures:pattern_topics")).status_code == 403
    assert staff.post(url, {"k": 3, "seed": 0}).status_code == 403
    assert staff.put(url).status_code == 405
    assert staff.get(reverse("failures:failure_patterns", args=[999999])).status_code == 404
    assert staff.get(url, {"run": "abc"}).status_code == 404
    assert not Job.objects.exists()


def test_the_form_starts_a_job(world: dict[str, Any], runner: Client) -> None:
    url = reverse("failures:failure_patterns", args=[world["topic"].pk])
    response = runner.post(url, {"k": 3, "seed": 5})
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.parameters == {
        "topic": world["topic"].pk,
        "topic_name": "Health",
        "k": 3,
        "k_chosen": False,
        "seed": 5,
    }
    assert f"#{job.pk}" in runner.get(url).content.decode()


@pytest.mark.parametrize(
    ("field", "value", "label"),
    [("k", "1", "Clusters (k)"), ("k", "101", "Clusters (k)"), ("k", "many", "Clusters (k)"),
     ("seed", "-1", "Seed"), ("seed", str(2**31), "Seed")],
)  # fmt: skip
def test_the_form_refuses_out_of_bounds_values_naming_the_field(
    world: dict[str, Any], runner: Client, field: str, value: str, label: str
) -> None:
    url = reverse("failures:failure_patterns", args=[world["topic"].pk])
    response = runner.post(url, {"k": "3", "seed": "0", field: value})
    assert response.status_code == 400
    assert field in response.context["form"].errors
    assert f"{label}:" in response.content.decode()
    assert not Job.objects.exists()


def test_the_service_the_command_and_the_api_refuse_the_same_bounds(
    world: dict[str, Any], boss: Client
) -> None:
    with pytest.raises(OutOfRange, match=r"^k: 101"):
        failure_patterns_job_create(topic=world["topic"], k=101, seed=0, enqueue=False)
    with pytest.raises(CommandError, match="k: 1 is not a number from 2 to 100"):
        call_command("failure_patterns", "--topic", "Health", "--k", "1", stdout=StringIO())
    with pytest.raises(CommandError, match="topic: no topic named 'Nowhere'"):
        call_command("failure_patterns", "--topic", "Nowhere", stdout=StringIO())
    for body, field in (({"k": 0}, "k"), ({"seed": -3}, "seed"), ({"topic": "Nowhere"}, "topic")):
        response = boss.post(
            "/api/jobs/",
            {"kind": "failure_patterns", "topic": "Health", **body},
            content_type="application/json",
        )
        assert response.status_code == 400 and field in response.json(), response.content
    assert not Job.objects.exists()


def test_the_command_runs_the_job_inline_with_a_progress_bar(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    out = StringIO()
    call_command("failure_patterns", "--topic", "Health", "--k", "3", "--inline", stdout=out)
    run = FailurePatternRun.objects.get()
    assert (run.k, run.seed, run.patterns.count()) == (3, 0, 3)
    assert "succeeded" in out.getvalue() and "patterns: 100%" in capsys.readouterr().err
    job = Job.objects.get()
    assert (job.done, job.total, job.parameters["run"]) == (run.n_failures + 2, run.n_failures + 2, run.pk)


@pytest.mark.parametrize(
    ("n", "k"), [(2, 2), (3, 2), (8, 2), (18, 3), (50, 5), (288, 12), (289, 12), (600_000, 12)]
)
def test_k_from_the_data_is_the_floor_of_the_root_of_half_the_failures_from_2_to_12(n: int, k: int) -> None:
    assert k_from_failures(n) == k


def test_without_k_the_form_and_the_command_choose_it_from_the_failures(
    world: dict[str, Any], runner: Client
) -> None:
    n = len(topic_rows(world["topic"]))
    expected = max(2, min(12, math.isqrt(n // 2)))
    url = reverse("failures:failure_patterns", args=[world["topic"].pk])
    response = runner.post(url, {"k": "", "seed": "5"}, follow=True)
    job = Job.objects.get()
    assert (job.parameters["k"], job.parameters["k_chosen"]) == (expected, True)
    assert f"{expected} patterns of Health (k chosen from the data)" in response.content.decode()
    call_command("failure_patterns", "--topic", "Health", "--inline", stdout=StringIO(), stderr=StringIO())
    assert FailurePatternRun.objects.get().k == expected


def test_a_topic_with_too_few_failures_is_refused_before_starting_by_the_form_command_and_api(
    world: dict[str, Any], runner: Client, boss: Client
) -> None:
    religion = Topic.objects.get(name="Religion")
    message = "topic 'Religion' has 1 failure with a stored vector (of 1): failure patterns need at least 2"
    response = runner.post(reverse("failures:failure_patterns", args=[religion.pk]), {"k": "", "seed": "0"})
    assert response.status_code == 400 and escape(message) in response.content.decode()
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("failure_patterns", "--topic", "Religion", stdout=StringIO())
    api = boss.post(
        "/api/jobs/", {"kind": "failure_patterns", "topic": "Religion"}, content_type="application/json"
    )
    assert api.status_code == 400 and message in api.json()["detail"]
    assert not Job.objects.exists()


def test_a_topic_whose_failures_have_no_vector_yet_is_told_to_run_the_embed_job(
    world: dict[str, Any], runner: Client
) -> None:
    procedure = make_procedure(goal="Sail", topic="Sea")
    make_judgment(generation=make_generation(procedure=procedure), failures=[("a", [], []), ("b", [], [])])
    sea = Topic.objects.get(name="Sea")
    response = runner.post(reverse("failures:failure_patterns", args=[sea.pk]), {"seed": "0"})
    assert response.status_code == 400
    assert "has 0 failures with a stored vector (of 2)" in response.content.decode()
    assert "manage.py embed --source judge_failures --source human_failures" in response.content.decode()
    assert not Job.objects.exists()


def test_k_above_the_failures_with_a_vector_is_refused_saying_the_largest_that_works(
    world: dict[str, Any], runner: Client, boss: Client
) -> None:
    n = len(topic_rows(world["topic"]))
    url = reverse("failures:failure_patterns", args=[world["topic"].pk])
    response = runner.post(url, {"k": str(n + 1), "seed": "0"})
    assert response.status_code == 400
    assert f"k: {n + 1} is not at most {n}: topic &#x27;Health&#x27; has {n} failures" in (
        response.content.decode()
    )
    api = boss.post(
        "/api/jobs/",
        {"kind": "failure_patterns", "topic": "Health", "k": n + 1},
        content_type="application/json",
    )
    assert api.status_code == 400 and f"is not at most {n}" in api.json()["detail"]
    assert not Job.objects.exists()
    assert runner.post(url, {"k": str(n), "seed": "0"}).status_code == 302


def test_a_job_whose_vectors_went_away_before_it_ran_fails_naming_k(world: dict[str, Any]) -> None:
    job = failure_patterns_job_create(topic=world["topic"], k=3, seed=0, enqueue=False)
    TextVector.objects.all().delete()
    finished = failure_patterns_job_run(job_id=job.pk)
    assert finished is not None and finished.status == JobStatus.FAILED
    assert (
        finished.error.startswith("k: 3 clusters need at least 3 failures")
        and not FailurePattern.objects.exists()
    )


def test_failures_without_a_vector_are_counted_and_left_out(world: dict[str, Any]) -> None:
    make_judgment(
        generation=make_generation(procedure=make_procedure(goal="More", topic="Health")),
        failures=[("not embedded", [], [])],
    )
    run = run_patterns(world["topic"])
    assert run.n_without_vector == 1 and run.n_failures == len(topic_rows(world["topic"])) - 1


def test_the_patterns_page_escapes_failure_text(world: dict[str, Any], staff: Client) -> None:
    make_judgment(
        generation=make_generation(procedure=make_procedure(goal="Escape", topic="Health")),
        failures=[(XSS, [], [])],
    )
    store_vectors([XSS], noise=0.0)
    run = run_patterns(world["topic"], k=3)
    FailurePattern.objects.filter(run=run, rank=1).update(representative_text=XSS)
    html = staff.get(reverse("failures:failure_patterns", args=[world["topic"].pk])).content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html


def test_the_topics_page_lists_topics_with_their_latest_patterns(
    world: dict[str, Any], staff: Client
) -> None:
    run = run_patterns(world["topic"])
    html = staff.get(reverse("failures:pattern_topics")).content.decode()
    assert "Health" in html and "Religion" in html and f"?run={run.pk}" in html and "not computed yet" in html


# --- a failure stored is embedded (#31 item 5) -------------------------------------------------------------


def test_a_failure_annotated_a_moment_ago_is_embedded_by_the_job_its_answer_queued(
    client: Client, staff: Client, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from tests.annotation.conftest import make_study as make_annotation_study
    from tests.annotation.test_hardening import failure_post, ready_item
    from tests.annotation.test_views import url

    settings.EMBED_AFTER_IMPORTS = True
    study = make_annotation_study(n_items=2)
    assignment = ready_item(client, study)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(url("submit", study, assignment), failure_post()).status_code == 302
    job = Job.objects.get(kind=EMBED)
    assert job.parameters["sources"] == [HUMAN_FAILURES] and job.status == JobStatus.QUEUED
    failure = AnnotatedFailure.objects.get()
    similar = reverse("failures:similar_failures", args=[f"human-{failure.pk}"])
    assert "Not embedded yet" in staff.get(similar).content.decode()
    assert embed_job_run(job_id=job.pk).status == JobStatus.SUCCEEDED  # type: ignore[union-attr]
    assert "Not embedded yet" not in staff.get(similar).content.decode()


def test_a_judge_job_storing_failures_queues_their_embed_job(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.EMBED_AFTER_IMPORTS = True
    generation, judge = make_generation(), make_judge()
    answer = judge_json([failure("Skips preheating.", l1=[1], l2=[1])], reasoning="Because.")
    with django_capture_on_commit_callbacks(execute=True):
        judgments_store(judge=judge, results=[(generation, LLMResult(key="k", text=answer))])
    assert CriticalFailure.objects.get().description == "Skips preheating."
    job = Job.objects.get(kind=EMBED)
    assert job.parameters["sources"] == [JUDGE_FAILURES]
    with django_capture_on_commit_callbacks(execute=True):
        judgments_store(judge=judge, results=[(generation, LLMResult(key="k", text=judge_json([])))])
    assert Job.objects.filter(kind=EMBED).count() == 1  # no failure stored: nothing more to embed
