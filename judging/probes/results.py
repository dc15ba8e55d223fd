"""A probe's figures, read from its items (judging/probes/stats.py defines them)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .models import JudgeProbe, JudgeProbeItem, ProbeKind
from .stats import Detection, MeanInterval, PairedChange, detection, mean_interval, paired_change


@dataclass(frozen=True)
class ProbeResults:
    """What a probe found: for verbose the paired How2Score change, for delete / swap the detection rate;
    for every kind the mean length ratio; and how many items are scored, left out, failed or waiting."""

    probe: JudgeProbe
    n_items: int
    n_scored: int
    n_parse_failed: int  # both verdicts known, at least one a parse failure: left out of the figures
    n_failed: int
    n_waiting: int
    change: PairedChange | None  # verbose
    detection: Detection | None  # delete_step / swap_steps
    length_ratio: MeanInterval

    @property
    def verbose(self) -> bool:
        return self.probe.kind == ProbeKind.VERBOSE

    def as_json(self) -> dict[str, Any]:
        change, found = self.change, self.detection
        return {
            "probe": self.probe.pk,
            "kind": self.probe.kind,
            "n_items": self.n_items,
            "n_scored": self.n_scored,
            "n_parse_failed": self.n_parse_failed,
            "n_failed": self.n_failed,
            "n_waiting": self.n_waiting,
            "how2score_original": change.original_score if change else None,
            "how2score_perturbed": change.perturbed_score if change else None,
            "how2score_change": change.delta if change else None,
            "how2score_change_interval": change.interval if change else None,
            "mcnemar_p": change.p_value if change else None,
            "detection_rate": found.rate if found else None,
            "detection_interval": found.interval if found else None,
            "length_ratio": self.length_ratio.mean,
            "length_ratio_interval": self.length_ratio.interval,
        }


def probe_results(probe: JudgeProbe, items: Iterable[JudgeProbeItem] | None = None) -> ProbeResults:
    """The probe's figures (its items read in one query unless given)."""
    rows: Sequence[JudgeProbeItem] = list(items if items is not None else probe.items.all())
    scored = [item for item in rows if item.scored and not item.error]
    known = [item for item in rows if item.original_known and item.perturbed_known and not item.error]
    ratios = [r for item in rows if (r := item.length_ratio) is not None]
    verbose = probe.kind == ProbeKind.VERBOSE
    return ProbeResults(
        probe=probe,
        n_items=len(rows),
        n_scored=len(scored),
        n_parse_failed=len(known) - len(scored),
        n_failed=sum(1 for item in rows if item.error),
        n_waiting=sum(1 for item in rows if not item.error) - len(known),
        change=paired_change([_passes(i) for i in scored]) if verbose else None,
        detection=None if verbose else detection([_failures(i) for i in scored]),
        length_ratio=mean_interval(ratios),
    )


def _passes(item: JudgeProbeItem) -> tuple[bool, bool]:
    return not item.original_has_failure, not item.perturbed_has_failure


def _failures(item: JudgeProbeItem) -> tuple[int, int]:
    return item.original_n_failures or 0, item.perturbed_n_failures or 0


def judge_probes(judge_pk: int) -> list[ProbeResults]:
    """Every probe of a judge, newest first, with its figures (two queries)."""
    probes = list(JudgeProbe.objects.filter(judge_id=judge_pk).select_related("generator", "job"))
    by_probe: dict[int, list[JudgeProbeItem]] = {probe.pk: [] for probe in probes}
    for item in JudgeProbeItem.objects.filter(probe_id__in=list(by_probe)).order_by("probe_id", "position"):
        by_probe[item.probe_id].append(item)
    return [probe_results(probe, by_probe[probe.pk]) for probe in probes]
