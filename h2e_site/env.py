"""Tiny typed helpers that read settings from the environment."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlparse


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r} is not an integer") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def database_from_url(url: str, *, sqlite_default: Path) -> dict[str, object]:
    """Turn DATABASE_URL into a Django DATABASES entry (postgres:// or sqlite:///path)."""
    if not url:
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(sqlite_default)}
    parsed = urlparse(url)
    if parsed.scheme in {"sqlite", "sqlite3"}:
        # sqlite:///relative/path.sqlite3 or sqlite:////absolute/path.sqlite3
        path = unquote(url.split(":///", 1)[1]) if ":///" in url else ""
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path or str(sqlite_default)}
    if parsed.scheme in {"postgres", "postgresql", "pgsql"}:
        options = dict(parse_qsl(parsed.query))
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": options,
        }
    raise ValueError(
        f"DATABASE_URL scheme {parsed.scheme!r} is not supported (use postgres:// or sqlite:///)"
    )
