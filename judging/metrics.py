"""Per-generation metrics reported beside How2Score: token counts (paper D.5) and format proxies (paper D.3).

Tokens: tiktoken `o200k_base`, each step string tokenized on its own (`encode_ordinary`, so text that looks
like a special token is counted as text) and the counts summed. The gen/ref ratio is
rho = 100 * |gen| / |ref| per example, |ref| being the same count over the L1 steps (Procedure.n_tokens).

Format proxies, per example (the leaderboard averages them over a generator's generations):
- step_count_mismatch: len(predicted_steps) != len(reference_steps).
- duplicate_step_rate: share of the predicted steps that repeat an earlier step verbatim,
  (len(steps) - len(set(steps))) / len(steps), 0.0 for no steps. The paper's "duplicate steps" figure is
  the share of examples with any verbatim repeat, i.e. of examples whose duplicate_step_rate > 0: the
  leaderboard reports that share (selectors.generator_metrics); the per-example rate keeps the detail.
- duplicate_ngram_rate: the steps joined with spaces, split on whitespace (no lowercasing or punctuation
  stripping: D.3, unlike the mining filter of B.3, does not normalise), and for n = 1..4
  sum_g max(0, c_g - 1) / total n-grams, where c_g counts n-gram g; the mean of the four values. An n with
  no n-grams (fewer than n words) counts 0.0, so every example has a value for every n and the mean over
  examples of the per-example means equals the paper's mean over n of the per-n means over examples.

Offline tokenizer: tiktoken downloads `o200k_base.tiktoken` on first use and caches it in
$TIKTOKEN_CACHE_DIR (else $DATA_GYM_CACHE_DIR, else <tmp>/data-gym-cache) under sha1(url). The app ships
the file (xz-compressed, judging/data/) and writes it into that cache before asking tiktoken for the
encoding, so no network is needed; tiktoken itself checks the file against its pinned sha256.
"""

from __future__ import annotations

import functools
import hashlib
import lzma
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db.models import Q

from mining.models import Procedure

from .models import Generation

if TYPE_CHECKING:
    import tiktoken

ENCODING_NAME = "o200k_base"
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
# The hash tiktoken pins for this file (tiktoken_ext/openai_public.py); the bundled copy reproduces it.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
BUNDLED_O200K = Path(__file__).resolve().parent / "data" / "o200k_base.tiktoken.xz"
NGRAM_ORDERS: tuple[int, ...] = (1, 2, 3, 4)
METRIC_FIELDS: tuple[str, ...] = (
    "n_tokens",
    "step_count_mismatch",
    "duplicate_step_rate",
    "duplicate_ngram_rate",
)
BATCH_SIZE = 500


@dataclass(frozen=True)
class GenerationMetrics:
    """The metric columns of one Generation row."""

    n_tokens: int
    step_count_mismatch: bool
    duplicate_step_rate: float
    duplicate_ngram_rate: float

    def as_fields(self) -> dict[str, Any]:
        """Field name -> value, ready for `Generation(**...)` or `.update(**...)`."""
        return asdict(self)


# --- tokens -------------------------------------------------------------------------------------


