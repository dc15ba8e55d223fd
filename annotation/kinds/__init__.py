"""Study kinds: what a study's items are and what its participants answer. This module is the registry: KINDS
below is the one list of kind names, in the order every page lists them.

A kind is one folder here (annotation/kinds/<kind>/): its spec (a `StudyKindSpec`, annotation/base/spec.py),
its tables, posted forms, views, URLs, API, exports, templates and static files. Its package registers it
with the engine (annotation/base/registry.py: its name, label and the dotted path of its spec) when `load()`
imports it at app start, with its tables; Study.kind's choices and every page's kind label are read from what
the kinds registered, so a new kind needs no migration of the engine.
Everything else (entry, consent, training, comprehension check, attention checks, dwell, leases, exactly-k
assignment, codes, the study builder's shared fields, the exports' shared columns) is the engine
(annotation/base/, annotation/flow/), which asks `kind_for(study)`.

A new kind: a folder here, its migration, and its name in KINDS (docs/reference/study-kinds.md).
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

from django.utils.module_loading import module_has_submodule

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

KINDS = ("critical_failures", "step_types", "multiple_choice", "pairwise")


def submodule(package: ModuleType, name: str) -> ModuleType | None:
    """`package.name` imported, or None when the package has no such module."""
    return import_module(f"{package.__name__}.{name}") if module_has_submodule(package, name) else None


def kind_modules(name: str) -> list[ModuleType]:
    """Imports each kind's module `name` (its models, job_types, admin, commands) and returns them, in the
    registry's order; every kind's package is imported (and so registered), those without it too."""
    packages = [import_module(f"{__name__}.{kind}") for kind in KINDS]
    return [module for package in packages if (module := submodule(package, name)) is not None]


def load() -> None:
    """Imports every kind's folder (each registers itself: its name, label and where its spec is) and its
    tables (its models.py, when it has one). No spec is imported: the registry imports one when asked."""
    kind_modules("models")


def kind_command(module: str) -> type[BaseCommand]:
    """The Command of the kind whose commands/ folder holds a module named as `module` (a thin module of
    annotation/management/commands/, where Django finds commands, passing its __name__)."""
    name = module.rpartition(".")[2]
    for commands in kind_modules("commands"):
        found = submodule(commands, name)
        if found is not None:
            command: type[BaseCommand] = found.Command
            return command
    raise ImportError(f"no study kind has a command {name!r} (annotation/kinds/<kind>/commands/{name}.py)")
