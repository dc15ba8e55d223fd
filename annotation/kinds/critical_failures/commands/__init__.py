"""The kind's management commands, each run through a thin module of annotation/management/commands/ of
the same name (Django finds commands only there; annotation/kinds/__init__.py finds the kind's command)."""
