"""Creating a study with its items (each kind selects its own), and opening or closing it."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction

from annotation.base.models import (
    Study,
)
from annotation.base.registry import kind_for
from annotation.base.types import ATTENTION_CHECKS, Selection
from h2e_site.bounds import OutOfRange


def _code() -> str:
    return secrets.token_hex(4).upper()


def default_kind() -> str:
    """The kind of a study made without naming one: Study.kind's default."""
    return str(Study._meta.get_field("kind").get_default())


@transaction.atomic
def study_create(
    *,
    title: str,
    slug: str,
    selection: Selection,
    attention_checks: int = 0,
    created_by: AbstractBaseUser | AnonymousUser | None = None,
    kind: str = "",
    **settings: Any,
) -> Study:
    """A study of `kind` (none: `default_kind()`) over the selection; `attention_checks` extra items ask for
    a stated answer.

    `settings` are Study fields (annotators_per_item, min_dwell_seconds, lease_minutes, ...); the kind's own
    texts (training, guidelines, comprehension questions) fill the ones not given. Every field is checked by
    the model's validators (ranges, slug, Prolific id, the comprehension questions' schema), and a selection
    with no item is refused: ValidationError naming the field, nothing stored."""
    kind = kind or default_kind()
    spec = kind_for(kind)
    settings = {**spec.study_defaults(), **settings}
    settings.setdefault("completion_code", _code())
    settings.setdefault("screenout_code", _code())
    settings.setdefault("attention_failed_code", _code())
    user = created_by if isinstance(created_by, AbstractBaseUser) else None
    try:
        selection.check()
        ATTENTION_CHECKS.check("attention_checks", attention_checks)
    except OutOfRange as bad:
        raise ValidationError({bad.field: bad.message}) from None
    spec.check_selection(selection)
    study = Study(
        title=title,
        slug=slug,
        kind=kind,
        selection=selection.as_json(),
        created_by_id=user.pk if user else None,
        **settings,
    )
    study.full_clean()
    study.save(force_insert=True)
    if spec.items_create(study, selection, attention_checks) == 0:
        raise ValidationError({NON_FIELD_ERRORS: f"No item to annotate: {spec.nothing_selected}"})
    return study


def study_set_open(*, study: Study, is_open: bool) -> Study:
    Study.objects.filter(pk=study.pk).update(is_open=is_open)
    study.is_open = is_open
    return study
