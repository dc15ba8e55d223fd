"""The embedding store: each text embedded once per model, models never mixed, float16 close enough."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from h2e_site.embeddings.models import EmbeddingModel, TextVector
from h2e_site.embeddings.specs import EmbeddingSpec
from h2e_site.embeddings.store import StoredEmbed, model_row, text_hash, vectors_read, vectors_save
from mining.embedding import procedure_texts
from tests.embeddings.encoders import CountingHashEncoder
from tests.factories import make_procedure

pytestmark = pytest.mark.django_db


def test_it_knows_a_text_by_the_sha256_of_its_bytes() -> None:
    assert text_hash("Café") == hashlib.sha256("Café".encode()).hexdigest()
    assert text_hash("a") != text_hash("a ")


def test_it_embeds_each_text_once_and_reads_it_back() -> None:
    encoder = CountingHashEncoder()
    embed = StoredEmbed(encoder=encoder)
    first = embed(["Boil water", "Add salt", "Boil water"])
    assert encoder.encoded == ["Add salt", "Boil water"]  # distinct, shortest first
    again = StoredEmbed(encoder=encoder)(["Add salt", "Boil water"])
    assert encoder.encoded == ["Add salt", "Boil water"]  # nothing embedded the second time
    assert np.allclose(again, first[[1, 0]], atol=2e-3)
    assert TextVector.objects.count() == 2


def test_float16_moves_a_cosine_by_less_than_a_thousandth() -> None:
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((400, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    model = model_row(EmbeddingSpec("t", "tests/float16", "1", 384))
    hashes = [f"{i:064x}" for i in range(400)]
    vectors_save(model, hashes, rows)
    stored, found = vectors_read(model, hashes)
    assert found.all()
    back = stored.astype(np.float32)
    back /= np.linalg.norm(back, axis=1, keepdims=True)
    assert np.abs(back @ back.T - rows @ rows.T).max() < 1e-3


def test_it_never_mixes_two_models() -> None:
    one, two = CountingHashEncoder("tests/one"), CountingHashEncoder("tests/two")
    a = StoredEmbed("tests/one", encoder=one)(["Boil water"])
    b = StoredEmbed("tests/two", encoder=two)(["Boil water"])
    assert two.encoded == ["Boil water"]  # not read from the other model's row
    assert abs(float(a[0] @ b[0])) < 0.5
    assert EmbeddingModel.objects.count() == 2 and TextVector.objects.count() == 2
    with pytest.raises(ValueError, match="stored with 32 dimensions"):
        model_row(EmbeddingSpec("tests/one", "tests/one", "1", 64))


def test_a_new_revision_is_a_new_model() -> None:
    StoredEmbed(encoder=CountingHashEncoder())(["Boil water"])
    newer = CountingHashEncoder()
    newer.spec = EmbeddingSpec("tests/hash", "tests/hash", "2", 32)
    StoredEmbed(encoder=newer)(["Boil water"])
    assert newer.encoded == ["Boil water"]
    assert list(EmbeddingModel.objects.values_list("revision", flat=True)) == ["1", "2"]


def test_an_encoder_must_say_which_model_it_is() -> None:
    class Anonymous:
        def encode(self, texts: list[str]) -> np.ndarray:
            return np.zeros((len(texts), 4), dtype=np.float32)

    with pytest.raises(ValueError, match="must say which model it is"):
        StoredEmbed(encoder=Anonymous())(["Boil water"])


def test_adding_procedures_embeds_exactly_their_new_texts() -> None:
    for i in range(300):
        make_procedure(goal=f"Goal {i}", steps=[f"Step {i} a", f"Step {i} b", "Gather your materials"])
    encoder = CountingHashEncoder()
    embed = StoredEmbed(encoder=encoder)
    embed.fill(embed.missing(procedure_texts()))
    assert len(encoder.encoded) == 300 * 3 + 1  # goal, two own steps; one shared step
    for i in range(300, 330):
        make_procedure(goal=f"Goal {i}", steps=[f"Step {i} a", "Gather your materials"])
    encoder.encoded.clear()
    embed.fill(embed.missing(procedure_texts()))
    assert len(encoder.encoded) == 30 * 2  # goal, own step: nothing embedded before
    assert not set(encoder.encoded) & {"Gather your materials", "Goal 1"}
