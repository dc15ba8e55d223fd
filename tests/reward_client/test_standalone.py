"""clients/h2e-reward installs on a training machine without the studio: its distribution declares no
dependency and its modules import nothing outside the standard library."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from django.conf import settings

CLIENT = Path(settings.BASE_DIR) / "clients" / "h2e-reward"

# Imports every module of the package in a fresh interpreter that refuses any import outside the standard
# library and h2e_reward itself.
ONLY_STDLIB = """
import importlib.abc, sys
sys.path.insert(0, sys.argv[1])
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top != "h2e_reward" and top not in sys.stdlib_module_names:
            raise ImportError(f"h2e_reward imported {name}, outside the standard library")
sys.meta_path.insert(0, Refuse())
import h2e_reward, h2e_reward.client, h2e_reward.items, h2e_reward.coalesce
import h2e_reward.trl, h2e_reward.verl, h2e_reward.open_instruct
print(sorted(m for m in sys.modules if m.split(".")[0] not in sys.stdlib_module_names))
"""


def test_it_declares_no_dependency() -> None:
    project = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "h2e-reward" and project["dependencies"] == []


def test_its_modules_import_only_the_standard_library() -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", ONLY_STDLIB, str(CLIENT / "src")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "h2e_reward.trl" in done.stdout and "django" not in done.stdout
