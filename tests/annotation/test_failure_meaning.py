"""Failures by meaning (#22 item 4): similar failures (nearest by the stored vectors, distance = 1 - cosine)
and a topic's failure patterns (faiss k-means with a seed, representatives, shares, the job and its form).

The store is filled here: each failure text gets a vector under the default model's identity, near one of
three directions (a refusal, missing detail, a skipped waiting period) with a little noise of its own, so the
clusters are known; every expected figure is computed again by hand with numpy from the stored vectors."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from annotation.base.models import AnnotatedFailure
from annotation.failures.meaning.space import failure_seen, similar_failures
from h2e_site.embeddings.search import unit_rows
from h2e_site.embeddings.specs import minilm_spec
from h2e_site.embeddings.store import model_row, text_hash, vectors_read, vectors_save
from judging.models import CriticalFailure
from mining.models import Topic
from tests.factories import make_generation, make_generator, make_judge, make_judgment, make_procedure
from tests.judging.test_failures import make_annotation, make_study

pytestmark = pytest.mark.django_db

THEMES = ("refuses to answer", "misses the operational detail", "skips the legal waiting period")
XSS = "<script>alert('x')</script> skips the legal waiting period"


def _direction(name: str, dimension: int = 384) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    row = np.random.default_rng(seed).standard_normal(dimension)
    return row / np.linalg.norm(row)


def store_vectors(texts: list[str], *, noise: float = 0.35) -> None:
    """Each text's vector: its theme's direction plus noise of its own (a text without a theme: noise)."""
    rows = []
    for text in texts:
        theme = next((t for t in THEMES if t in text), None)
        base = _direction(theme) if theme else np.zeros(384)
        rows.append(base + noise * _direction(text))
    model = model_row(minilm_spec())
    vectors = np.array(rows, dtype=np.float32)
    vectors_save(
        model, [text_hash(t) for t in texts], vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    )


def stored_unit(texts: list[str]) -> np.ndarray:
    vectors, found = vectors_read(model_row(minilm_spec()), [text_hash(t) for t in texts])
    assert found.all()
    return unit_rows(vectors)


@pytest.fixture
def world() -> dict[str, Any]:
    return failure_world()


def failure_world() -> dict[str, Any]:
    """Topic Health: generators a, b, c x four procedures, judges x and y (y a demo model), each judgment
    with failures of the three themes; a study whose annotators add theirs; topic Religion: one failure."""
    procedures = [make_procedure(goal=f"Goal {i}", topic="Health") for i in range(4)]
    generators = [make_generator(model=f"model-{name}") for name in "abc"]
    judges = [make_judge(model="judge-x"), make_judge(model="judge-y", is_demo=True)]
    study = make_study()
    n = 0
    for g, generator in enumerate(generators):
        for p, procedure in enumerate(procedures):
            generation = make_generation(generator=generator, procedure=procedure)
            for j, judge in enumerate(judges):
                themes = [THEMES[(g + p + j) % 3], THEMES[(g * p + j) % 3]][: 1 + (g + p) % 2]
                failures = []
                for theme in themes:
                    n += 1
                    failures.append((f"{generator.model} {theme} ({n})", [1], [1]))
                make_judgment(generation=generation, judge=judge, failures=failures)
            if p == 0:
                n += 1
                make_annotation(generation, study=study, failures=[(f"human: {THEMES[g]} ({n})", [2], [2])])
    religion = make_generation(
        generator=generators[0], procedure=make_procedure(goal="Pray", topic="Religion")
    )
    make_judgment(generation=religion, judge=judges[0], failures=[(f"prayer {THEMES[0]}", [], [])])
    store_vectors(all_texts())
    return {"topic": Topic.objects.get(name="Health"), "generators": generators, "judges": judges}


def all_texts() -> list[str]:
    judge = list(CriticalFailure.objects.values_list("description", flat=True))
    return judge + list(AnnotatedFailure.objects.values_list("description", flat=True))


def every_failure() -> list[tuple[str, int, int, str]]:
    """(source, id, parent, text) of every failure the browser lists, as the space orders them."""
    judge = [
        ("judge", pk, parent, text)
        for pk, parent, text in CriticalFailure.objects.order_by("pk").values_list(
            "pk", "judgment_id", "description"
        )
    ]
    human = AnnotatedFailure.objects.not_attention_checks().order_by("pk")
    return judge + [
        ("human", pk, parent, text)
        for pk, parent, text in human.values_list("pk", "annotation_id", "description")
    ]


# --- similar failures ------------------------------------------------------------------------------------


def test_it_lists_similar_failures_nearest_first_as_numpy_computes_them(world: dict[str, Any]) -> None:
    rows = every_failure()
    vectors = stored_unit([text for *_, text in rows])
    asked = 5
    source, pk, parent, text = rows[asked]
    distances = 1.0 - vectors @ vectors[asked]
    expected = sorted(
        (float(distances[i]), (0 if s == "judge" else 1), p)
        for i, (s, p, par, t) in enumerate(rows)
        if not (s == source and par == parent and (p == pk or t == text))
    )[:10]
    failure = failure_seen(source, pk)  # type: ignore[arg-type]
    assert failure is not None
    found = similar_failures(failure)
    assert not found.problem
    assert [(f.source, f.pk) for f in found.neighbours] == [
        (("judge", "human")[code], p) for _, code, p in expected
    ]
    assert [f.distance for f in found.neighbours] == pytest.approx([d for d, *_ in expected], abs=1e-3)
    assert [f.distance for f in found.neighbours] == sorted(f.distance for f in found.neighbours)  # type: ignore[type-var]


def test_it_leaves_out_itself_and_its_own_text_again_but_not_the_same_text_elsewhere(
    world: dict[str, Any],
) -> None:
    text = f"repeated {THEMES[1]}"
    twice = make_judgment(judge=world["judges"][0], failures=[(text, [1], []), (text, [2], [])])
    other = make_judgment(judge=world["judges"][1], failures=[(text, [1], [])])
    store_vectors([text])
    first, second = twice.failures.order_by("order")
    failure = failure_seen("judge", first.pk)
    assert failure is not None
    found = [(f.source, f.pk) for f in similar_failures(failure).neighbours]
    assert ("judge", first.pk) not in found and ("judge", second.pk) not in found
    nearest = similar_failures(failure).neighbours[0]
    assert (nearest.pk, nearest.distance) == (other.failures.get().pk, pytest.approx(0, abs=1e-3))


def test_it_finds_a_failure_added_after_the_space_was_built(world: dict[str, Any], staff: Client) -> None:
    pk = CriticalFailure.objects.order_by("pk").first().pk  # type: ignore[union-attr]
    url = reverse("failures:similar_failures", args=[f"judge-{pk}"])
    assert staff.get(url).status_code == 200  # the space is built and cached
    text = CriticalFailure.objects.get(pk=pk).description + " again"
    added = make_judgment(judge=world["judges"][0], failures=[(text, [], [])]).failures.get()
    response = staff.get(url)
    assert f"judge-{added.pk}" not in response.content.decode()  # no vector yet: not in the space
    store_vectors([text], noise=0.0)
    assert f"?failure=judge-{added.pk}" in staff.get(url).content.decode()


def test_it_leaves_out_a_failure_deleted_after_the_space_was_built(world: dict[str, Any]) -> None:
    rows = every_failure()
    failure = failure_seen("judge", rows[0][1])
    assert failure is not None
    nearest = next(f for f in similar_failures(failure).neighbours if f.source == "judge")
    CriticalFailure.objects.filter(pk=nearest.pk).delete()
    assert (nearest.source, nearest.pk) not in [
        (f.source, f.pk) for f in similar_failures(failure).neighbours
    ]


def test_it_says_a_failure_without_a_vector_is_not_embedded_yet(world: dict[str, Any], staff: Client) -> None:
    failure = make_judgment(failures=[("a text nobody embedded", [], [])]).failures.get()
    response = staff.get(
        reverse("failures:similar_failures", args=[f"judge-{failure.pk}"]), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert "Not embedded yet" in response.content.decode() and "manage.py embed" in response.content.decode()


def test_it_says_so_when_nothing_was_ever_embedded(staff: Client) -> None:
    failure = make_judgment(failures=[("lonely", [], [])]).failures.get()
    response = staff.get(reverse("failures:similar_failures", args=[f"judge-{failure.pk}"]))
    assert response.status_code == 200 and "Not embedded yet" in response.content.decode()


def test_the_similar_failures_endpoint_is_staff_only_and_get_only(
    world: dict[str, Any], staff: Client, user_client: Client, client: Client
) -> None:
    pk = CriticalFailure.objects.order_by("pk").first().pk  # type: ignore[union-attr]
    url = reverse("failures:similar_failures", args=[f"judge-{pk}"])
    assert user_client.get(url).status_code == 403
    assert client.get(url).status_code == 302
    assert staff.post(url).status_code == 405
    assert staff.get(reverse("failures:similar_failures", args=["judge-999999999"])).status_code == 404
    assert staff.get(reverse("failures:similar_failures", args=["robot-1"])).status_code == 404
    page, fragment = staff.get(url), staff.get(url, HTTP_HX_REQUEST="true")
    assert b"<html" in page.content and b"<html" not in fragment.content
    assert b"similar-list" in fragment.content


def test_an_attention_check_failure_has_no_similar_failures_page(
    world: dict[str, Any], staff: Client
) -> None:
    generation = CriticalFailure.objects.first().judgment.generation  # type: ignore[union-attr]
    make_annotation(generation, study=make_study("checks"), failures=[("instructed", [], [])], attention=True)
    pk = AnnotatedFailure.objects.get(description="instructed").pk
    assert staff.get(reverse("failures:similar_failures", args=[f"human-{pk}"])).status_code == 404


def test_the_failure_browser_and_the_generation_page_offer_similar_failures(
    world: dict[str, Any], staff: Client
) -> None:
    failure = CriticalFailure.objects.order_by("pk").first()
    assert failure is not None
    similar = reverse("failures:similar_failures", args=[f"judge-{failure.pk}"])
    browser = staff.get(reverse("failures:failure_list")).content.decode()
    generation = staff.get(reverse("failures:generation_detail", args=[failure.judgment.generation_id]))
    for html in (browser, generation.content.decode()):
        assert f'href="{similar}"' in html and f'hx-get="{similar}"' in html


def test_it_escapes_failure_text(world: dict[str, Any], staff: Client) -> None:
    failure = make_judgment(judge=world["judges"][0], failures=[(XSS, [], [])]).failures.get()
    store_vectors([XSS])
    near = CriticalFailure.objects.exclude(pk=failure.pk).filter(description__contains=THEMES[2]).first()
    for token in (f"judge-{failure.pk}", f"judge-{near.pk}"):  # type: ignore[union-attr]
        html = staff.get(reverse("failures:similar_failures", args=[token])).content.decode()
        assert "<script>alert" not in html and "&lt;script&gt;alert" in html


# --- failure patterns ------------------------------------------------------------------------------------
