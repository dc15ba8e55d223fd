"""The calibrated leaderboard's figures (annotation/kinds/critical_failures/calibration/calibrated.py computes
them) cached for the version of
what they read (issue #31 item 22): the judgments (judging.versions.judgments_version) and the human side
(label_versions.calibration_version: labels, item counters, gold, rounds, studies). Any write there changes
the version, so a cached board is never older than the data; a researcher browsing the page, the API and a
generator's topics reads it once per version instead of computing every line again (seconds at 280,000
judgments and a 10,000-item study: docs/benchmarks.md, researcher pages).

The lines are kept without their frame examples (140,000 rows at that size, which the pages do not show and
which would make the cache slow to read); the planner reads calibrated_lines() itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from annotation.kinds.critical_failures.calibration import calibrated as calibration
from annotation.kinds.critical_failures.calibration.calibrated import CalibratedLine, UnusedStudy
from annotation.kinds.critical_failures.label_versions import calibration_version
from judging.versions import cached, judgments_version


@dataclass(frozen=True)
class CalibratedBoard:
    lines: list[CalibratedLine]  # calibration.calibrated_lines(), each without its examples
    unused: list[UnusedStudy]  # calibration.unused_studies()


def calibrated_board(judge_ids: Sequence[str] | None = None) -> CalibratedBoard:
    """The calibrated lines of these judges (every judge when None or empty) and the unused studies."""
    wanted = sorted(set(judge_ids)) if judge_ids else None

    def compute() -> CalibratedBoard:
        samples = _samples()
        lines = calibration.calibrated_lines(judge_ids=wanted, samples=samples)
        return CalibratedBoard(
            [replace(line, examples=[]) for line in lines], calibration.unused_studies(samples)
        )

    return cached(f"calibrated-board:{wanted}", compute, version=_version())


def calibratable_judges() -> frozenset[int]:
    """Pks of the judges whose calibrated score can be defined (calibration.judges_with_labelled_samples),
    cached like the board: the page picks its default judge among them."""

    def compute() -> frozenset[int]:
        return frozenset(calibration.judges_with_labelled_samples(_samples()))

    return cached("calibratable-judges", compute, version=_version())


def _version() -> str:
    return f"{judgments_version()}|{calibration_version()}"


_SAMPLES: dict[str, dict[int, calibration.Sample]] = {}  # this process's samples of the latest version only


def _samples() -> dict[int, calibration.Sample]:
    """calibration.generator_samples() of the current version, read once per version in this process: the
    board and the calibratable judges are computed from the same samples (the frames are not worth the
    shared cache, see the module docstring)."""
    version = _version()
    if version not in _SAMPLES:
        _SAMPLES.clear()
        _SAMPLES[version] = calibration.generator_samples()
    return _SAMPLES[version]


__all__ = ["CalibratedBoard", "calibratable_judges", "calibrated_board"]
