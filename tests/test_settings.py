"""Settings read from the environment: database and broker URLs, booleans, deploy checks.

Whole-settings behaviour is checked in a fresh interpreter (settings are read once per process).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from h2e_site.env import database_from_url, env_bool, env_int

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_KEYS = (
    "DATABASE_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "DEBUG",
    "ALLOWED_HOSTS",
    "H2E_VAR_DIR",
    "CI",
    "DJANGO_ALLOW_ASYNC_UNSAFE",  # set by the Playwright tests of this same session; never in production
)


def clean_env(**values: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in SETTINGS_KEYS}
    env["DJANGO_SETTINGS_MODULE"] = "h2e_site.settings"
    env.update(values)
    return env


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def loaded_settings(**env: str) -> dict[str, object]:
    code = (
        "import json, django; django.setup()\n"
        "from django.conf import settings\n"
        "from h2e_site.celery import app\n"
        "print(json.dumps({'db': settings.DATABASES['default'], 'broker': app.conf.broker_url,"
        " 'serializer': app.conf.task_serializer, 'result_serializer': app.conf.result_serializer,"
        " 'accept': list(app.conf.accept_content), 'eager': app.conf.task_always_eager,"
        " 'debug': settings.DEBUG}, default=str))"
    )
    result = run_python(code, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_it_parses_a_postgres_url() -> None:
    db = database_from_url(
        "postgres://h2e:p%40ss@db.example:6543/studio?sslmode=require", sqlite_default=Path("x")
    )
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "studio",
        "h2e",
        "p@ss",
        "db.example",
        "6543",
    )
    assert db["OPTIONS"] == {"sslmode": "require"}


def test_it_parses_relative_and_absolute_sqlite_urls() -> None:
    relative = database_from_url("sqlite:///var/demo.sqlite3", sqlite_default=Path("/unused"))
    absolute = database_from_url("sqlite:////srv/h2e/demo.sqlite3", sqlite_default=Path("/unused"))
    assert relative == {"ENGINE": "django.db.backends.sqlite3", "NAME": "var/demo.sqlite3"}
    assert absolute == {"ENGINE": "django.db.backends.sqlite3", "NAME": "/srv/h2e/demo.sqlite3"}


def test_it_rejects_an_unknown_database_scheme() -> None:
    with pytest.raises(ValueError, match=r"DATABASE_URL scheme 'mysql' is not supported"):
        database_from_url("mysql://root@localhost/h2e", sqlite_default=Path("x"))


def test_it_rejects_a_boolean_it_cannot_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H2E_TEST_FLAG", "maybe")
    with pytest.raises(ValueError, match=r"H2E_TEST_FLAG='maybe' is not a boolean"):
        env_bool("H2E_TEST_FLAG")


def test_it_reads_booleans_and_integers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H2E_TEST_FLAG", " Yes ")
    monkeypatch.setenv("H2E_TEST_INT", "twelve")
    assert env_bool("H2E_TEST_FLAG") is True
    with pytest.raises(ValueError, match=r"H2E_TEST_INT='twelve' is not an integer"):
        env_int("H2E_TEST_INT", 3)


def test_it_defaults_to_sqlite_and_the_embedded_broker(tmp_path: Path) -> None:
    loaded = loaded_settings(DEBUG="1", H2E_VAR_DIR=str(tmp_path))
    assert loaded["db"]["ENGINE"] == "django.db.backends.sqlite3"  # type: ignore[index]
    assert loaded["db"]["NAME"] == str(tmp_path / "h2e.sqlite3")  # type: ignore[index]
    assert loaded["broker"] == f"sqla+sqlite:///{tmp_path / 'celery-broker.sqlite3'}"
    assert loaded["eager"] is False


def test_it_uses_redis_as_broker_when_redis_url_is_set(tmp_path: Path) -> None:
    loaded = loaded_settings(DEBUG="1", H2E_VAR_DIR=str(tmp_path), REDIS_URL="redis://127.0.0.1:6379/3")
    assert loaded["broker"] == "redis://127.0.0.1:6379/3"
    assert loaded["eager"] is False


def test_it_speaks_json_only_to_celery(tmp_path: Path) -> None:
    loaded = loaded_settings(DEBUG="1", H2E_VAR_DIR=str(tmp_path))
    assert (loaded["serializer"], loaded["result_serializer"], loaded["accept"]) == ("json", "json", ["json"])


def test_it_passes_the_deploy_checks_with_production_settings(tmp_path: Path) -> None:
    production = {
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(64),
        "ALLOWED_HOSTS": "example.org",
        "DATABASE_URL": "postgres://h2e@db.example.org:5432/h2e",
        "REDIS_URL": "redis://redis.example.org:6379/0",
        "H2E_VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=clean_env(**production),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_it_refuses_to_start_without_a_secret_key_when_debug_is_off(tmp_path: Path) -> None:
    result = run_python("import django; django.setup()", DEBUG="0", H2E_VAR_DIR=str(tmp_path))
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY must be set when DEBUG is off" in result.stderr


@pytest.mark.parametrize(
    ("database_url", "redis_url", "message"),
    [
        ("postgres://postgres@127.0.0.1:5432/postgres", "redis://127.0.0.1:1/0", "Redis at REDIS_URL="),
        ("sqlite:///var/ci.sqlite3", "redis://127.0.0.1:6379/0", "DATABASE_URL must point at PostgreSQL"),
    ],
)
def test_it_fails_a_ci_run_whose_services_are_missing(
    tmp_path: Path, database_url: str, redis_url: str, message: str
) -> None:
    env = clean_env(
        CI="true", DEBUG="1", DATABASE_URL=database_url, REDIS_URL=redis_url, H2E_VAR_DIR=str(tmp_path)
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/test_settings.py",
            "-k",
            "postgres_url",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3, result.stdout + result.stderr
    assert message in result.stdout + result.stderr


def test_it_documents_every_setting_it_reads_in_the_readme() -> None:
    read = set(
        re.findall(
            r'env_(?:str|bool|int|list)\(\s*"([A-Z0-9_]+)"', (ROOT / "h2e_site/settings.py").read_text()
        )
    )
    readme = (ROOT / "docs/reference/configuration.md").read_text(encoding="utf-8")
    assert {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS"} <= read
    assert sorted(name for name in read if f"`{name}`" not in readme) == []


def test_each_pytest_worker_has_its_own_redis_database() -> None:
    from tests.conftest import xdist_redis_url

    assert xdist_redis_url("redis://127.0.0.1:6379/0", "gw0") == "redis://127.0.0.1:6379/1"
    assert xdist_redis_url("redis://:pw@redis:6379/4", "gw1") == "redis://:pw@redis:6379/6"
    assert xdist_redis_url("redis://127.0.0.1:6379", "gw0") == "redis://127.0.0.1:6379/1"
