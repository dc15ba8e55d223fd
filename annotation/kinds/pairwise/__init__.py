"""The pairwise kind's own code (its spec is annotation/kinds/pairwise/spec.py): its table of pairs
(models.py), what participants read (guidelines.py), its comparison records and figures (comparisons.py),
its study data as such records and its export (data.py), its figures page context (figures.py), its judge's
verdicts read back (verdicts.py) and its API (api.py)."""

from annotation.base.registry import register
from annotation.kinds.pairwise.spec import Pairwise

register(Pairwise())
