"""Start-up stays light: what every command, web worker and Celery worker loads (django.setup(), the URL conf
with the admin, the Celery app with every tasks module) imports none of the heavy libraries. Each belongs in
the function (or the module behind a lazy import) that computes with it: numpy and scipy cost ~0.4 s at every
start, statsmodels, pandas and pyarrow more (issue #19 item 21).

Checked in a fresh interpreter, since this test process has imported everything already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
