"""The folder or archive walk: which files an input holds, as (path, display name) pairs, and the
entries it does not read (links, FIFOs, devices, unreadable folders), said as (name, why); the private
temporary folder archives are extracted into, removed when the parse ends or a signal ends the process."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
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


def has_archive(paths: list[Path]) -> bool:
    """Whether an input the user named is an archive (``collect_files`` extracts those into a folder)."""
    return any(p.is_file() and archive.is_archive(p) for p in paths)


LIVE_TEMP_DIRS: set[str] = set()  # this process's extraction folders, until removed


def extraction_dir(stack: contextlib.ExitStack) -> Path:
    """A new private temporary folder (0700) for extracted archives, removed when ``stack`` closes or by
    ``remove_live_results`` (a signal handler's). Its name carries this process' pid and pid namespace, so
    that a later analysis removes it if SIGKILL (which no handler sees) left it behind (``reap_stale``)."""
    tmp = Path(tempfile.gettempdir())
    reap_stale(tmp)
    folder = tempfile.mkdtemp(prefix=f"{_EXTRACT_PREFIX}{_pid_namespace()}-{os.getpid()}-", dir=tmp)
    LIVE_TEMP_DIRS.add(folder)
    stack.callback(_remove_dir, folder)
    return Path(folder)


_EXTRACT_PREFIX = "ncclscope-x"
_EXTRACT_NAME = re.compile(r"ncclscope-x(\d+)-(\d+)-[A-Za-z0-9_]+")


def _pid_namespace() -> int:
    """The inode of this process' pid namespace (0 where /proc does not say): a pid is only looked up
    among the processes of the namespace that wrote it."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True


def reap_stale(tmp: Path) -> list[str]:
    """Remove the extraction folders in ``tmp`` whose analysis is gone (ended by SIGKILL, or a crash of the
    machine's power): only real folders (no link), owned by this user, named by a process of this pid
    namespace that no longer runs. ``shutil.rmtree`` removes through directory descriptors, never following
    a link planted inside. Returns the names removed."""
    ns, uid = _pid_namespace(), os.getuid()
    gone: list[str] = []
    try:
        entries = list(os.scandir(tmp))
    except OSError:
        return gone
    for e in entries:
        m = _EXTRACT_NAME.fullmatch(e.name)
        if not m or int(m.group(1)) != ns or int(m.group(2)) == os.getpid() or _alive(int(m.group(2))):
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid:
            shutil.rmtree(e.path, True)
            gone.append(e.name)
    return gone


def _remove_dir(folder: str) -> None:
    LIVE_TEMP_DIRS.discard(folder)
    shutil.rmtree(folder, True)


def remove_live_results() -> None:
    """Remove every extraction folder this process still has: for a signal handler about to end the process
    without its ``finally`` blocks. (The parse workers' results are nameless memory files: nothing to remove.)"""
    for folder in list(LIVE_TEMP_DIRS):
        _remove_dir(folder)


def _walk(root: Path, skipped: list[tuple[str, str]] | None = None) -> list[tuple[Path, str]]:
    """The files under ``root`` that ingest reads; links, FIFOs, devices and unreadable folders go to
    ``skipped`` as (name, why), for the analysis' problems. Folders are listed with ``os.scandir``, whose
    entries say what each is without a ``stat`` call (``os.walk`` lists the same way, then this walk called
    ``lstat`` and built two paths a file: a third of a second at 16,384 rank logs, before any parse starts);
    only an entry that is not a regular file is looked at again, to say what it is. The order is
    ``os.walk``'s, top down: a folder's files by name, then its sub-folders by name."""
    out: list[tuple[Path, str]] = []
    told = skipped if skipped is not None else []
    top = os.fspath(root)

    def visit(folder: str, rel: str) -> None:
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as e:
            name = os.path.relpath(e.filename, top) if e.filename else top
            told.append((name, f"folder not readable ({e.strerror or e})"))
            return
        dirs: dict[str, os.DirEntry[str]] = {}
        files: dict[str, os.DirEntry[str]] = {}
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # a link to a folder too, as os.walk sorts them
            except OSError:
                is_dir = False
            (dirs if is_dir else files)[entry.name] = entry
        links = {d for d, entry in dirs.items() if entry.is_symlink()}
        told.extend((rel + d, "a link to a folder, not followed") for d in sorted(links) if not d.startswith("."))
        for fn in sorted(files):
            if fn in SKIP_NAMES or fn.startswith("."):
                continue
            entry = files[fn]
            if not entry.is_file(follow_symlinks=False):
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError as e:
                    told.append((rel + fn, f"cannot read ({e.strerror or e})"))
                    continue
                if not stat.S_ISREG(mode):
                    told.append((rel + fn, safe_io.kind_of(mode) + (
                        ", not followed" if stat.S_ISLNK(mode) else ", not a regular file")))
                    continue
            out.append((Path(entry.path), rel + fn))
            if len(out) > MAX_FILES:
                raise InputError(f"{root}: more than {MAX_FILES} files")
        for d in sorted(dirs):
            if not d.startswith(".") and d not in SKIP_DIRS and d not in links:
                visit(dirs[d].path, rel + d + "/")

    visit(top, "")
    return out


def file_size(p: Path) -> int:
    """``p``'s size at listing time; 0 when it cannot be told (parsing says why)."""
    try:
        return p.stat().st_size
    except OSError:
        return 0
