"""The folder or archive walk: which files an input holds, as (path, display name) pairs, and the
entries it does not read (links, FIFOs, devices, unreadable folders), said as (name, why)."""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .. import archive, safe_io
from ..input_names import MAX_FILES, SKIP_DIRS, SKIP_NAMES, InputError


def collect_files(paths: list[Path], workdir: Path,
                  skipped: list[tuple[str, str]] | None = None) -> list[tuple[Path, str]]:
    """Expand folders and archives to (path, display name) pairs; ``skipped`` gets (name, why) for every
    entry of a folder that is not read (a link, a FIFO or device, an unreadable sub-folder)."""
    out: list[tuple[Path, str]] = []
    for root in paths:
        if not root.exists():
            raise InputError(f"{root}: no such file or folder")
        if root.is_file() and archive.is_archive(root):
            try:
                dest = archive.extract(root, Path(tempfile.mkdtemp(prefix="ncclscope-", dir=workdir)))
            except archive.ArchiveError as e:
                raise InputError(f"{root.name}: {e}") from None
            out.extend(_walk(dest, skipped))
        elif root.is_dir():
            out.extend(_walk(root, skipped))
        elif root.is_file():
            out.append((root.resolve(), root.name))  # a link the user named is followed once, here
        else:
            raise InputError(f"{root}: not a regular file or folder")
    return out


def _walk(root: Path, skipped: list[tuple[str, str]] | None = None) -> list[tuple[Path, str]]:
    """The files under ``root`` that ingest reads; links, FIFOs, devices and unreadable folders go to
    ``skipped`` as (name, why), for the analysis' problems."""
    out = []
    told = skipped if skipped is not None else []

    def unreadable(e: OSError) -> None:
        name = os.path.relpath(e.filename, root) if e.filename else str(root)
        told.append((name, f"folder not readable ({e.strerror or e})"))

    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=unreadable):
        links = {d for d in dirnames if os.path.islink(os.path.join(dirpath, d))}
        told.extend((os.path.relpath(os.path.join(dirpath, d), root), "a link to a folder, not followed")
                    for d in sorted(links) if not d.startswith("."))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS and d not in links)
        for fn in sorted(filenames):
            if fn in SKIP_NAMES or fn.startswith("."):
                continue
            p = Path(dirpath) / fn
            try:
                mode = os.lstat(p).st_mode
            except OSError as e:
                told.append((str(p.relative_to(root)), f"cannot read ({e.strerror or e})"))
                continue
            if not stat.S_ISREG(mode):
                told.append((str(p.relative_to(root)), safe_io.kind_of(mode) + (
                    ", not followed" if stat.S_ISLNK(mode) else ", not a regular file")))
                continue
            out.append((p, str(p.relative_to(root))))
            if len(out) > MAX_FILES:
                raise InputError(f"{root}: more than {MAX_FILES} files")
    return out



def file_size(p: Path) -> int:
    """``p``'s size at listing time; 0 when it cannot be told (parsing says why)."""
    try:
        return p.stat().st_size
    except OSError:
        return 0
