"""Synthetic demo data (`manage.py demo_setup`'s seeded world, demo/world/): how its rows are
marked, and the badge every page shows beside them.

The mark is in the names, so any page that shows a row shows its mark without one more query: generators
and judges are "synthetic/<name>" (model) and "synthetic-demo-<name>" (id), procedures "synthetic-demo-0001",
studies "synthetic-<kind>" with "(synthetic demo data)" in their title, participants "synthetic-<n>-<m>".
The template filter `synthetic_badge` (a builtin of every template: settings.TEMPLATES) turns such a name
into the badge.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

SYNTHETIC = "synthetic"
SYNTHETIC_MODEL_PREFIX = "synthetic/"
SYNTHETIC_ID_PREFIX = "synthetic-demo-"
SYNTHETIC_SLUG_PREFIX = "synthetic-"
BADGE_TEXT = "synthetic demo data"

register = template.Library()


def is_synthetic(name: object) -> bool:
    """Whether a generator's or judge's model or id, a procedure's id or a study's slug marks synthetic
    demo data."""
    return isinstance(name, str) and name.startswith((SYNTHETIC_MODEL_PREFIX, SYNTHETIC_SLUG_PREFIX))


@register.filter
def synthetic_badge(name: object) -> SafeString:
    """The "synthetic demo data" badge when `name` marks synthetic demo data (is_synthetic), else nothing."""
    if not is_synthetic(name):
        return SafeString("")
    return format_html(
        ' <span class="badge badge-synthetic" title="{}">{}</span>',
        "Made up by manage.py demo_setup to show the figures: not a model's output or a person's label",
        BADGE_TEXT,
    )
