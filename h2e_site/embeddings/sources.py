"""Where the texts to embed come from. The core knows none: each app registers its sources in its
AppConfig.ready() (mining: procedures; judging: judges' critical failures; annotation: annotators'), and the
`embed` job, its command, the admin and the API read them from here."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class TextSource:
    name: str  # as jobs, commands and the API name it, e.g. "procedures"
    label: str  # as the pages show it
    texts: Callable[[], Iterable[str]]  # every text of the source, streamed (repeats are embedded once)


_SOURCES: dict[str, TextSource] = {}


def text_source_register(source: TextSource) -> None:
    """Register (or replace, on a reload) a source of texts."""
    _SOURCES[source.name] = source


def text_source_for(name: str) -> TextSource:
    try:
        return _SOURCES[name]
    except KeyError:
        known = ", ".join(sorted(_SOURCES)) or "none"
        raise LookupError(f"no app registered the text source {str(name)!r} (known: {known})") from None


def text_sources() -> list[TextSource]:
    return [_SOURCES[name] for name in sorted(_SOURCES)]


def text_source_choices() -> list[tuple[str, str]]:
    return [(source.name, source.label) for source in text_sources()]
