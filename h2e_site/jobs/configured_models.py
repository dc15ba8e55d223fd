"""The columns every configured model's table shares: a model run from a config and its prompts, found by a
hash of them (its identity column, which each table names: model_id, ...).

An abstract base (no table of its own): the tables stay in their apps, with their own identity column and
whatever else they keep. A table whose config or prompt text has its own help text (or database default)
declares that field again; the columns and migrations are those the tables had before the base.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models


class ConfiguredModel(models.Model):
    """A model under a config and prompts, identified by `id_field` (a hash of them), or imported."""

    id_field: ClassVar[str]  # the column holding its identity (unique, 64 characters)

    model = models.CharField(max_length=255)
    backend = models.CharField(max_length=32, blank=True, default="")
    config = models.JSONField(default=dict, blank=True)
    prompt_text = models.TextField(blank=True, default="")
    prompt_sha256 = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.model} ({self.ident})"

    @property
    def ident(self) -> str:
        """Its identity: the value of its id_field."""
        return str(getattr(self, self.id_field))

    def config_to_run(self) -> dict[str, Any]:
        """The config kept to run it with ({} when it has none: an imported row)."""
        return self.config
