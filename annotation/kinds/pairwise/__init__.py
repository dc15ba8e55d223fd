"""The pairwise kind's own code (its spec is annotation/kinds/pairwise/spec.py): its table of pairs
(models.py), what participants read (guidelines.py), its comparison records and figures (comparisons.py),
its study data as such records and its export (data.py), its figures page context (figures.py), its judge's
verdicts read back (verdicts.py) and its API (api.py)."""

from annotation.base.registry import register
from annotation.kinds.pairwise.name import KIND

register(
    KIND,
    label="Pairwise",
    description="Pairwise (two L2s of one goal side by side: which has fewer critical failures)",
    spec=f"{__name__}.spec.Pairwise",
)
