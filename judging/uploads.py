"""Uploaded h2e files (admin form, POST /api/imports/): saved under VAR_DIR/uploads, archives unpacked safely.

An `h2e` upload is a .zip or .tar(.gz/.bz2/.xz) of an `h2e bench run` out_root. Members are written one by one
(never `extractall`): absolute names, `..` parts, links and device files reject the whole archive.
"""

from __future__ import annotations

import shutil
import tarfile
import uuid
import zipfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Literal

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.utils.text import get_valid_filename

ImportKind = Literal["bench", "h2e"]
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_ZIP_MODE_SYMLINK = 0o120000


class UploadError(ValueError):
    """An upload that cannot be imported; the message names the file and the reason."""


def uploads_save(*, files: Iterable[UploadedFile], kind: ImportKind) -> list[Path]:
    """Store uploads in a fresh directory; return the paths to import (files, or unpacked out_roots)."""
    batch_dir = _new_batch_dir()
    try:
        saved = [_save_one(upload, batch_dir) for upload in files]
        if not saved:
            raise UploadError("no file was uploaded")
        if kind == "bench":
            return saved
        return [_unpack_out_root(path, batch_dir / f"out_root_{i}") for i, path in enumerate(saved)]
    except BaseException:
        shutil.rmtree(batch_dir, ignore_errors=True)
        raise


def _new_batch_dir() -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    batch_dir = Path(settings.VAR_DIR) / "uploads" / f"{stamp}-{uuid.uuid4().hex[:8]}"
    batch_dir.mkdir(parents=True)
    return batch_dir


def _save_one(upload: UploadedFile, batch_dir: Path) -> Path:
    name = get_valid_filename(PurePosixPath((upload.name or "upload").replace("\\", "/")).name) or "upload"
    target = batch_dir / name
    n = 1
    while target.exists():
        target = batch_dir / f"{n}_{name}"
        n += 1
    with target.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return target


def _unpack_out_root(archive: Path, dest: Path) -> Path:
    """Unpack an out_root archive into dest; a single top-level folder is the out_root itself."""
    dest.mkdir()
    lower = archive.name.lower()
    if lower.endswith(".zip"):
        _unpack_zip(archive, dest)
    elif lower.endswith(_TAR_SUFFIXES):
        _unpack_tar(archive, dest)
    else:
        raise UploadError(f"{archive.name}: an h2e upload must be a .zip or .tar(.gz) of an out_root")
    entries = list(dest.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return dest


def _safe_target(dest: Path, member: str, archive: Path) -> Path:
    pure = PurePosixPath(member.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or (pure.parts and ":" in pure.parts[0]):
        raise UploadError(f"{archive.name}: member {member!r} would be written outside the upload folder")
    target = (dest / pure).resolve()
    if not target.is_relative_to(dest.resolve()):
        raise UploadError(f"{archive.name}: member {member!r} would be written outside the upload folder")
    return target


def _write(stream: IO[bytes], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        shutil.copyfileobj(stream, out)


def _unpack_zip(archive: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                target = _safe_target(dest, info.filename, archive)
                if (info.external_attr >> 16) & 0o170000 == _ZIP_MODE_SYMLINK:
                    raise UploadError(
                        f"{archive.name}: member {info.filename!r} is a link; links are refused"
                    )
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                with zf.open(info) as stream:
                    _write(stream, target)
    except zipfile.BadZipFile as exc:
        raise UploadError(f"{archive.name}: not a readable zip file ({exc})") from exc


def _unpack_tar(archive: Path, dest: Path) -> None:
    try:
        with tarfile.open(archive, "r:*") as tf:
            for member in tf:
                target = _safe_target(dest, member.name, archive)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                if not member.isfile():
                    raise UploadError(
                        f"{archive.name}: member {member.name!r} is not a regular file; links are refused"
                    )
                stream = tf.extractfile(member)
                if stream is not None:
                    _write(stream, target)
    except tarfile.TarError as exc:
        raise UploadError(f"{archive.name}: not a readable tar file ({exc})") from exc
