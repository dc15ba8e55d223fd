r"""The quality filters of the goal-step paper (appendix D), one small function each.

A filter takes a drafted example and the corpus and returns None to keep it, or a sentence saying why it is
removed (the funnel counts removals per filter, in the order given, and keeps a few of the sentences). A
filter judges each part of the example on its own (this text, this pair of texts), so an item that fails
alone fails every example it is in: build.py relies on it to leave such items out of the search.
What each one checks, and where it departs from the paper:

- length (App. D "Length filter"): the prompt and every candidate have at least MIN_WORDS words.
- lexical overlap (App. D "Lexical-Overlap filter"): the prompt shares no content word with any candidate
  (stopwords removed, words reduced by a crude suffix stemmer where the paper lemmatises with spaCy). We read
  "between the prompt and each candidate" as *any* candidate: removing only examples whose positive overlaps
  would leave overlap as a sign of the negatives, a new artifact.
- TF-IDF (App. D "TF-IDF filter"): every step in the example (the candidates in Step Inference, the prompt in
  Goal Inference) has a word with tf-idf >= MIN_TFIDF, where a procedure (goal and steps) is the document,
  tf is the word's count in it and idf = ln(procedures / procedures containing the word). With tf = 1 the
  default 3.0 asks for a word found in fewer than 1 in 20 procedures; "gather your materials" has none. The
  paper applies it to steps only; goals (titles) are not checked. Needs a corpus of a few dozen procedures
  at least: with N procedures no word scores above tf * ln(N).
- similarity (App. D "Similarity filter"): in Step Inference, no negative step is MAX_SIMILARITY-close
  (cosine) to any step of the prompt goal; in Goal Inference, the prompt step is not that close to any step
  of a negative goal. Both after label reassignment, on the roles as they end up.
- distinct (ours, Step Ordering only): the two steps are not the same text.
- markup (ours, every task, first): no text of the example carries markup the scrape left behind: JSON
  (an object or array, e.g. wikiHow's image records `{"smallUrl":"https:\/\/...`), HTML (a known tag or an
  entity) or a URL (http(s)://, www., or JSON's escaped slashes). Such a text is not a step anyone wrote;
  it fails alone, so it never enters the search either.

The paper gives no thresholds; MIN_WORDS, MIN_TFIDF and MAX_SIMILARITY are ours (functools.partial sets
others: partial(length_filter, min_words=3)). The paper's category filter (dropping obscure or expert
categories) is left to the caller, who can leave procedures of a topic out of the input.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache, partial

from .corpus import Corpus, Draft

MIN_WORDS = 2
MIN_TFIDF = 3.0
MAX_SIMILARITY = 0.85

Filter = Callable[[Draft, Corpus], "str | None"]

# A small English stopword list (function words, pronouns, auxiliaries and the pieces of contractions left
# after splitting on the apostrophe), close to the usual NLTK/spaCy ones; no dependency for it.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing don down during each either else ever every
    few for from further get gets got had has have having he her here hers herself him himself his how i
    if in into is it its itself just let ll may me might more most much must my myself neither no nor
    not now o of off on once one only or other ought our ours ourselves out over own re s same shall she
    should so some such t than that the their theirs them themselves then there these they this those
    through to too under until up upon us ve very was we were what when where whether which while who
    whom whose why will with within without would yet you your yours yourself yourselves d m isn aren
    wasn weren hasn haven hadn doesn didn won wouldn shan shouldn can cannot couldn mustn
    """.split()  # noqa: SIM905 (a list literal would take 180 lines)
)

_WORD = re.compile(r"[^\W_]+")
_MARKUP = (
    ("JSON", re.compile(r'[{\[]\s*"[^"\n]{0,200}"\s*[:,\]}]')),
    (
        "HTML",
        re.compile(
            r"</?(a|b|i|u|p|br|hr|div|span|img|strong|em|li|ul|ol|table|tr|td|th|h[1-6]|script|style|iframe|sup|"
            r"sub|small|font|code|pre|blockquote|input|button|form|noscript|link|meta|center|figure)\b[^<>]*>"
            r"|&(#\d+|#x[0-9a-fA-F]+|[a-zA-Z]{2,8});",
            re.IGNORECASE,
        ),
    ),
    ("a URL", re.compile(r"https?:(//|\\/\\/)|\bwww\.[a-z0-9-]+\.[a-z]{2,}|\\/", re.IGNORECASE)),
)


def words(text: str) -> list[str]:
    """The words of a text, case-folded: runs of letters and digits (an apostrophe splits a word)."""
    return _WORD.findall(text.casefold())


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """A crude stand-in for lemmatisation: plural and -ing/-ed endings and a final -e go, so 'bake', 'baked',
    'baking' and 'bakes' meet at 'bak'. Only ever compared with other stems."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix, keep in (("ing", 3), ("ed", 3), ("es", 3), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= keep and not word.endswith("ss"):
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def content_words(text: str) -> list[str]:
    """Stems of the words that are not stopwords."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


