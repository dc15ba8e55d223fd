"""30 participants at once over real HTTP against gunicorn with 4 workers on PostgreSQL: every item ends with
exactly k annotations, and no participant gets an item twice."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from annotation.base.models import Annotation, Assignment, AssignmentStatus, Participant, Stage, StudyItem
from tests.annotation.conftest import make_study, pid
from tests.annotation.gunicorn_server import Gunicorn
from tests.annotation.http_annotator import HttpAnnotator

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PARTICIPANTS = 30
ITEMS, K, PER_PARTICIPANT = 20, 3, 2  # 60 slots = 30 participants x 2 items


def test_it_gives_every_item_exactly_k_annotations_under_concurrency(gunicorn_server: Gunicorn) -> None:
    study = make_study(n_items=ITEMS, k=K, items_per_participant=PER_PARTICIPANT, lease_minutes=30)
    answers = {f"q{i}": str(q["answer"]) for i, q in enumerate(study.comprehension_questions)}
    start = threading.Barrier(PARTICIPANTS)
    errors: list[str] = []
    annotators = [HttpAnnotator(gunicorn_server.url, study.slug, pid(1000 + n)) for n in range(PARTICIPANTS)]

    def run(annotator: HttpAnnotator) -> None:
        try:
            start.wait(timeout=30)
            annotator.qualify(answers)
            while annotator.annotate_next():
                pass
        except Exception as exc:  # collected and reported below with the server log
            errors.append(f"{annotator.pid}: {exc!r}")
        finally:
            annotator.close()

    threads = [threading.Thread(target=run, args=(a,)) for a in annotators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    assert not errors, "\n".join(errors) + "\n" + gunicorn_server.log[-3000:]

    items = StudyItem.objects.filter(study=study, is_attention_check=False)
    assert sorted({i.completed_count for i in items}) == [K]
    assert sorted({i.assigned_count for i in items}) == [K]
    per_item = Counter(Annotation.objects.filter(study=study).values_list("item_id", flat=True))
    assert len(per_item) == ITEMS and set(per_item.values()) == {K}
    pairs = list(Annotation.objects.filter(study=study).values_list("participant_id", "item_id"))
    assert len(pairs) == len(set(pairs)) == ITEMS * K
    assert all(len(a.items) == len(set(a.items)) == PER_PARTICIPANT for a in annotators)
    assert not Assignment.objects.filter(study=study).exclude(status=AssignmentStatus.SUBMITTED).exists()
    assert Participant.objects.filter(study=study, stage=Stage.DONE).count() == PARTICIPANTS
