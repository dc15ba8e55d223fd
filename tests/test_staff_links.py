"""Acceptance (issue #19): a staff user signed in on the demo's data follows every link of the navigation and
of the admin index (every change list and every add page), every study, task-set and judge page, and every
link found on those pages one level deeper: none answers a server error.

The data is what `manage.py demo_setup` loads (run here into the test database), plus a small goal-step task
set and a multiple-choice study over it (the demo has none), so that every kind of study page is reached. One
level deeper, links are followed once per shape (the path with its numbers and the names of its query
parameters), which visits every kind of page without walking each admin row and filter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.base.models import Study
from annotation.base.registry import StudyKind
from annotation.flow.services import Selection, participant_preview_start, study_create
from goal_step.answer import answer_job_create, task_model_for_config
from goal_step.models import TaskSet
from judging.admin import generate as generate_page
from judging.generate_jobs import generate_job_create
from judging.models import Judge
from tests.annotation.goal_step.conftest import make_task_set
from tests.factories import make_user

# Links a crawler must not follow: signing out ends the session the rest of the crawl needs.
NOT_FOLLOWED = re.compile(r"^/(admin/logout|accounts/logout)/")
STATIC = re.compile(r"^/(static|media)/")
SMOL = "configs/goal_step/smollm2-local.yaml"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


def links_of(page_url: str, html: str) -> list[str]:
    """The same-site links of a page, absolute paths with their query, in page order."""
    parser = _Links()
    parser.feed(html)
    found = []
    for href in parser.hrefs:
        url = urljoin(page_url, href.strip())
        parts = urlsplit(url)
        if parts.scheme not in {"", "http"} or parts.netloc not in {"", "testserver"}:
            continue
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        if path and not STATIC.match(path) and not NOT_FOLLOWED.match(path):
            found.append(path)
    return found


def shape(url: str) -> tuple[str, tuple[str, ...]]:
    """A page's kind: its path with numbers as N, and the names of its query parameters."""
    parts = urlsplit(url)
    return re.sub(r"\d+", "N", parts.path), tuple(sorted({key for key, _ in parse_qsl(parts.query)}))


class Crawl:
    """GETs as one signed-in client; remembers every URL fetched and every server error met."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: dict[str, int] = {}
        self.errors: list[str] = []

    def get(self, url: str) -> str:
        if url in self.seen:
            return ""
        try:
            response = self.client.get(url)
            body = (
                b"".join(response.streaming_content)  # type: ignore[attr-defined]
                if response.streaming
                else response.content
            )
        except Exception as exc:  # the test client re-raises a view's exception: a 500 in production
            self.seen[url] = 500
            self.errors.append(f"{url}: {type(exc).__name__}: {exc}")
            return ""
        self.seen[url] = response.status_code
        if response.status_code >= 500:
            self.errors.append(f"{url}: {response.status_code}")
        if response.status_code in {301, 302} and response.get("Location", "").startswith("/"):
            return self.get(response["Location"])
        content_type = response.get("Content-Type", "")
        return body.decode("utf-8", "replace") if content_type.startswith("text/html") else ""

    def follow(self, urls: Iterable[str]) -> dict[str, str]:
        return {url: self.get(url) for url in dict.fromkeys(urls) if url not in self.seen}


@pytest.fixture
def demo_data(tmp_path: Path, settings: Any) -> None:
    settings.VAR_DIR = tmp_path  # demo_setup writes the login and the entries there
    call_command("demo_setup", skip_migrate=True, no_summary=True, verbosity=0)
    task_set = make_task_set("demo-tasks")
    study = study_create(
        title="Goal-step validation",
        slug="demo-goal-step",
        kind=StudyKind.MULTIPLE_CHOICE,
        selection=Selection(task_set=task_set.name),
        attention_checks=1,
    )
    # a job of each kind the pages start (left queued), and a staff preview: their pages are crawled too
    generator = generate_page.generator_from_choice("file:smollm2-local.yaml")
    generate_job_create(generator=generator, limit=1, enqueue=False)
    answer_job_create(
        task_model=task_model_for_config(Path(settings.BASE_DIR) / SMOL), task_set=task_set, enqueue=False
    )
    participant_preview_start(study=study)


def demo_pages() -> list[str]:
    """Every study, task-set and judge page of the data."""
    pages = []
    for study in Study.objects.order_by("pk"):
        pages += [reverse("annotation:study_detail", args=[study.slug]), f"/agreement/{study.slug}/"]
    for task_set in TaskSet.objects.order_by("pk"):
        pages.append(reverse("goal_step:task_set", args=[task_set.name]))
    for judge in Judge.objects.order_by("pk"):
        pages.append(reverse("judges:report_card", args=[judge.judge_id]))
    return pages


@pytest.mark.django_db
def test_it_follows_every_staff_link_without_a_server_error(demo_data: None) -> None:
    client = Client()
    client.force_login(make_user(username="staff", is_staff=True))
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username="staff").update(is_superuser=True)
    crawl = Crawl(client)

    start = crawl.follow(["/", "/admin/"])
    nav = links_of("/", start["/"])
    admin_index = [url for url in links_of("/admin/", start["/admin/"]) if url.startswith("/admin/")]
    assert {"/studies/", "/tasks/", "/jobs/", "/mining/", "/admin/"} <= set(nav), nav
    assert any(url.endswith("/add/") for url in admin_index), admin_index
    first = crawl.follow([*nav, *admin_index, *demo_pages()])

    # One level deeper: every kind of page linked from those, once.
    shapes = {shape(url) for url in crawl.seen}
    deeper = []
    for url, html in first.items():
        for link in links_of(url, html):
            if shape(link) not in shapes:
                shapes.add(shape(link))
                deeper.append(link)
    crawl.follow(deeper)

    assert not crawl.errors, "\n".join(crawl.errors)
    # It did walk the site: the admin's change lists and add pages, the demo's pages and what they link to.
    assert len(crawl.seen) > 80, sorted(crawl.seen)
    assert "/admin/judging/generator/add/" not in admin_index  # no Add where rows come from configs
    visited = {shape(url) for url in crawl.seen}
    for page_kind in ("/jobs/N/", "/admin/jobs/job/N/change/", "/admin/annotation/participant/N/change/"):
        assert (page_kind, ()) in visited, page_kind
    for page in demo_pages():
        assert crawl.seen[page] == 200, page
