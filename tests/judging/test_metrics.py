"""Generation metrics (paper D.3 format proxies, D.5 tokens): exact values, offline tokenizer, backfill,
the compute_metrics command and the per-generator SQL aggregates behind the leaderboard."""

from __future__ import annotations

import hashlib
import io
import socket
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from judging import metrics
from judging.metrics import (
    GenerationMetrics,
    compute_generation_metrics,
    count_tokens,
    duplicate_ngram_rate,
    duplicate_ngram_rate_for,
    gen_ref_ratio,
    metrics_backfill,
)
from judging.models import Generation
from judging.selectors import GeneratorMetrics, generator_metrics, how2score_leaderboard
from judging.selectors import leaderboard_metrics_json as rows_json
from mining.models import Procedure
from tests.factories import make_generation, make_generator, make_judgment, make_procedure

# Token ids of o200k_base (the same as tiktoken's published encoding).
HELLO_WORLD_IDS = [24912, 2375]


def test_it_counts_o200k_tokens_per_step_and_sums_them() -> None:
    encoding = metrics.o200k_base()
    assert encoding.name == "o200k_base"
    assert encoding.encode_ordinary("hello world") == HELLO_WORLD_IDS
    steps = ["hello world", "Preheat the oven to 180 °C.", "Whisk 2 eggs."]
    assert count_tokens(steps) == 2 + 10 + 6
    # Each step is tokenized on its own: joining them would merge tokens across the boundary.
    assert count_tokens(["hello", " world"]) == 2
    assert count_tokens([]) == 0


def test_it_counts_special_token_text_as_ordinary_text() -> None:
    assert count_tokens(["<|endoftext|>"]) == 7


