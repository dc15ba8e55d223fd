"""The "Generate L2" admin page: a generator config (a file of configs/generators/, or a generator made from
one), a split and a limit; it starts a generate job and goes to the job's page, which follows its progress.
Imported generators have no config and do not appear; the same config file always makes the same generator
(its generator_id hashes the config and prompt), so choosing a file again resumes what is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse

from h2e_site.llm.config import load_config
from h2e_site.web import RUN_PERMISSION, request_user

from ..configs import generator_for_config, generator_id_of
from ..generate_jobs import generate_job_create
from ..models import Generator
from .actions import GenerateForm

GENERATOR_CONFIG_DIR = Path(settings.BASE_DIR) / "configs" / "generators"


def generator_config_files() -> list[Path]:
    """The generator configs shipped in configs/generators/ (YAML)."""
    if not GENERATOR_CONFIG_DIR.is_dir():
        return []
    return sorted(p for p in GENERATOR_CONFIG_DIR.iterdir() if p.suffix in {".yaml", ".yml"} and p.is_file())


DEMO_NOTE = " - demo model (embedded), L2 not meaningful"


def _config_file(path: Path) -> tuple[str, bool] | None:
    """The generator_id a config file would make and whether it is a demo model (None when the file does
    not load: choosing it says why)."""

    try:
        config = load_config(path, role="generator")
        return generator_id_of(config), _is_demo(config.is_demo_model, config.backend)
    except (ValueError, OSError):
        return None


def _is_demo(is_demo_model: object, backend: object) -> bool:
    """A demo model: marked so in its config, or the embedded model (backend local), which always is one."""
    return bool(is_demo_model) or backend == "local"


def generator_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    """Generators that can run (rows with a config), named with the files they were made from, then the
    config files no row was made from yet (a row is made on first use); a demo model says so."""
    rows = list(Generator.objects.exclude(config={}).order_by("model", "generator_id"))
    known = {row.generator_id for row in rows}
    files_of: dict[str, list[str]] = {}
    new_files = []
    for path in generator_config_files():
        generator_id, demo = _config_file(path) or (None, False)
        note = DEMO_NOTE if demo else ""
        if generator_id in known:
            files_of.setdefault(str(generator_id), []).append(f"configs/generators/{path.name}")
        else:
            new_files.append((f"file:{path.name}", f"configs/generators/{path.name} (new generator){note}"))
    generators = [
        (
            f"generator:{row.pk}",
            f"{row.model} ({row.generator_id})"
            + (f" · {', '.join(files_of[row.generator_id])}" if row.generator_id in files_of else "")
            + (DEMO_NOTE if _is_demo(row.config.get("is_demo_model"), row.backend) else ""),
        )
        for row in rows
    ]
    groups = [("Generators", generators), ("Config files", new_files)]
    return [(label, options) for label, options in groups if options]


def generator_from_choice(value: str) -> Generator:
    """The Generator for a generator_choices() value; ValueError (ConfigError) for a bad or unknown file."""

    kind, _, ref = value.partition(":")
    if kind == "generator" and ref.isascii() and ref.isdigit():
        generator = Generator.objects.exclude(config={}).filter(pk=int(ref)).first()
        if generator is None:
            raise ValueError(f"no generator with a config has the id {ref}")
        return generator
    path = GENERATOR_CONFIG_DIR / ref
    if kind != "file" or path not in generator_config_files():
        raise ValueError(f"no generator config file {ref!r} in configs/generators/")
    return generator_for_config(load_config(path, role="generator"))


class _GeneratorChoice(forms.ChoiceField):
    def valid_value(self, value: str) -> bool:
        """Any value: generator_from_choice checks it (a config file stays valid once its generator is made,
        when the menu shows the generator instead)."""
        return True


class GenerateFromConfigForm(GenerateForm):
    generator = _GeneratorChoice(
        label="Generator",
        help_text="a config file from configs/generators/, or a generator made from one. Imported generators "
        "have no config and cannot run here.",
    )
    field_order = ["generator", "split", "limit"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["generator"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "— choose a generator —"), *generator_choices()]

    def clean_generator(self) -> Generator:
        try:
            return generator_from_choice(self.cleaned_data["generator"])
        except ValueError as exc:  # ConfigError names the file and the field
            raise forms.ValidationError(str(exc)) from exc


def generate_view(request: HttpRequest, admin_site: admin.AdminSite) -> HttpResponse:
    """Choose a generator config and start a generate job; its page follows the progress."""
    if not request.user.has_perm(RUN_PERMISSION):
        raise PermissionDenied("You need the 'add job' permission to generate.")
    form = GenerateFromConfigForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        job = _start(request, form)
        if job is not None:
            return redirect("jobs:job_detail", pk=job.pk)
    context = {
        **admin_site.each_context(request),
        "title": "Generate L2 from a config",
        "form": form,
        "opts": Generator._meta,
    }
    return TemplateResponse(
        request, "admin/judging/generate.html", context, status=400 if form.errors else 200
    )


def _start(request: HttpRequest, form: GenerateFromConfigForm) -> Any:
    generator = form.cleaned_data["generator"]
    try:
        job = generate_job_create(
            generator=generator,
            split=form.cleaned_data["split"] or None,
            limit=form.cleaned_data["limit"],
            created_by=request_user(request),
        )
    except ValueError as exc:  # nothing to generate, a config that cannot run
        form.add_error(None, str(exc))
        return None
    messages.success(
        request,
        f"Job #{job.pk} started: {generator.model} ({generator.generator_id}) writes L2 for "
        f"{job.total} procedure{'s' if job.total != 1 else ''}.",
    )
    return job
