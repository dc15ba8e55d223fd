"""Prepare the demo: migrate, load the paper's examples, and create (or reset) the staff login.

Safe to run again: the imports are idempotent and the login keeps the password stored in
<H2E_VAR_DIR>/demo-login.txt (generated on the first run).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from annotation.models import Study

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
DEMO_USERNAME = "demo"


DEMO_STUDY_SLUG = "paper-examples"


def demo_study() -> Study:
    """An open annotation study over the paper's generations (created once; nobody has annotated it)."""
    from annotation.services import Selection, study_create

    existing = Study.objects.filter(slug=DEMO_STUDY_SLUG).first()
    if existing is not None:
        return existing
    return study_create(
        title="The paper's examples",
        slug=DEMO_STUDY_SLUG,
        selection=Selection(),
        attention_checks=1,
        completion_code="DEMO-DONE",
        screenout_code="DEMO-SCREENOUT",
    )


def demo_login_path() -> Path:
    return Path(settings.VAR_DIR) / "demo-login.txt"


def demo_password() -> str:
    """The demo password: read from var/demo-login.txt, or generated once and written there."""
    path = demo_login_path()
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("password:"):
                return line.split(":", 1)[1].strip()
    password = secrets.token_urlsafe(12)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"username: {DEMO_USERNAME}\npassword: {password}\n", encoding="utf-8")
    path.chmod(0o600)
    return password


def demo_user_reset(*, password: str) -> None:
    user_model = get_user_model()
    user, _ = user_model.objects.get_or_create(username=DEMO_USERNAME, defaults={"email": "demo@example.org"})
    user.is_staff = True
    user.is_superuser = True
    user.is_active = True
    user.set_password(password)
    user.save()


class Command(BaseCommand):
    help = "Migrate, load the paper's examples (bench + h2e tree) and create or reset the demo staff login."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--skip-migrate", action="store_true", help="Do not run migrate first.")

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity = options["verbosity"]
        if not options["skip_migrate"]:
            call_command("migrate", interactive=False, verbosity=max(verbosity - 1, 0))
        call_command("import_bench", str(DEMO_DIR / "paper-examples" / "bench.jsonl"), split="bench")
        call_command("import_h2e", str(DEMO_DIR / "paper-h2e"))
        password = demo_password()
        demo_user_reset(password=password)
        study = demo_study()
        self.stdout.write(
            self.style.SUCCESS(f"Staff login: {DEMO_USERNAME} / {password} (kept in {demo_login_path()})")
        )
        entry = f"/a/{study.slug}/?PROLIFIC_PID=<24 hex characters>&STUDY_ID=demo&SESSION_ID=demo"
        (Path(settings.VAR_DIR) / "demo-study.txt").write_text(entry + "\n", encoding="utf-8")
        self.stdout.write(
            f"Annotator view of the demo study: {entry} "
            f"({study.items.count()} items, k = {study.annotators_per_item})"
        )