def test_it_loads_the_encoding_without_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A fresh tiktoken cache and no network at all: the bundled copy is installed and tiktoken accepts it."""

    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise OSError("network is off in this test")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    import tiktoken.registry

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    metrics.o200k_base.cache_clear()
    try:
        assert metrics.o200k_base().encode_ordinary("hello world") == HELLO_WORLD_IDS
    finally:
        metrics.o200k_base.cache_clear()
    cached = tmp_path / "tiktoken" / hashlib.sha1(metrics.O200K_URL.encode()).hexdigest()
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == metrics.O200K_SHA256


def test_it_replaces_a_corrupt_cached_encoding_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    cached = tmp_path / hashlib.sha1(metrics.O200K_URL.encode()).hexdigest()
    cached.write_bytes(b"garbage")
    assert metrics.install_bundled_o200k() == cached
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == metrics.O200K_SHA256


def test_it_refuses_a_disabled_tiktoken_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    with pytest.raises(RuntimeError, match="TIKTOKEN_CACHE_DIR"):
        metrics.install_bundled_o200k()


def test_it_computes_the_format_proxies_exactly_on_crafted_steps() -> None:
    predicted = ["a b a b", "a b a b", "c"]
    result = compute_generation_metrics(predicted, ["x", "y"])
    # words: a b a b a b a b c (9). n=1: 6/9; n=2: ab x4, ba x3 -> 5/8; n=3: aba x3, bab x3 -> 4/7;
    # n=4: abab x3, baba x2 -> 3/6.
    expected_ngram = (6 / 9 + 5 / 8 + 4 / 7 + 3 / 6) / 4
    assert result == GenerationMetrics(
        n_tokens=count_tokens(predicted),
        step_count_mismatch=True,
        duplicate_step_rate=pytest.approx(1 / 3),  # type: ignore[arg-type]
        duplicate_ngram_rate=pytest.approx(expected_ngram),  # type: ignore[arg-type]
    )


def test_it_finds_no_repetition_in_distinct_steps_of_the_right_count() -> None:
    result = compute_generation_metrics(["Fill the kettle.", "Boil the water."], ["L1 one", "L1 two"])
    assert result.step_count_mismatch is False
    assert result.duplicate_step_rate == 0.0
    # "the" repeats once among 6 unigrams; no bigram or longer repeats.
    assert result.duplicate_ngram_rate == pytest.approx((1 / 6) / 4)


def test_it_counts_ngrams_across_step_boundaries_and_is_case_sensitive() -> None:
    # The steps are joined with spaces: "x y" and "x y" make the bigram (y, x) across the boundary.
    assert duplicate_ngram_rate_for(["x", "y", "x", "y"], 2) == pytest.approx(1 / 3)
    # unigrams 2/4, bigrams 1/3, trigrams (x y x), (y x y) 0/2, the 4-gram 0/1
    assert duplicate_ngram_rate(["x y", "x y"]) == pytest.approx((2 / 4 + 1 / 3) / 4)
    assert duplicate_ngram_rate(["Stir", "stir"]) == 0.0


def test_it_gives_zero_for_orders_longer_than_the_text() -> None:
    assert duplicate_ngram_rate_for(["one", "two"], 3) == 0.0
    assert duplicate_ngram_rate(["go go"]) == pytest.approx((1 / 2 + 0 + 0 + 0) / 4)
    empty = compute_generation_metrics([], ["a"])
    assert (empty.n_tokens, empty.step_count_mismatch, empty.duplicate_step_rate) == (0, True, 0.0)
    assert empty.duplicate_ngram_rate == 0.0


def test_it_computes_the_gen_ref_ratio_in_percent() -> None:
    assert gen_ref_ratio(30, 20) == 150.0
    assert gen_ref_ratio(30, 0) is None
    assert gen_ref_ratio(None, 20) is None


# --- backfill ---


def _unmeasured(generation: Generation) -> Generation:
    Generation.objects.filter(pk=generation.pk).update(n_tokens=None)
    return generation


@pytest.mark.django_db
def test_it_backfills_missing_metrics_in_batches() -> None:
    generator = make_generator()
    procedures = [make_procedure(steps=["hello world", "Whisk 2 eggs."]) for _ in range(5)]
    generations = [
        _unmeasured(make_generation(generator=generator, procedure=p, predicted_steps=["hello world"] * 2))
        for p in procedures
    ]
    progress: list[int] = []
    report = metrics_backfill(batch_size=2, on_progress=progress.append)
    assert (report.n_procedures, report.n_generations) == (5, 5)
    assert progress == [2, 2, 1, 2, 2, 1]
    assert set(Procedure.objects.values_list("n_tokens", flat=True)) == {8}
    for generation in generations:
        generation.refresh_from_db()
        assert generation.n_tokens == 4
        assert generation.step_count_mismatch is False
        assert generation.duplicate_step_rate == 0.5
        assert generation.duplicate_ngram_rate == pytest.approx((2 / 4 + 1 / 3 + 0 + 0) / 4)
    again = metrics_backfill()
    assert (again.n_procedures, again.n_generations) == (0, 0)


@pytest.mark.django_db
def test_it_backfills_only_the_given_generators_and_keeps_computed_values() -> None:
    chosen, other = make_generator(), make_generator()
    mine = _unmeasured(make_generation(generator=chosen))
    theirs = _unmeasured(make_generation(generator=other))
    done = make_generation(generator=chosen)
    Generation.objects.filter(pk=done.pk).update(
        step_count_mismatch=False, duplicate_step_rate=0.25, duplicate_ngram_rate=0.5
    )
    report = metrics_backfill(generator_ids=[chosen.pk])
    assert report.n_generations == 1
    assert Generation.objects.get(pk=mine.pk).n_tokens is not None
    assert Generation.objects.get(pk=theirs.pk).n_tokens is None
    assert Procedure.objects.get(pk=theirs.procedure_id).n_tokens is None
    kept = Generation.objects.get(pk=done.pk)
    assert (kept.n_tokens, kept.duplicate_step_rate) == (20, 0.25)


@pytest.mark.django_db
def test_it_backfills_from_the_command_by_generator_id() -> None:
    generator = make_generator(generator_id="abc123abc123")
    generation = _unmeasured(make_generation(generator=generator))
    out = io.StringIO()
    call_command("compute_metrics", "--generator", "abc123abc123", "--no-progress", stdout=out)
    assert "metrics of 1 generation(s)" in out.getvalue()
    assert Generation.objects.get(pk=generation.pk).n_tokens is not None


@pytest.mark.django_db
def test_it_names_an_unknown_generator_in_the_command() -> None:
    with pytest.raises(CommandError, match="--generator nope"):
        call_command("compute_metrics", "--generator", "nope", "--no-progress")


# --- per-generator aggregates ---


def _measured(generator: Any, predicted: list[str], reference: list[str], *, ref_tokens: int | None) -> Any:
    procedure = make_procedure(steps=reference)
    Procedure.objects.filter(pk=procedure.pk).update(n_tokens=ref_tokens)
    generation = make_generation(generator=generator, procedure=procedure, predicted_steps=predicted)
    fields = compute_generation_metrics(predicted, reference).as_fields()
    Generation.objects.filter(pk=generation.pk).update(**fields)
    return generation


@pytest.mark.django_db
def test_it_aggregates_metrics_per_generator_in_sql() -> None:
    generator = make_generator()
    # tokens: 4 (ref 2 -> rho 200), 2 (ref 4 -> rho 50), 2 (ref unknown -> no rho)
    _measured(generator, ["hello world", "hello world"], ["a", "b"], ref_tokens=2)
    _measured(generator, ["hello world"], ["a"], ref_tokens=4)
    _measured(generator, ["hello world"], ["a", "b"], ref_tokens=None)
    failed = make_generation(generator=generator, predicted_steps=[])
    Generation.objects.filter(pk=failed.pk).update(error="HTTP 500", n_tokens=0)
    unmeasured = _unmeasured(make_generation(generator=generator))

    result = generator_metrics(generator_ids=[generator.generator_id])[generator.generator_id]
    assert result.n_generations == 4  # the errored generation is left out
    assert result.n_with_metrics == 3
    assert not result.is_complete
    assert result.avg_tokens == pytest.approx((4 + 2 + 2) / 3)
    assert result.gen_ref_ratio_percent == pytest.approx((200 + 50) / 2)
    assert result.step_count_mismatch_percent == pytest.approx(100 / 3)
    assert result.duplicate_step_percent == pytest.approx(100 / 3)
    dup = (2 / 4 + 1 / 3) / 4
    assert result.duplicate_ngram_percent == pytest.approx(100 * dup / 3)
    assert unmeasured.pk  # counted in n_generations, not in the averages


@pytest.mark.django_db
def test_it_reports_no_metrics_for_a_generator_without_computed_values() -> None:
    generator = make_generator()
    _unmeasured(make_generation(generator=generator))
    result = generator_metrics()[generator.generator_id]
    assert (result.n_generations, result.n_with_metrics, result.avg_tokens) == (1, 0, None)
    assert result.duplicate_ngram_percent is None


@pytest.mark.django_db
def test_it_adds_metrics_to_leaderboard_rows_and_keeps_the_h2e_keys() -> None:
    generator = make_generator()
    generation = _measured(generator, ["hello world"], ["a"], ref_tokens=1)
    make_judgment(generation=generation)
    (row,) = rows_json(how2score_leaderboard())
    (plain,) = [r.as_json() for r in how2score_leaderboard()]
    assert {k: row[k] for k in plain} == plain
    assert row["avg_tokens"] == 2.0
    assert row["gen_ref_ratio_percent"] == 200.0
    assert row["n_with_metrics"] == 1
    assert set(row) - set(plain) == {"coverage_percent", *GeneratorMetrics().as_json()}
    assert row["coverage_percent"] == 100.0  # its one generation is judged
