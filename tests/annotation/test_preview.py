"""A staff member's "Preview as a participant" (issue #19 item 14): the whole flow as a participant sees it,
answers checked but never stored, no slot of an item taken, counted nowhere (agreement, exports, exactly-k,
the funnel)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.base import selectors
from annotation.base.models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    Participant,
    Stage,
    Study,
    StudyItem,
)
from annotation.flow import services
from annotation.kinds.critical_failures.agreement_data import study_agreement
from tests.annotation.conftest import make_study, no_failure, qualified, read_everything
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def counters(study: Study) -> list[tuple[int, int]]:
    return list(
        StudyItem.objects.filter(study=study).order_by("pk").values_list("assigned_count", "completed_count")
    )


def walk_preview(client: Client, study: Study) -> list[str]:
    """Preview the study through its pages: consent, training, the check, then every item read and answered
    "no failure" until the end; returns the pages' texts, in order."""
    slug = study.slug
    pages = []
    response = client.post(reverse("annotator:preview", args=[slug]), follow=True)
    pages.append(response.content.decode())
    client.post(reverse("annotator:consent", args=[slug]))
    client.post(reverse("annotator:training", args=[slug]))
    answers = {f"q{i}": q["answer"] for i, q in enumerate(study.comprehension_questions)}
    client.post(reverse("annotator:comprehension", args=[slug]), answers)
    for _ in range(10):
        response = client.get(reverse("annotator:item", args=[slug]), follow=True)
        page = response.content.decode()
        pages.append(page)
        if "End of the preview" in page:
            return pages
        pk = int(re.search(rf"/a/{slug}/item/(\d+)/submit/", page).group(1))  # type: ignore[union-attr]
        client.post(reverse("annotator:acknowledge_goal", args=[slug, pk]))
        assignment = Assignment.objects.get(pk=pk)
        for n in range(1, assignment.n_reading_steps + 1):
            client.post(reverse("annotator:reveal_step", args=[slug, pk, n]))
        answered = client.post(reverse("annotator:submit", args=[slug, pk]), {"has_failure": "no"})
        assert answered.status_code == 302, answered.content.decode()[:2000]
    raise AssertionError("the preview did not end")


def test_it_previews_every_item_without_storing_or_taking_a_slot(staff: Client) -> None:
    study = make_study(n_items=2, k=1, attention_checks=1, attention_check_every=1)
    holder = qualified(study, 1)  # a real participant holds the lease on one item: k = 1, so it is full
    held = services.assignment_next(participant=holder)
    assert held is not None
    before = counters(study)

    pages = walk_preview(staff, study)

    assert "Preview." in pages[0] and 'action="/a/' in pages[0]  # the consent page, with the banner
    items_seen = [page for page in pages if "/submit/" in page]
    assert len(items_seen) == 3  # both items (the full one too) and the attention check
    assert all("Preview." in page for page in pages)
    assert "Return to Prolific" not in pages[-1] and "C0MPLETE" in pages[-1]
    preview = Participant.objects.get(study=study, is_preview=True)
    assert preview.stage == Stage.DONE and preview.items_completed == 2
    # Nothing stored, no counter moved: the real participant's lease and the other item's slot are intact.
    assert Annotation.objects.filter(study=study).count() == 0
    assert counters(study) == before
    assert Assignment.objects.get(pk=held.pk).status == AssignmentStatus.ACTIVE
    other = qualified(study, 2)
    leased = services.assignment_next(participant=other)
    assert leased is not None and leased.item_id != held.item_id
    # Counted nowhere: the funnel, the study list, the participants table, the exports, agreement.
    progress = selectors.study_progress(study=study)
    assert (progress.participants, progress.done, progress.completed) == (2, 0, 0)
    assert selectors.studies_with_progress().get(pk=study.pk).n_participants == 2
    assert preview.pk not in {p.pk for p in selectors.study_participants_progress(study=study)}
    assert sum(row.n_active for row in selectors.study_items_progress(study=study)) == 2  # "leased now"
    export = staff.get(reverse("annotation:study_export_jsonl", args=[study.slug]))
    assert export.status_code == 200 and export.content.strip() == b""
    agreement = study_agreement(study=study)
    assert agreement.n_items == 0 and agreement.annotators == []


def test_it_gives_a_new_preview_each_time_and_previews_a_closed_study(staff: Client) -> None:
    study = make_study(n_items=1, k=1, is_open=False)
    first = staff.post(reverse("annotator:preview", args=[study.slug]))
    assert first.status_code == 302 and first["Location"] == reverse("annotator:consent", args=[study.slug])
    staff.post(reverse("annotator:consent", args=[study.slug]))
    again = staff.post(reverse("annotator:preview", args=[study.slug]), follow=True)
    assert again.status_code == 200 and "Preview." in again.content.decode()
    previews = Participant.objects.filter(study=study)
    assert [(p.is_preview, p.stage) for p in previews] == [(True, Stage.CONSENT)]  # the first one replaced


def test_it_keeps_previews_to_staff(staff: Client) -> None:
    study = make_study(n_items=1)
    url = reverse("annotator:preview", args=[study.slug])
    anonymous = Client().post(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    participant = Client()
    participant.force_login(make_user(username="outsider"))
    assert participant.post(url).status_code == 403
    assert not Participant.objects.filter(study=study).exists()
    page = staff.get(reverse("annotation:study_detail", args=[study.slug])).content.decode()
    assert f'action="{url}"' in page and "Preview as a participant" in page


def test_it_answers_the_preview_url_opened_directly_with_its_button(staff: Client) -> None:
    """#31 item 6: the URL opened directly (GET) answered a blank 405; it shows a page whose button POSTs,
    and starts nothing itself."""
    study = make_study(n_items=1)
    url = reverse("annotator:preview", args=[study.slug])
    page = staff.get(url)
    text = page.content.decode()
    assert page.status_code == 200 and "Start the preview" in text
    assert (
        re.search(rf'<form method="post" action="{re.escape(url)}"', text) and "csrfmiddlewaretoken" in text
    )
    assert not Participant.objects.filter(study=study).exists()
    assert staff.put(url).status_code == 405
    outsider = Client()
    outsider.force_login(make_user(username="outsider"))
    assert outsider.get(url).status_code == 403


def test_it_never_stores_an_annotation_for_a_preview_nor_gives_back_a_slot_it_did_not_take() -> None:
    study = make_study(n_items=1, k=1)
    preview = services.participant_preview_start(study=study)
    Participant.objects.filter(pk=preview.pk).update(stage=Stage.ITEMS)
    preview.refresh_from_db()
    assignment = read_everything(services.assignment_next(participant=preview))
    with pytest.raises(services.Refused, match="A preview stores no annotation"):
        services.annotation_submit(assignment=assignment, submission=no_failure())
    real = qualified(study, 3)
    real_assignment = read_everything(services.assignment_next(participant=real))
    with pytest.raises(services.Refused, match="Only a preview"):
        services.preview_submit(assignment=real_assignment, submission=no_failure())
    # The preview's lease runs out: reclaiming it leaves the real participant's slot taken.
    Assignment.objects.filter(pk=assignment.pk).update(lease_expires_at=timezone.now() - timedelta(hours=1))
    assert services.leases_reclaim(study=study) == 1
    assert counters(study) == [(1, 0)]
