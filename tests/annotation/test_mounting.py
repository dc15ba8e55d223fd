"""The annotation app is mounted without naming its kinds (issue #33 items 2 and 5): annotation/mounting/urls/
composes every URL conf from the flow's, Prolific's and the failures' own route lists and from each
registered kind's URL hooks; h2e_site/urls.py mounts packages only; a kind's spec (loaded when first asked
for, not at app start) reaches its views and routes by name, so start-up loads none of them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import URLPattern, URLResolver, resolve

from annotation import kinds
from annotation.base.registry import KINDS

ROOT = Path(__file__).resolve().parents[2]
MOUNTING = [
    *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "annotation/mounting/urls").glob("*.py")),
    "annotation/flow/urls.py",
    "h2e_site/urls.py",
]
URL_HOOKS = ("page_urls", "agreement_urls", "api_urls", "api_routes", "site_urls", "site_urls_after_apps")


def _kind_words() -> re.Pattern[str]:
    """Each registered kind's name as code, a URL or a sentence says it (step_types, step-types, ...)."""
    forms = {re.sub("_", sep, name) for name in kinds.KINDS for sep in ("_", "-", " ")}
    return re.compile("|".join(sorted(map(re.escape, forms))), re.IGNORECASE)


def test_the_url_confs_name_no_kind() -> None:
    words = _kind_words()
    found = [
        f"{name}:{number}: {line.strip()}"
        for name in MOUNTING
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1)
        if words.search(line) or "annotation.kinds." in line
    ]
    assert found == []


def test_every_kinds_url_hooks_give_routes() -> None:
    for spec in KINDS.values():
        for hook in URL_HOOKS:
            routes = getattr(spec, hook)()
            assert isinstance(routes, list), (spec.kind, hook)
            assert all(isinstance(route, URLPattern | URLResolver) for route in routes), (spec.kind, hook)


def test_a_kinds_pages_come_before_the_catch_alls_and_around_judgings() -> None:
    assert resolve("/leaderboard/calibrated/").view_name == "calibrated:leaderboard"
    assert resolve("/leaderboard/topics/").view_name == "judging:topic_heatmap"
    assert resolve("/judges/rank-correlation/").view_name == "judging:rank_correlation"
    assert resolve("/judges/rank-correlations/").view_name == "judges:report_card"
    assert resolve("/agreement/step-types/label-sets/").view_name == "agreement:step_types_label_sets"
    assert resolve("/agreement/a-study/").view_name == "agreement:study"


_SETUP = """
import json, sys
import django
django.setup()
print(json.dumps(sorted(sys.modules)))
"""
# What a kind's spec must not load at app start: its pages, its API and its routes.
WEB_LAYER = re.compile(r"annotation\.kinds\.\w+\.(\w+\.)?(views\w*|\w*api|urls\w*|\w*serializers)$")


def test_start_up_loads_no_kinds_views_api_or_routes() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "h2e_site.settings", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _SETUP],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert [name for name in loaded if WEB_LAYER.match(name)] == []
    assert any(name.startswith("annotation.kinds.") and name.endswith(".models") for name in loaded)


def test_the_registry_imports_a_spec_only_when_the_kind_is_asked_for() -> None:
    """A registered kind is known (listed, labelled, `in KINDS`) from its registration alone; its spec path is
    imported on the first lookup, which refuses a path that is not that kind's StudyKindSpec."""
    from django.core.exceptions import ImproperlyConfigured

    from annotation.base.registry import register
    from annotation.base.types import KINDS_INDEX, kind_label

    spec = "annotation.base.types.Refused"
    register("not_a_kind", label="Not a kind", description="Not a kind (a test's)", spec=spec)
    try:
        assert "not_a_kind" in KINDS and "not_a_kind" in list(KINDS)
        assert kind_label("not_a_kind") == "Not a kind"
        with pytest.raises(ImproperlyConfigured, match=re.escape(spec)):
            KINDS["not_a_kind"]
        with pytest.raises(ValueError, match="two study kinds"):
            register("not_a_kind", label="Again", description="Again", spec="x.y")
    finally:
        del KINDS_INDEX["not_a_kind"]
    assert "not_a_kind" not in KINDS and "nothing" not in KINDS