def informativeness(documents: Sequence[Sequence[Sequence[str]]]) -> list[list[float]]:
    """TF-IDF by hand. documents[d][i] is the list of content words of text i of document d (a procedure:
    its goal, then its steps). Returns, per document and text, the highest tf * idf of the text's words,
    tf counted over the whole document, idf = ln(documents / documents containing the word); 0.0 for a text
    without content words."""
    counts = [Counter(word for text in document for word in text) for document in documents]
    frequency: Counter[str] = Counter()
    for count in counts:
        frequency.update(count.keys())
    n = len(documents)
    idf = {word: math.log(n / df) for word, df in frequency.items()}
    return [
        [max((count[word] * idf[word] for word in text), default=0.0) for text in document]
        for document, count in zip(documents, counts, strict=True)
    ]


def _where(position: int) -> str:
    return "the prompt" if position < 0 else f"candidate {position}"


def _texts(draft: Draft) -> list[tuple[int, int]]:
    """(position, item) for the prompt (position -1) and each candidate."""
    return [(-1, draft.prompt), *enumerate(draft.candidates)]


def length_filter(draft: Draft, corpus: Corpus, *, min_words: int = MIN_WORDS) -> str | None:
    for position, item in _texts(draft):
        if corpus.word_counts[item] < min_words:
            return (
                f"{_where(position)} {corpus.texts[item]!r} has {corpus.word_counts[item]} word(s), "
                f"fewer than {min_words}"
            )
    return None


def lexical_overlap_filter(draft: Draft, corpus: Corpus) -> str | None:
    prompt = corpus.tokens(draft.prompt)
    for position, item in enumerate(draft.candidates):
        shared = prompt & corpus.tokens(item)
        if shared:
            return f"the prompt and candidate {position} share {', '.join(sorted(shared))}"
    return None


def tfidf_filter(draft: Draft, corpus: Corpus, *, min_tfidf: float = MIN_TFIDF) -> str | None:
    for position, item in _texts(draft):
        if corpus.is_step(item) and corpus.informativeness[item] < min_tfidf:
            return (
                f"{_where(position)} {corpus.texts[item]!r} has no word with tf-idf >= {min_tfidf:g} "
                f"(best {corpus.informativeness[item]:.2f})"
            )
    return None


def similarity_filter(draft: Draft, corpus: Corpus, *, max_similarity: float = MAX_SIMILARITY) -> str | None:
    negatives = [item for position, item in enumerate(draft.candidates) if position != draft.answer]
    if not negatives:
        return None
    if draft.task == "step_inference":
        steps = corpus.step_slice(int(corpus.owner[draft.prompt]))
        similarity = corpus.vectors_of(negatives) @ corpus.vectors_of(steps).T
        if similarity.size and similarity.max() >= max_similarity:
            row, column = divmod(int(similarity.argmax()), similarity.shape[1])
            return (
                f"negative {corpus.texts[negatives[row]]!r} is {similarity[row, column]:.2f} similar to the "
                f"prompt goal's step {corpus.texts[steps.start + column]!r} (max {max_similarity:g})"
            )
    elif draft.task == "goal_inference":
        prompt = corpus.vectors_of(draft.prompt)
        for item in negatives:
            steps = corpus.step_slice(item)
            similarity = corpus.vectors_of(steps) @ prompt
            if similarity.size and similarity.max() >= max_similarity:
                return (
                    f"the prompt step is {similarity.max():.2f} similar to "
                    f"{corpus.texts[steps.start + int(similarity.argmax())]!r}, a step of the negative goal "
                    f"{corpus.texts[item]!r} (max {max_similarity:g})"
                )
    return None


def markup_in(text: str) -> str:
    """What markup the text carries ("JSON", "HTML", "a URL"), or "" when none."""
    return next((kind for kind, pattern in _MARKUP if pattern.search(text)), "")


def markup_filter(draft: Draft, corpus: Corpus) -> str | None:
    for position, item in _texts(draft):
        if corpus.markup[item]:
            return f"{_where(position)} {corpus.texts[item][:80]!r} carries {markup_in(corpus.texts[item])}"
    return None


def distinct_filter(draft: Draft, corpus: Corpus) -> str | None:
    seen: dict[int, int] = {}
    for position, item in enumerate(draft.candidates):
        text = int(corpus.text_ids[item])
        if text in seen:
            return f"candidates {seen[text]} and {position} are the same text {corpus.texts[item]!r}"
        seen[text] = position
    return None


def filter_name(check: Filter) -> str:
    """The funnel's name for a filter: its function's name without '_filter' (through functools.partial)."""
    function = check.func if isinstance(check, partial) else check
    name = getattr(function, "__name__", type(function).__name__)
    return name.removesuffix("_filter")


DEFAULT_FILTERS: tuple[Filter, ...] = (
    markup_filter,
    length_filter,
    lexical_overlap_filter,
    tfidf_filter,
    similarity_filter,
)
ORDERING_FILTERS: tuple[Filter, ...] = (markup_filter, distinct_filter)
