"""make_split: a topic-balanced bench drawn with the seed, the rest train, bench near-duplicates kept out."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from h2e_site.embeddings.specs import EmbeddingSpec
from h2e_site.embeddings.store import StoredEmbed
from mining.models import Procedure, Split
from mining.splits import max_cosine, split_make
from tests.factories import make_procedure
from tests.mining.test_embedding import needs_model

pytestmark = pytest.mark.django_db


class HashEmbedder:
    """Unit vectors from a text's hash: equal texts give cosine 1, different ones about 0."""

    spec = EmbeddingSpec("hash", "tests/hash", "1", 64)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            row = np.random.default_rng(seed).normal(size=64)
            rows.append(row / np.linalg.norm(row))
        return np.array(rows, dtype=np.float32)


def pool(topics: dict[str, int]) -> None:
    for topic, n in topics.items():
        for i in range(n):
            make_procedure(
                goal=f"{topic} goal {i}", steps=[f"{topic} step {i}"], topic=topic, split=Split.POOL
            )


def test_it_draws_per_topic_with_the_seed_and_leaves_the_rest_as_train() -> None:
    pool({"Health": 5, "Travel & Tourism": 4})
    report = split_make(per_topic=3, seed=1, embed=StoredEmbed(encoder=HashEmbedder()))
    bench = Counter(Procedure.objects.filter(split=Split.BENCH).values_list("topic__name", flat=True))
    assert bench == {"Health": 3, "Travel & Tourism": 3}
    assert Procedure.objects.filter(split=Split.TRAIN).count() == 3 == report.train
    assert not Procedure.objects.filter(split=Split.POOL).exists()
    first = set(Procedure.objects.filter(split=Split.BENCH).values_list("source_example_id", flat=True))
    Procedure.objects.update(split=Split.POOL)
    split_make(per_topic=3, seed=1, embed=StoredEmbed(encoder=HashEmbedder()))
    assert (
        set(Procedure.objects.filter(split=Split.BENCH).values_list("source_example_id", flat=True)) == first
    )


def test_it_keeps_near_duplicates_of_bench_out_of_train() -> None:
    pool({"Health": 1})
    make_procedure(goal="Health goal 0", steps=["Health step 0"], topic="Health", split=Split.POOL)  # a twin
    report = split_make(per_topic=1, seed=0, embed=StoredEmbed(encoder=HashEmbedder()))
    assert report.near_duplicates == 1 and report.train == 0
    assert Procedure.objects.filter(split=Split.POOL).count() == 1
    assert "left in the pool as near-duplicates of bench: 1" in report.lines()


def test_it_reports_topics_short_of_procedures() -> None:
    pool({"Religion": 2})
    report = split_make(per_topic=5, seed=0, dedup=False)
    assert report.short_topics == {"Religion": 2}
    assert report.bench == 2


def test_it_computes_the_max_cosine_per_query() -> None:
    queries = np.array([[1.0, 0.0], [0.0, 1.0]])
    references = np.array([[0.6, 0.8], [1.0, 0.0]])
    assert max_cosine(queries, references).tolist() == pytest.approx([1.0, 0.8])
    assert max_cosine(queries, np.zeros((0, 2))).tolist() == [-1.0, -1.0]


@needs_model
def test_it_keeps_a_paraphrase_of_bench_out_of_train_with_the_packaged_model() -> None:
    steps = ["Boil water in a kettle.", "Put a tea bag in a mug.", "Pour the water.", "Wait three minutes."]
    make_procedure(goal="Make a cup of tea", steps=steps, topic="Food & Dining", split=Split.BENCH)
    # without a topic they are never drawn for bench: both are train candidates
    twin = make_procedure(goal="Brew a mug of tea", steps=steps, topic=None, split=Split.POOL)
    tire = ["Remove the wheel.", "Lever off the tire.", "Fit the new tube.", "Inflate it."]
    other = make_procedure(goal="Change a bicycle tire", steps=tire, topic=None, split=Split.POOL)
    out = StringIO()
    call_command("make_split", "--per-topic", "1", "--seed", "0", stdout=out)
    assert "left in the pool as near-duplicates of bench: 1" in out.getvalue()
    twin.refresh_from_db()
    other.refresh_from_db()
    assert (twin.split, other.split) == (Split.POOL, Split.TRAIN)


def test_it_names_what_another_embedding_model_needs() -> None:
    pool({"Health": 2})
    with pytest.raises(CommandError, match="needs sentence-transformers"):
        call_command(
            "make_split", "--seed", "0", "--embedding-model", "Qwen/Qwen3-Embedding-0.6B", stdout=StringIO()
        )
    assert Procedure.objects.filter(split=Split.POOL).count() == 2
