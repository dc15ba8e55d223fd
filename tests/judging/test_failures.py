"""The failure browser: judges' and humans' critical failures, filters, stable keyset pages, counts, API."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.base.models import AnnotatedFailure, Annotation, Assignment, Participant, Study, StudyItem
from annotation.failures import reads as failures
from judging.models import Generation
from tests.factories import (
    Failure,
    make_generation,
    make_generator,
    make_judge,
    make_judgment,
    make_procedure,
    make_user,
)

pytestmark = pytest.mark.django_db

XSS = "<script>alert('x')</script>"
_seq = itertools.count(1)


def make_study(slug: str = "pilot") -> Study:
    return Study.objects.create(
        slug=slug, title=f"Study {slug}", completion_code="DONE", screenout_code="OUT"
    )


def make_annotation(
    generation: Generation, *, study: Study, failures: Sequence[Failure] = (), attention: bool = False
) -> Annotation:
    """A submitted human annotation of the generation (its study item made on first use)."""
    item = StudyItem.objects.filter(study=study, generation=generation, is_attention_check=attention).first()
    if item is None:
        item = StudyItem.objects.create(
            study=study,
            generation=generation,
            subject_key=f"generation:{generation.pk}",
            position=next(_seq),
            target_annotations=3,
            is_attention_check=attention,
        )
    participant = Participant.objects.create(study=study, prolific_pid=f"pid-{next(_seq)}")
    now = timezone.now()
    assignment = Assignment.objects.create(
        study=study, participant=participant, item=item, status="submitted", issued_at=now,
        lease_expires_at=now, n_reading_steps=len(generation.predicted_steps),
    )  # fmt: skip
    annotation = Annotation.objects.create(
        assignment=assignment, study=study, item=item, participant=participant, has_failure=bool(failures),
        n_failures=len(failures), issued_at=now, goal_acknowledged_at=now, submitted_at=now,
        elapsed_seconds=60,
    )  # fmt: skip
    AnnotatedFailure.objects.bulk_create(
        AnnotatedFailure(annotation=annotation, order=i, description=d, l1_steps=list(l1), l2_steps=list(l2))
        for i, (d, l1, l2) in enumerate(failures)
    )
    return annotation


@pytest.fixture
def world() -> dict[str, Any]:
    """Two generators x three procedures (Health, Health, Religion); judges x and y; a human study."""
    procedures = [
        make_procedure(goal=f"Goal {i}", topic=t) for i, t in enumerate(["Health", "Health", "Religion"])
    ]
    gen_a, gen_b = make_generator(model="model-a"), make_generator(model="model-b")
    judge_x, judge_y = make_judge(model="judge-x"), make_judge(model="judge-y")
    study = make_study()
    generations = {g: [make_generation(generator=g, procedure=p) for p in procedures] for g in (gen_a, gen_b)}
    for g in (gen_a, gen_b):
        for i, generation in enumerate(generations[g]):
            make_judgment(
                generation=generation,
                judge=judge_x,
                failures=[(f"x finds {g.model} misses step {i}", [1], [1]), (f"x second on {i}", [2], [])],
            )
            make_judgment(generation=generation, judge=judge_y, failures=[(f"y on {g.model} {i}", [], [2])])
            make_judgment(generation=generation, judge=make_judge(model="judge-z"))  # no failure
    human_on = generations[gen_a][0]
    make_annotation(human_on, study=study, failures=[("Human says add compost", [3], [3])])
    make_annotation(human_on, study=study, failures=[("Another human: wrong order", [1], [2])])
    make_annotation(human_on, study=study)  # no failure
    make_annotation(human_on, study=study, failures=[("Attention check failure", [], [])], attention=True)
    return {
        "generators": (gen_a, gen_b),
        "judges": (judge_x, judge_y),
        "study": study,
        "generations": generations,
        "human_on": human_on,
    }


def _filters(**params: str) -> failures.FailureFilters:
    query = failures.FailureQuery.from_params(params)
    return failures.failure_filters_resolve(query, failures.filter_choices_for(query))


def _all(filters: failures.FailureFilters, page_size: int = 1000) -> list[failures.FailureRow]:
    rows: list[failures.FailureRow] = []
    cursor = None
    while True:
        page = failures.failure_page(filters=filters, cursor=cursor, page_size=page_size)
        rows += page.rows
        if page.next_cursor is None:
            return rows
        cursor = failures.Cursor.decode(page.next_cursor)


def test_it_lists_judge_and_human_failures_in_a_stable_order(world: dict) -> None:
    rows = _all(_filters())
    assert len(rows) == 6 * 3 + 2  # 3 per judged generation, 2 human (attention check left out)
    keys = [r.cursor.sort_key() for r in rows]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert [r.generation_id for r in rows] == sorted((r.generation_id for r in rows), reverse=True)
    on_pair = [r for r in rows if r.generation_id == world["human_on"].pk]
    assert [r.source for r in on_pair] == ["judge", "judge", "judge", "human", "human"]
    assert [r.description for r in on_pair[3:]] == ["Human says add compost", "Another human: wrong order"]
    assert all(r.study_slug == "pilot" for r in on_pair[3:]) and on_pair[0].judge_id


@pytest.mark.parametrize("page_size", [1, 2, 3, 4, 7])
def test_it_pages_by_cursor_without_duplicates_or_gaps(world: dict, page_size: int) -> None:
    everything = _all(_filters())
    paged = _all(_filters(), page_size=page_size)
    assert [r.token for r in paged] == [r.token for r in everything]


def test_it_filters_by_topic_generator_judge_study_and_source(world: dict) -> None:
    gen_a = world["generators"][0]
    judge_x = world["judges"][0]

    def tokens(**params: str) -> set[str]:
        return {r.token for r in _all(_filters(**params))}

    everything = _all(_filters())
    assert tokens(topic="Religion") == {r.token for r in everything if r.topic == "Religion"}
    assert len(tokens(topic="Religion")) == 6
    assert tokens(generator=gen_a.generator_id) == {
        r.token for r in everything if r.generator_id == gen_a.generator_id
    }
    assert tokens(judge=judge_x.judge_id) == {r.token for r in everything if r.judge_id == judge_x.judge_id}
    assert tokens(study="pilot") == {r.token for r in everything if r.source == "human"}
    assert tokens(source="human") == tokens(study="pilot")
    assert tokens(source="judge") == {r.token for r in everything if r.source == "judge"}
    assert tokens(source="human", judge=judge_x.judge_id) == set()
    assert tokens(topic="No such topic") == set() and tokens(judge="nobody") == set()
    assert tokens(topic="Health", generator=gen_a.generator_id, source="human") == {
        r.token for r in everything if r.source == "human"
    }


def test_it_searches_failure_text(world: dict) -> None:
    found = _all(_filters(q="compost"))
    assert [r.description for r in found] == ["Human says add compost"]
    assert {r.description for r in _all(_filters(q="second", judge=world["judges"][0].judge_id))} == {
        f"x second on {i}" for i in range(3)
    }


def test_it_takes_odd_search_text_without_errors(admin_client: Client, world: dict) -> None:
    for q in ("'\"(&|!:*", "a" * 5000, "-", "compost -"):
        assert admin_client.get(reverse("failures:failure_list"), {"q": q}).status_code == 200, q
        # The API refuses a search longer than 200 characters, naming q (the page searches its first 200).
        expected = 400 if len(q) > 200 else 200
        assert admin_client.get(reverse("api:failures"), {"q": q}).status_code == expected, q
    # A NUL is refused, naming the parameter, on the page and in the API (h2e_site.middleware), never dropped.
    for url in (reverse("failures:failure_list"), reverse("api:failures")):
        refused = admin_client.get(url, {"q": "\x00compost"})
        assert refused.status_code == 400 and b"q: the query parameter contains a NUL" in refused.content


def test_it_counts_failures_per_topic_under_the_filters(world: dict) -> None:
    counts = {c.topic: (c.judge, c.human) for c in failures.failure_counts_by_topic(filters=_filters())}
    assert counts == {"Health": (12, 2), "Religion": (6, 0)}
    with_q = failures.failure_counts_by_topic(filters=_filters(q="second"))
    assert {c.topic: c.total for c in with_q} == {"Health": 4, "Religion": 2}
    judge_y = world["judges"][1]
    only_y = failures.failure_counts_by_topic(filters=_filters(judge=judge_y.judge_id, topic="Religion"))
    assert [(c.topic, c.judge, c.human) for c in only_y] == [("Religion", 2, 0)]


def test_it_shows_the_failure_browser(admin_client: Client, world: dict) -> None:
    html = admin_client.get(reverse("failures:failure_list")).content.decode()
    assert "<html" in html and 'id="failure-results"' in html and 'class="topic-bar"' in html
    assert "Human says add compost" in html and "study pilot" in html
    token = world["human_on"].judgments.filter(judge=world["judges"][0]).get().failures.first().pk
    href = reverse("failures:generation_detail", args=[world["human_on"].pk])
    assert f'{href}?failure=judge-{token}#failure-judge-{token}"' in html
    assert 'hx-get="/failures/"' in html and 'hx-push-url="true"' in html
    assert "Attention check failure" not in html


def test_it_links_next_pages_with_a_cursor(admin_client: Client, world: dict) -> None:
    # 50 a page: add enough failures for a second page.
    generator = world["generators"][1]
    for i in range(12):
        generation = make_generation(generator=generator, procedure=make_procedure(goal=f"More {i}"))
        make_judgment(
            generation=generation,
            judge=world["judges"][0],
            failures=[(f"more {i}.{k}", [1], [1]) for k in range(3)],
        )
    first = admin_client.get(reverse("failures:failure_list"), {"source": "judge"})
    page = first.context["page"]
    assert len(page.rows) == 50 and page.next_cursor
    html = first.content.decode()
    assert f"source=judge&amp;cursor={page.next_cursor}" in html and 'rel="next"' in html
    second = admin_client.get(
        reverse("failures:failure_list"), {"source": "judge", "cursor": page.next_cursor}
    )
    rows = second.context["page"].rows
    assert len(rows) == 18 + 36 - 50 and second.context["page"].next_cursor is None
    assert not {r.token for r in rows} & {r.token for r in page.rows}
    assert "End of the list." in second.content.decode()


def test_it_starts_again_for_a_mangled_cursor(admin_client: Client, world: dict) -> None:
    response = admin_client.get(reverse("failures:failure_list"), {"cursor": "'; DROP TABLE x"})
    assert response.status_code == 200 and len(response.context["page"].rows) == 20


def test_it_escapes_failure_text(admin_client: Client, world: dict) -> None:
    generation = world["generations"][world["generators"][1]][2]
    make_judgment(generation=generation, judge=make_judge(model="judge-xss"), failures=[(XSS, [1], [])])
    html = admin_client.get(reverse("failures:failure_list"), {"q": XSS}).content.decode()
    assert XSS not in html and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    api = admin_client.get(reverse("api:failures"), {"generator": world["generators"][1].generator_id})
    assert any(r["description"] == XSS for r in api.json()["results"])


def test_it_renders_only_the_results_fragment_for_htmx(admin_client: Client, world: dict) -> None:
    response = admin_client.get(reverse("failures:failure_list"), {"source": "human"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="failure-results">')
    assert "<html" not in html and "<select" not in html and "Human says add compost" in html
    assert "HX-Request" in response["Vary"]


def test_it_lists_a_page_in_a_fixed_number_of_queries(
    admin_client: Client, world: dict, django_assert_num_queries: Any
) -> None:
    # session, user; 4 filter lists; judge rows, their judges, human rows, the page's generations;
    # judge counts, human counts, topic names.
    with django_assert_num_queries(13):
        admin_client.get(reverse("failures:failure_list"))
    with django_assert_num_queries(13):
        admin_client.get(
            reverse("failures:failure_list"),
            {"topic": "Health", "generator": world["generators"][0].generator_id, "cursor": "999999.j.1.0"},
        )


def test_it_keeps_the_failure_browser_to_staff(client: Client, world: dict) -> None:
    response = client.get(reverse("failures:failure_list"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert client.get(reverse("api:failures")).status_code in {401, 403}
    client.force_login(make_user(is_staff=False))
    assert client.get(reverse("failures:failure_list")).status_code == 403
    assert client.get(reverse("api:failures")).status_code == 403


def test_it_refuses_posts_to_the_failure_browser(admin_client: Client) -> None:
    assert admin_client.post(reverse("failures:failure_list")).status_code == 405
    assert admin_client.post(reverse("api:failures")).status_code == 405


def test_it_serves_failures_through_the_api_with_a_cursor(admin_client: Client, world: dict) -> None:
    url = reverse("api:failures")
    data = admin_client.get(url, {"counts": "true"}).json()
    assert len(data["results"]) == 20 and data["next_cursor"] is None and data["next"] is None
    assert {c["topic"]: c["total"] for c in data["counts_by_topic"]} == {"Health": 14, "Religion": 6}
    human = [r for r in data["results"] if r["source"] == "human"]
    assert human[0]["study"] == "pilot" and human[0]["annotation"] and human[0]["judgment"] is None
    assert human[0]["L1_steps"] == [3] and human[0]["topic"] == "Health"
    judge_rows = admin_client.get(url, {"judge": world["judges"][1].judge_id}).json()["results"]
    assert {r["judge_id"] for r in judge_rows} == {world["judges"][1].judge_id} and len(judge_rows) == 6
    assert admin_client.get(url, {"cursor": "nonsense"}).status_code == 400


def test_it_documents_the_failure_api_in_the_schema(admin_client: Client) -> None:
    schema = admin_client.get(reverse("api-schema"), {"format": "json"}).json()
    operation = schema["paths"]["/api/failures/"]["get"]
    names = {p["name"] for p in operation["parameters"]}
    assert {"topic", "generator", "judge", "study", "source", "q", "cursor"} <= names
    assert "/api/judges/rank-correlation/" in schema["paths"]


def test_it_highlights_the_chosen_failure_on_the_generation_page(admin_client: Client, world: dict) -> None:
    generation = world["human_on"]
    failure = generation.judgments.get(judge=world["judges"][0]).failures.get(order=1)  # L1 2, no L2
    html = admin_client.get(
        reverse("failures:generation_detail", args=[generation.pk]), {"failure": f"judge-{failure.pk}"}
    ).content.decode()
    assert f'class="failure is-active is-selected" id="failure-judge-{failure.pk}"' in html
    assert 'id="l1-step-2" class="step is-linked"' in html
    assert 'id="l1-step-1" class="step"' in html and 'id="l2-step-1" class="step"' in html


def test_it_lists_human_failures_on_the_generation_page(admin_client: Client, world: dict) -> None:
    generation = world["human_on"]
    human = AnnotatedFailure.objects.get(description="Human says add compost")
    html = admin_client.get(
        reverse("failures:generation_detail", args=[generation.pk]), {"failure": f"human-{human.pk}"}
    ).content.decode()
    assert "Human annotations" in html and html.count('<span class="badge badge-human">Human</span>') == 3
    assert "Attention check failure" not in html
    assert f'class="failure is-active is-selected" id="failure-human-{human.pk}"' in html
    assert 'id="l1-step-3" class="step is-linked"' in html and 'id="l2-step-3" class="step is-linked"' in html


def test_it_ignores_an_unknown_failure_parameter(admin_client: Client, world: dict) -> None:
    generation = world["human_on"]
    for value in ("judge-999999", "nonsense", "human-", "<b>"):
        html = admin_client.get(
            reverse("failures:generation_detail", args=[generation.pk]), {"failure": value}
        ).content.decode()
        assert "is-selected" not in html and "is-linked" not in html


def _csv(response: Any) -> list[dict[str, str]]:
    import csv
    import io

    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_it_downloads_the_filtered_failure_list_as_csv(admin_client: Client, world: dict) -> None:
    judge_x = world["judges"][0]
    everything = admin_client.get(reverse("failures:failure_list_csv"))
    assert everything.status_code == 200 and everything["Content-Type"].startswith("text/csv")
    rows = _csv(everything)
    assert [r["id"] for r in rows] == [row.token for row in _all(_filters())]
    filtered = _csv(
        admin_client.get(reverse("failures:failure_list_csv"), {"judge": judge_x.judge_id, "topic": "Health"})
    )
    expected = _all(_filters(judge=judge_x.judge_id, topic="Health"))
    assert len(filtered) == len(expected) == 8  # 2 generators x 2 Health procedures x 2 failures
    assert {r["judge_id"] for r in filtered} == {judge_x.judge_id} and {r["topic"] for r in filtered} == {
        "Health"
    }
    assert filtered[0]["L1_steps"] in {"1", "2"}


def test_the_failure_csv_neutralises_formulas_and_names_a_bad_filter(
    admin_client: Client, world: dict
) -> None:
    make_judgment(
        generation=world["human_on"],
        judge=make_judge(model="judge-evil"),
        failures=[("=HYPERLINK(1)", [1], [1])],
    )
    rows = _csv(admin_client.get(reverse("failures:failure_list_csv"), {"q": "HYPERLINK"}))
    assert [r["description"] for r in rows] == ["'=HYPERLINK(1)"]
    refused = admin_client.get(reverse("failures:failure_list_csv"), {"judge": "nobody"})
    assert refused.status_code == 400 and b"nobody" in refused.content


def test_the_failure_csv_is_for_staff_only(client: Client, world: dict) -> None:
    assert client.get(reverse("failures:failure_list_csv")).status_code in (302, 403)
