"""24 participants at once, over real HTTP against gunicorn with 4 workers on PostgreSQL, race for the last
pair of a pairwise study: exactly k of them get it and annotate it, the others are told that no item is
available (409, "return the study": nothing held against them), and nobody is given the pair twice."""

from __future__ import annotations

import threading

import pytest

from annotation.base.models import Annotation, StudyItem
from tests.annotation.conftest import pid
from tests.annotation.gunicorn_server import Gunicorn
from tests.annotation.http_annotator import HttpAnnotator

from .helpers import make_generators, make_pairwise_study

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CLIENTS, K = 24, 3


def test_24_clients_racing_for_the_last_pair_give_it_exactly_k_annotations(gunicorn_server: Gunicorn) -> None:
    study = make_pairwise_study(n_goals=1, k=K, generators=make_generators(("gen-a", "gen-b")))
    [item] = StudyItem.objects.filter(study=study)
    answers = {f"q{i}": str(q["answer"]) for i, q in enumerate(study.comprehension_questions)}
    annotators = [HttpAnnotator(gunicorn_server.url, study.slug, pid(2000 + n)) for n in range(CLIENTS)]
    start = threading.Barrier(CLIENTS)
    errors: list[str] = []
    turned_away: list[str] = []

    def race(annotator: HttpAnnotator) -> None:
        try:
            annotator.qualify(answers)
            start.wait(timeout=60)  # everyone qualified: now the race for the pair
            while annotator.annotate_next(answer={"verdict": "both_none"}):
                pass
        except RuntimeError as refused:
            if "-> 409" in str(refused) and annotator.items == []:
                turned_away.append(annotator.pid)  # "No items are available"
            else:
                errors.append(f"{annotator.pid}: {refused!r}")
        except Exception as exc:  # collected and reported below with the server log
            errors.append(f"{annotator.pid}: {exc!r}")
        finally:
            annotator.close()

    threads = [threading.Thread(target=race, args=(a,)) for a in annotators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    assert not errors, "\n".join(errors) + "\n" + gunicorn_server.log[-3000:]
    assert len(turned_away) == CLIENTS - K
    item.refresh_from_db()
    assert (item.assigned_count, item.completed_count) == (K, K)
    annotations = Annotation.objects.filter(item=item)
    assert annotations.count() == K
    assert len({a.participant_id for a in annotations}) == K
    assert sorted(len(a.items) for a in annotators) == [0] * (CLIENTS - K) + [1] * K
    assert sorted(a.answer["left"] for a in annotations) in (["a", "a", "b"], ["a", "b", "b"])
