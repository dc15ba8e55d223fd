"""Prepare the demo: migrate, load the paper's examples, compute what the dashboards show (token metrics),
open the demo studies and create (or reset) the staff login.

Then the synthetic demo world (demo/world/: generators, judges and studies answered by simulated
annotators, marked synthetic on every page), so every figure has data; its pages go to
<H2E_VAR_DIR>/demo-pages.txt for demo/run.py.

Safe to run again: the imports are idempotent, compute_metrics fills only what is missing, the studies and
the synthetic world are created once, and the login keeps the password stored in
<H2E_VAR_DIR>/demo-login.txt (generated on the first run). The annotator entries go to
<H2E_VAR_DIR>/demo-study.txt (one path a line, without a PROLIFIC_PID): each link printed carries a fresh
random PID (annotation/base/prolific_ids.py `entry_link`), so each one opened is a new participant.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.base.models import Study
from annotation.base.prolific_ids import entry_link
from annotation.base.types import Selection
from annotation.flow.services import study_create
from annotation.kinds.critical_failures.models import CalibrationDesign
from demo.world import DemoWorld, DemoWorldIncomplete, demo_world_build, demo_world_pages
from judging.models import Generator

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
DEMO_USERNAME = "demo"


DEMO_STUDY_SLUG = "paper-examples"
DEMO_STEP_STUDY_SLUG = "paper-step-types"


def demo_study() -> Study:
    """An open annotation study over the paper's generations (created once; nobody has annotated it)."""
    return _open_study(DEMO_STUDY_SLUG, "The paper's examples", "critical_failures", "DEMO")


def demo_step_study() -> Study:
    """An open step-types study (the SIO protocol) over the demo procedures (created once)."""
    return _open_study(
        DEMO_STEP_STUDY_SLUG, "Step types of the paper's procedures", "step_types", "DEMO-STEPS"
    )


DEMO_PAIRWISE_SLUG = "paper-pairwise"


def demo_pairwise_study() -> Study:
    """An open pairwise study (created once): the L2s of every two generators on the goals they share (the
    paper's three frontier models wrote three goals each: 9 pairs), with one attention check."""
    existing = Study.objects.filter(slug=DEMO_PAIRWISE_SLUG).first()
    if existing is not None:
        return existing
    return study_create(
        title="The paper's L2s, two at a time",
        slug=DEMO_PAIRWISE_SLUG,
        kind="pairwise",
        selection=Selection(generator_ids=list(Generator.objects.values_list("pk", flat=True))),
        attention_checks=1,
        completion_code="DEMO-PAIRS-DONE",
        screenout_code="DEMO-PAIRS-SCREENOUT",
    )


DEMO_CALIBRATION_SLUG = "paper-calibration"
DEMO_CALIBRATION_SIZE = 6


def demo_calibration_study() -> Study:
    """A calibration study (uniform: n = 6 of the demo's generations, probabilities stored), created once,
    closed: its page shows the calibration sample and draws the next rounds."""
    existing = Study.objects.filter(slug=DEMO_CALIBRATION_SLUG).first()
    if existing is not None:
        return existing
    return study_create(
        title="A calibration sample of the paper's generations",
        slug=DEMO_CALIBRATION_SLUG,
        selection=Selection(
            calibration_design=CalibrationDesign.UNIFORM, sample_size=DEMO_CALIBRATION_SIZE, seed=0
        ),
        is_open=False,
        completion_code="DEMO-CAL-DONE",
        screenout_code="DEMO-CAL-SCREENOUT",
    )


def _open_study(slug: str, title: str, kind: str, code: str) -> Study:
    """The study of that slug, or a new one of `kind` over all it can take, with one attention check."""
    existing = Study.objects.filter(slug=slug).first()
    if existing is not None:
        return existing
    return study_create(
        title=title,
        slug=slug,
        kind=kind,
        selection=Selection(),
        attention_checks=1,
        completion_code=f"{code}-DONE",
        screenout_code=f"{code}-SCREENOUT",
    )


def items_summary(study: Study) -> str:
    """'11 items and 1 attention check, k = 3': counted as the study page counts them."""
    checks = study.items.filter(is_attention_check=True).count()
    items = study.items.count() - checks
    check_text = f" and {checks} attention check{'s' if checks != 1 else ''}" if checks else ""
    return f"{items} item{'s' if items != 1 else ''}{check_text}, k = {study.annotators_per_item}"


