"""The judges a page may offer to run: rows with a config, and the judge configs shipped in configs/judges/
(a file's row is made on first use). The admin's judge actions and the pairwise study's LLM twin both offer
them; here, not in the admin, so that a page can without loading the admin."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from django.conf import settings

from h2e_site.llm.config import load_config

from .configs import judge_for_config, judge_id_of
from .models import Judge

JUDGE_CONFIG_DIR = Path(settings.BASE_DIR) / "configs" / "judges"


def judge_config_files() -> list[Path]:
    """The judge configs shipped in configs/judges/ (YAML)."""
    if not JUDGE_CONFIG_DIR.is_dir():
        return []
    return sorted(p for p in JUDGE_CONFIG_DIR.iterdir() if p.suffix in {".yaml", ".yml"} and p.is_file())


def judge_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    """Judges that can run (rows with a config), then the config files no row was made from yet (a row is
    made on first use); a file some row was made from shows as that row, named with the file."""
    judges = list(Judge.objects.exclude(config={}).by_model())
    files_of: dict[str, list[str]] = defaultdict(list)
    new_files = []
    for path in judge_config_files():
        judge_id = _config_file_judge_id(path)
        if judge_id is not None and any(judge.judge_id == judge_id for judge in judges):
            files_of[judge_id].append(f"configs/judges/{path.name}")
        else:
            new_files.append((f"file:{path.name}", f"configs/judges/{path.name} (new judge)"))
    rows = [
        (
            f"judge:{judge.pk}",
            f"{judge.model} ({judge.judge_id}){_demo_suffix(judge)}"
            + (f" · {', '.join(files_of[judge.judge_id])}" if files_of[judge.judge_id] else ""),
        )
        for judge in judges
    ]
    return [(label, options) for label, options in [("Judges", rows), ("Config files", new_files)] if options]


def _config_file_judge_id(path: Path) -> str | None:
    """The judge_id a config file would make (None when the file does not load: choosing it says why)."""

    try:
        return judge_id_of(load_config(path, role="judge"))
    except (ValueError, OSError):
        return None


def _demo_suffix(judge: Judge) -> str:
    return " - demo model, judgments not meaningful" if judge.is_demo_model else ""


def judge_from_choice(value: str) -> Judge:
    """The Judge row for a judge_choices() value; raises ValueError (ConfigError) for a bad config file."""

    kind, _, ref = value.partition(":")
    if kind == "judge":
        return Judge.objects.get(pk=int(ref))
    path = JUDGE_CONFIG_DIR / ref
    if path not in judge_config_files():
        raise ValueError(f"no judge config file {ref!r} in configs/judges/")
    return judge_for_config(load_config(path, role="judge"))
