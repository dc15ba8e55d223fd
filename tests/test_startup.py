"""Start-up stays light: what every command, web worker and Celery worker loads (django.setup(), the URL conf
with the admin, the Celery app with every tasks module) imports none of the heavy libraries. Each belongs in
the function (or the module behind a lazy import) that computes with it: numpy and scipy cost ~0.4 s at every
start, statsmodels, pandas and pyarrow more (issue #19 item 21).

`django.setup()` alone (what every management command pays before it does anything) must not even import the
web layer: DRF's views and serializers, the API schema (drf-spectacular, which imports django.test), HTTP
clients, pydantic (issue #33: registering the apps, their models, job kinds and study kinds imports no view,
serializer, API schema, HTTP client or pydantic; pages and APIs are reached through the URL conf), nor Celery
(its app loads when a process first sends a job), nor any admin module (Django's SimpleAdminConfig: they load
with the URL conf), nor a study kind's spec (the registry imports one when first asked for), so that it takes
at most 0.5 s with the production settings (docs/benchmarks.md measures it).

Checked in a fresh interpreter, since this test process has imported everything already."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

HEAVY = (
    "numpy",
    "scipy",
    "statsmodels",
    "pandas",
    "pyarrow",
    "sklearn",
    "krippendorff",
    "tokenizers",
    "faiss",
    "safetensors",
    "openai",
    "llama_cpp",
    "vllm",
    "torch",
    "matplotlib",
    "playwright",
)

# What django.setup() alone must not import (a name and its submodules), beyond HEAVY: the web layer's
# libraries, which the URL conf loads but a command needs none of.
SETUP_HEAVY = (
    *HEAVY,
    "rest_framework.views",
    "rest_framework.serializers",
    "rest_framework.generics",
    "drf_spectacular.openapi",
    "drf_spectacular.plumbing",
    "django.test",
    "requests",
    "httpx",
    "pydantic",
    "celery",
    "kombu",
)
# Modules of ours that load later than django.setup(): a kind's spec (with what its hooks compute with) when
# the kind is first asked for, the admin modules with the URL conf.
SETUP_LATE = re.compile(r"(annotation\.kinds\.\w+\.spec|[\w.]+\.admin(\.\w+)?)$")
_SETUP = """
import json, sys
import django
django.setup()
print(json.dumps(sorted(sys.modules)))
"""

_STARTUP = """
import json, sys
import django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns  # the URL conf, and through it every view module and the admin
from h2e_site.celery import app
app.loader.import_default_modules()  # what a worker imports: every app's tasks module
heavy = json.loads(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def _heavy_modules_at_startup(code: str) -> list[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "h2e_site.settings", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(HEAVY)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_it_imports_no_heavy_library_at_startup() -> None:
    loaded = _heavy_modules_at_startup(_STARTUP)
    roots = sorted({m.split(".")[0] for m in loaded})
    assert not roots, (
        f"start-up (django.setup, URL conf, Celery app) imports {roots}: import them inside the functions "
        f"that need them ({', '.join(loaded[:8])}...); `python -X importtime` shows who pulls them in"
    )


def test_it_sees_a_heavy_library_when_one_is_imported() -> None:
    """The check itself can fail: the same start-up plus an import of numpy reports numpy."""
    loaded = _heavy_modules_at_startup(_STARTUP.replace("heavy = json", "import numpy\nheavy = json"))
    assert "numpy" in loaded


@cache
def _modules_after_setup() -> frozenset[str]:
    """Every module loaded by django.setup() with the production settings (DEBUG off), in a fresh
    interpreter."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "h2e_site.settings",
        "PYTHONPATH": str(ROOT),
        "DEBUG": "0",
        "SECRET_KEY": "startup-test-" + "k" * 50,
        "ALLOWED_HOSTS": "example.org",
    }
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
    return frozenset(json.loads(done.stdout.strip().splitlines()[-1]))


def _loaded(name: str, modules: frozenset[str]) -> list[str]:
    return sorted(m for m in modules if m == name or m.startswith(name + "."))


@pytest.mark.parametrize("name", SETUP_HEAVY)
def test_django_setup_alone_imports_no_web_layer_nor_heavy_library(name: str) -> None:
    loaded = _loaded(name, _modules_after_setup())
    assert not loaded, (
        f"django.setup() imports {name} ({', '.join(loaded[:5])}): an app's models, AppConfig.ready(), job "
        "kinds and study kinds must not import it; `python -X importtime -c 'import django; django.setup()'` "
        "shows who does"
    )


def test_it_sees_a_module_that_setup_imports() -> None:
    """The check itself can fail: django.setup() does import the ORM."""
    assert _loaded("django.db.models", _modules_after_setup())


def test_django_setup_alone_imports_no_kind_spec_nor_admin_module() -> None:
    modules = _modules_after_setup()
    assert sorted(m for m in modules if SETUP_LATE.match(m) and not m.startswith("django.")) == []


def test_it_sees_a_kind_spec_or_an_admin_module() -> None:
    """The check itself can fail: the pattern names a kind's spec and an app's admin (module or package)."""
    names = [
        "annotation.kinds.pairwise.spec",
        "judging.admin",
        "judging.admin.generators",
        "annotation.base.admin",
    ]
    assert all(SETUP_LATE.match(name) for name in names)
    assert not SETUP_LATE.match("annotation.kinds.pairwise.models")
