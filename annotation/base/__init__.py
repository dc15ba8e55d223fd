"""The study engine's base: the tables every kind shares (studies, items, participants, assignments,
annotations),
the seam a kind implements (spec.py) and the registry the engine reads kinds through (registry.py), the
codebook,
the comprehension check, and the reads and parsers every page uses. Below everything else in the app."""
