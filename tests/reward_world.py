"""What a test of the reward service needs: a reward config whose judge is a loopback server, and a trainer's
account (staff, the permission judging.request_reward, a DRF token)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth.models import Permission
from rest_framework.authtoken.models import Token

from tests.factories import make_user


def write_reward_config(
    directory: Path, name: str, *, base_urls: list[str], concurrency: int = 64, **fields: Any
) -> Path:
    """configs/rewards/<name>.yaml in `directory`, its judge an OpenAI-compatible server (one or several)."""
    judge: dict[str, Any] = {
        "model": "loopback-model",
        "backend": "openai",
        "provider": "vllm",
        "max_concurrency": concurrency,
        "max_attempts": 1,
        "request_timeout_s": 30,
        "max_requests_per_minute": 1_000_000,
        "max_tokens_per_minute": 1_000_000_000,
    }
    judge |= {"base_url": base_urls[0]} if len(base_urls) == 1 else {"base_urls": base_urls}
    path = directory / f"{name}.yaml"
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"judge": judge, **fields}), encoding="utf-8")
    return path


def trainer(*, permitted: bool = True, staff: bool = True) -> tuple[Any, str]:
    """A user as a trainer would log in: staff, with judging.request_reward; and their token's key."""
    user = make_user(is_staff=staff)
    if permitted:
        user.user_permissions.add(Permission.objects.get(codename="request_reward"))
    return user, Token.objects.create(user=user).key
