"""The pairwise kind's own code (its spec is annotation/kinds/pairwise.py): its table of pairs (models.py),
what participants read (guidelines.py), its study data as comparison records for judging/pairwise_figures.py
and its export (data.py), its figures page context (figures.py) and its API (api.py)."""