def world_summary(world: DemoWorld) -> str:
    """'critical failures synthetic-calibration: 100 items ..., pairwise ..., step types ..., multiple
    choice ...; mining run synthetic-demo-mining: 14 documents, 8 procedures kept'."""
    studies = (("critical failures", world.calibration), ("pairwise", world.pairwise),
               ("step types", world.step_types), ("multiple choice", world.multiple_choice))  # fmt: skip
    parts = [
        f"{kind} {study.slug}: {items_summary(study)}, {study.annotations.count()} annotations"
        for kind, study in studies
    ]
    run = world.mining_run
    if run is not None:
        parts.append(
            f"mining run {run.name}: {run.documents.count()} documents, "
            f"{run.kept_procedures.count()} procedures kept (pool)"
        )
    else:
        parts.append("no mining run (no document imported)")
    if world.training_runs:
        runs = ", ".join(f"{run.name} ({run.calls.count()} reward calls)" for run in world.training_runs)
        parts.append(f"training runs {runs}")
    return "; ".join(parts)


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
        parser.add_argument(
            "--no-summary",
            action="store_true",
            help="Leave out the login and the annotator links (make demo: demo/run.py prints them once the "
            "servers are up).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity = options["verbosity"]
        if not options["skip_migrate"]:
            call_command("migrate", interactive=False, verbosity=max(verbosity - 1, 0))
        call_command("import_bench", str(DEMO_DIR / "paper-examples" / "bench.jsonl"), split="bench")
        call_command("import_h2e", str(DEMO_DIR / "paper-h2e"))
        call_command("import_documents", str(DEMO_DIR / "mining" / "documents.jsonl"))  # for the Mining page
        self.stdout.write("Computing the token metrics the leaderboard shows (compute_metrics)...")
        call_command("compute_metrics", no_progress=verbosity == 0)
        password = demo_password()
        demo_user_reset(password=password)
        studies = [demo_study(), demo_step_study(), demo_pairwise_study()]
        entries = [f"/a/{study.slug}/" for study in studies]
        (Path(settings.VAR_DIR) / "demo-study.txt").write_text("\n".join(entries) + "\n", encoding="utf-8")
        for label, study in zip(("Demo study", "Step-types study", "Pairwise study"), studies, strict=True):
            self.stdout.write(f"{label} {study.slug}: {items_summary(study)}")
        calibration = demo_calibration_study()
        self.stdout.write(f"Calibration study {calibration.slug} (closed): {items_summary(calibration)}")
        pages = self._synthetic_world()
        if options["no_summary"]:
            return
        self.stdout.write(
            self.style.SUCCESS(f"Staff login: {DEMO_USERNAME} / {password} (kept in {demo_login_path()})")
        )
        for label, entry in zip(("demo study", "step-types study", "pairwise study"), entries, strict=True):
            self.stdout.write(f"Annotator view of the {label}: {entry_link(entry, study_id='demo')}")
        self.stdout.write("(Each annotator link carries a fresh random PROLIFIC_PID: a new participant.)")
        self.stdout.write("Pages of the synthetic demo data (staff login):")
        for label, path in pages:
            self.stdout.write(f"  {label}: {path}")

    def _synthetic_world(self) -> list[tuple[str, str]]:
        """Build the synthetic demo world (once), say how long it took, and write its pages to
        <H2E_VAR_DIR>/demo-pages.txt (one "label<TAB>path" a line) for demo/run.py to print."""
        started, cpu = time.perf_counter(), time.process_time()
        try:
            world = demo_world_build()
        except DemoWorldIncomplete as incomplete:
            raise CommandError(str(incomplete)) from None
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
        done = "built" if world.built else "already there, unchanged"
        timing = f"{seconds:.1f} s, {cpu_seconds:.1f} s of CPU"
        self.stdout.write(f"Synthetic demo world ({done}, {timing}): {world_summary(world)}")
        pages = demo_world_pages(world)
        lines = "".join(f"{label.strip()}\t{path}\n" for label, path in pages if not label.startswith(" "))
        (Path(settings.VAR_DIR) / "demo-pages.txt").write_text(lines, encoding="utf-8")
        return pages
