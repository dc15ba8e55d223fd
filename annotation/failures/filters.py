"""The failure browser's filters, as given (FailureQuery: names, echoed back in links and forms) and resolved
(FailureFilters: row ids).

Filters: topic (name), generator (generator_id), judge (judge_id; only judge failures), study (slug; only
human failures), source ("judge" / "human"; absent = both), q (text; search.py), pattern (a FailurePattern's
id: the failures of one cluster of a topic's failure patterns, annotation/failures/meaning/).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from annotation.base.models import Study
from annotation.failures import search
from annotation.failures.meaning.models import FailurePattern
from annotation.failures.search import _text_hits, is_full_text
from judging.models import Generator, Judge
from mining.models import Topic

Source = Literal["judge", "human"]
SOURCES: tuple[Source, ...] = ("judge", "human")


@dataclass(frozen=True)
class FailureFilters:
    """Resolved filters (row ids); `nothing` when a given name matched no row, so no failure can match."""

    topic: int | None = None
    generator: int | None = None
    judge: int | None = None
    study: int | None = None
    source: Source | None = None
    q: str = ""
    pattern: int | None = None
    # the pattern's members: (CriticalFailure ids, AnnotatedFailure ids)
    pattern_members: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    nothing: bool = False
    # PostgreSQL with q: (id, judgment id) of the judge failures matching q under no other filter, all of
    # them or (a common word) the first SEARCH_COUNT_CAP + 1 the index gave; None otherwise.
    text_hits: tuple[tuple[int, int], ...] | None = None

    @property
    def search_is_broad(self) -> bool:
        """More judge failures match q than SEARCH_COUNT_CAP: the judge counts are lower bounds."""
        return self.text_hits is not None and len(self.text_hits) > search.SEARCH_COUNT_CAP

    @property
    def counts_at_least(self) -> bool:
        """The judge counts are lower bounds: a broad search not within a pattern's members (those are
        counted exactly)."""
        return self.search_is_broad and self.pattern_members is None

    @property
    def sources(self) -> tuple[Source, ...]:
        if self.nothing:
            return ()
        wanted = [s for s in SOURCES if self.source in (None, s)]
        if self.judge is not None:  # a judge's failures only
            wanted = [s for s in wanted if s == "judge"]
        if self.study is not None:  # a study's human failures only
            wanted = [s for s in wanted if s == "human"]
        return tuple(wanted)


@dataclass(frozen=True)
class FailureQuery:
    """The filters as given (names), echoed back in links and forms."""

    topic: str = ""
    generator: str = ""
    judge: str = ""
    study: str = ""
    source: str = ""
    q: str = ""
    pattern: str = ""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> FailureQuery:
        def get(name: str) -> str:  # NUL can't go into a PostgreSQL query: drop it
            return str(params.get(name) or "").replace("\x00", "").strip()[:200]

        return cls(
            topic=get("topic"),
            generator=get("generator"),
            judge=get("judge"),
            study=get("study"),
            source=get("source"),
            q=get("q"),
            pattern=get("pattern"),
        )

    def problems(self, choices: FilterChoices) -> dict[str, str]:
        """Each filter whose value names nothing (field -> message): an unknown source, or a topic,
        generator, judge or study that does not exist. Answered with a 400 by the API, shown on the page."""
        found: dict[str, str] = {}
        if self.source and self.source not in SOURCES:
            found["source"] = f"{self.source!r} is not a source: judge or human"
        for name, table, what in (
            ("topic", choices.topics, "topic"),
            ("generator", choices.generators, "generator with this generator_id"),
            ("judge", choices.judges, "judge with this judge_id"),
            ("study", choices.studies, "study with this slug"),
            ("pattern", choices.patterns, "failure pattern with this id"),
        ):
            value = getattr(self, name)
            if value and value not in table:
                found[name] = f"no {what}: {value!r}"
        return found

    def params(self, **changes: str) -> dict[str, str]:
        """The non-empty filters, with changes applied (for links that keep the other filters)."""
        values = {
            "topic": self.topic,
            "generator": self.generator,
            "judge": self.judge,
            "study": self.study,
            "source": self.source,
            "q": self.q,
            "pattern": self.pattern,
        }
        values.update(changes)
        return {k: v for k, v in values.items() if v}


@dataclass(frozen=True)
class FilterChoices:
    """The rows the filters pick from: name -> id, loaded once (the page's dropdowns use them too)."""

    topics: dict[str, int] = field(default_factory=dict)
    generators: dict[str, int] = field(default_factory=dict)
    judges: dict[str, int] = field(default_factory=dict)
    studies: dict[str, int] = field(default_factory=dict)
    patterns: dict[str, int] = field(default_factory=dict)


def pattern_choices(query: FailureQuery) -> dict[str, int]:
    """{pattern: its id} when the query names a failure pattern that exists, else {} (one small query)."""
    if not query.pattern.isdigit() or len(query.pattern) > 18:
        return {}
    found = FailurePattern.objects.filter(pk=int(query.pattern)).values_list("pk", flat=True).first()
    return {} if found is None else {query.pattern: found}


def filter_choices_for(query: FailureQuery) -> FilterChoices:
    """Only the rows named by the query (at most one small query per given filter)."""
    return FilterChoices(
        topics=dict(Topic.objects.filter(name=query.topic).values_list("name", "pk")) if query.topic else {},
        generators=dict(
            Generator.objects.filter(generator_id=query.generator).values_list("generator_id", "pk")
        )
        if query.generator
        else {},
        judges=dict(Judge.objects.filter(judge_id=query.judge).values_list("judge_id", "pk"))
        if query.judge
        else {},
        studies=dict(Study.objects.filter(slug=query.study).values_list("slug", "pk")) if query.study else {},
        patterns=pattern_choices(query),
    )


def failure_filters_resolve(query: FailureQuery, choices: FilterChoices) -> FailureFilters:
    """Names to ids; a name that is not found makes the result empty rather than silently unfiltered."""
    resolved: dict[str, int | None] = {}
    nothing = False
    for name, table in (
        ("topic", choices.topics),
        ("generator", choices.generators),
        ("judge", choices.judges),
        ("study", choices.studies),
        ("pattern", choices.patterns),
    ):
        value = getattr(query, name)
        resolved[name] = table.get(value) if value else None
        nothing = nothing or bool(value and resolved[name] is None)
    nothing = nothing or bool(query.source and query.source not in SOURCES)
    return FailureFilters(
        topic=resolved["topic"],
        generator=resolved["generator"],
        judge=resolved["judge"],
        study=resolved["study"],
        source=query.source if query.source in SOURCES else None,  # type: ignore[arg-type]
        q=query.q,
        pattern=resolved["pattern"],
        pattern_members=_pattern_members(resolved["pattern"]),
        nothing=nothing,
        text_hits=_text_hits(query.q) if query.q and is_full_text() and not nothing else None,
    )


def _pattern_members(pk: int | None) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    if pk is None:
        return None
    judge, human = FailurePattern.objects.values_list("judge_members", "human_members").get(pk=pk)
    return tuple(judge), tuple(human)
