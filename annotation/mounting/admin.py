"""The annotation packages' admin modules, registered with the admin site when the URL conf mounts it
(h2e_site/urls.py, after Django's autodiscovery, which finds only an app's top-level admin.py): the engine's
tables, Prolific's and each kind's. The admin is Django's SimpleAdminConfig, so django.setup() imports no
admin module."""

from __future__ import annotations

from importlib import import_module

from annotation import kinds

ENGINE_AND_OPERATIONS = ("annotation.base", "annotation.prolific")


def register_admins() -> None:
    """Imports every package's admin module (each registers its ModelAdmins; importing twice does nothing)."""
    for package in ENGINE_AND_OPERATIONS:
        kinds.submodule(import_module(package), "admin")
    kinds.kind_modules("admin")