def tiktoken_cache_dir() -> str:
    """The directory tiktoken reads its encoding files from ("" means caching is off)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def install_bundled_o200k() -> Path:
    """Write the bundled o200k_base file where tiktoken looks for its cached copy; return that path."""
    cache_dir = tiktoken_cache_dir()
    if not cache_dir:
        raise RuntimeError(
            "TIKTOKEN_CACHE_DIR is set to an empty string, which makes tiktoken download o200k_base; "
            "unset it or point it at a writable directory so the bundled copy can be used offline"
        )
    target = Path(cache_dir) / hashlib.sha1(O200K_URL.encode()).hexdigest()
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == O200K_SHA256:
        return target
    data = lzma.decompress(BUNDLED_O200K.read_bytes())
    if hashlib.sha256(data).hexdigest() != O200K_SHA256:
        raise RuntimeError(f"{BUNDLED_O200K}: content does not match tiktoken's o200k_base sha256")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    partial.write_bytes(data)
    os.replace(partial, target)
    return target


@functools.cache
def o200k_base() -> tiktoken.Encoding:
    """The o200k_base encoding, loaded once per process, without network."""
    import tiktoken

    install_bundled_o200k()
    return tiktoken.get_encoding(ENCODING_NAME)


def count_tokens(steps: Iterable[str]) -> int:
    """Tokens of a list of steps: each step tokenized on its own with o200k_base, counts summed."""
    encoding = o200k_base()
    return sum(len(encoding.encode_ordinary(step)) for step in steps)


def gen_ref_ratio(gen_tokens: int | None, ref_tokens: int | None) -> float | None:
    """rho = 100 * |gen| / |ref| (paper D.5); None where undefined (no reference tokens)."""
    if gen_tokens is None or not ref_tokens:
        return None
    return 100.0 * gen_tokens / ref_tokens


# --- format proxies -----------------------------------------------------------------------------


def duplicate_step_rate(steps: Sequence[str]) -> float:
    """Share of steps that repeat an earlier step verbatim."""
    if not steps:
        return 0.0
    return (len(steps) - len(set(steps))) / len(steps)


def duplicate_ngram_rate_for(words: Sequence[str], n: int) -> float:
    """sum_g max(0, c_g - 1) / total n-grams; 0.0 when there are fewer than n words."""
    total = len(words) - n + 1
    if total <= 0:
        return 0.0
    counts = Counter(tuple(words[i : i + n]) for i in range(total))
    return sum(c - 1 for c in counts.values()) / total


def duplicate_ngram_rate(steps: Sequence[str]) -> float:
    """Duplicate n-gram rate of the joined, whitespace-split steps, averaged over n = 1..4."""
    words = " ".join(steps).split()
    return sum(duplicate_ngram_rate_for(words, n) for n in NGRAM_ORDERS) / len(NGRAM_ORDERS)


def compute_generation_metrics(
    predicted_steps: Sequence[str], reference_steps: Sequence[str]
) -> GenerationMetrics:
    """All metric columns of one generation (L2 = predicted_steps, L1 = reference_steps)."""
    return GenerationMetrics(
        n_tokens=count_tokens(predicted_steps),
        step_count_mismatch=len(predicted_steps) != len(reference_steps),
        duplicate_step_rate=duplicate_step_rate(predicted_steps),
        duplicate_ngram_rate=duplicate_ngram_rate(predicted_steps),
    )


# --- backfill -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BackfillReport:
    n_procedures: int
    n_generations: int


def _generations_missing(generator_ids: Iterable[int] | None) -> Any:
    qs = Generation.objects.filter(
        Q(n_tokens__isnull=True)
        | Q(step_count_mismatch__isnull=True)
        | Q(duplicate_step_rate__isnull=True)
        | Q(duplicate_ngram_rate__isnull=True)
    )
    if generator_ids is not None:
        qs = qs.filter(generator_id__in=list(generator_ids))
    return qs.order_by("pk")


def _procedures_missing(generator_ids: Iterable[int] | None) -> Any:
    qs = Procedure.objects.filter(n_tokens__isnull=True)
    if generator_ids is not None:
        qs = qs.filter(generations__generator_id__in=list(generator_ids)).distinct()
    return qs.order_by("pk")


def metrics_backfill_counts(*, generator_ids: Iterable[int] | None = None) -> BackfillReport:
    """How many procedures and generations a backfill would fill (for a progress bar's total)."""
    ids = None if generator_ids is None else list(generator_ids)
    return BackfillReport(
        n_procedures=_procedures_missing(ids).count(), n_generations=_generations_missing(ids).count()
    )


def metrics_backfill(
    *,
    generator_ids: Iterable[int] | None = None,
    batch_size: int = BATCH_SIZE,
    on_progress: Callable[[int], None] | None = None,
) -> BackfillReport:
    """Fill NULL Procedure.n_tokens and NULL generation metrics, in batches (keyset by pk, bulk_update).

    generator_ids are Generator primary keys (None: every generator). Each batch commits on its own, so
    an interrupted backfill keeps what it did and a second run only does the rest. on_progress(n) is
    called after each batch with the number of rows (procedures, then generations) just filled.
    """

    ids = None if generator_ids is None else list(generator_ids)
    report_procedures = 0
    for batch in _batches(_procedures_missing(ids).only("pk", "steps"), batch_size):
        for procedure in batch:
            procedure.n_tokens = count_tokens(procedure.steps)
        Procedure.objects.bulk_update(batch, ["n_tokens"])
        report_procedures += len(batch)
        if on_progress:
            on_progress(len(batch))
    report_generations = 0
    generations = _generations_missing(ids).only("pk", "predicted_steps", "procedure__steps")
    for batch in _batches(generations.select_related("procedure"), batch_size):
        for generation in batch:
            metrics = compute_generation_metrics(generation.predicted_steps, generation.procedure.steps)
            for name, value in metrics.as_fields().items():
                setattr(generation, name, value)
        Generation.objects.bulk_update(batch, list(METRIC_FIELDS))
        report_generations += len(batch)
        if on_progress:
            on_progress(len(batch))
    return BackfillReport(n_procedures=report_procedures, n_generations=report_generations)


def _batches(qs: Any, size: int) -> Iterable[list[Any]]:
    """Rows of a pk-ordered queryset in batches, by keyset (pk > last): safe while rows are updated."""
    last_pk = 0
    while True:
        batch = list(qs.filter(pk__gt=last_pk)[:size])
        if not batch:
            return
        yield batch
        last_pk = batch[-1].pk
