"""Unpacking uploaded or given archives (.zip, .tar, .tar.gz, .tgz) without trusting them.

Refused: members whose path is absolute or climbs out with ``..``, links, devices and FIFOs,
more than ``max_members`` members, more than ``max_total`` bytes unpacked, or a compression
ratio above ``max_ratio`` (a bomb). Every refusal raises ArchiveError with the reason.
"""
from __future__ import annotations

import lzma
import os
import shutil
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

MAX_MEMBERS = 20_000
MAX_TOTAL = 4 * 1024**3
MAX_RATIO = 200


class Budget:
    """What several archives of one input (one upload) may unpack in all: bytes and files. Each
    archive's own limits still hold; this one is shared, so three small zips cannot unpack 3 GB."""

    def __init__(self, max_bytes: int = MAX_TOTAL, max_files: int = MAX_MEMBERS) -> None:
        self.bytes_left, self.files_left = max_bytes, max_files
        self.max_bytes, self.max_files = max_bytes, max_files

    def take(self, nbytes: int, nfiles: int = 0) -> None:
        self.bytes_left -= nbytes
        self.files_left -= nfiles
        if self.bytes_left < 0:
            raise ArchiveError(f"refused: the archives of this input unpack to more than {self.max_bytes} bytes in all")
        if self.files_left < 0:
            raise ArchiveError(f"refused: the archives of this input hold more than {self.max_files} files in all")


class ArchiveError(ValueError):
    """Why an archive was refused, always on one line (the CLI prints it as its one line on stderr)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split())[:500])


def is_archive(path: Path) -> bool:
    n = path.name.lower()
    return n.endswith((".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz"))


def _safe_rel(name: str) -> PurePosixPath:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveError(f"refused archive member with an absolute path: {name!r}")
    if any(part == ".." for part in p.parts):
        raise ArchiveError(f"refused archive member that climbs out of its folder: {name!r}")
    return p


def extract(path: Path, dest: Path, max_members: int = MAX_MEMBERS, max_total: int = MAX_TOTAL,
            max_ratio: int = MAX_RATIO, budget: Budget | None = None) -> Path:
    """Unpack ``path`` into ``dest`` (created) and return ``dest``. Raises ArchiveError only.

    ``budget``: shared by every archive of one input; each member's bytes are taken from it as they
    are written (and its declared size before), so the sum over archives is bounded too."""
    try:
        return _extract(path, dest, max_members, max_total, max_ratio, budget or Budget(max_total, max_members))
    except ArchiveError:
        raise
    except RuntimeError as e:  # zipfile: "File ... is encrypted, password required"
        raise ArchiveError(f"not a readable archive: {e}") from None
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, NotImplementedError,
            ValueError, OSError) as e:  # corrupt or truncated data, unsupported method, clashing member names
        reason = getattr(e, "strerror", None) or str(e) or type(e).__name__
        raise ArchiveError(f"not a readable archive: {reason}") from None


def _extract(path: Path, dest: Path, max_members: int, max_total: int, max_ratio: int, budget: Budget) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    packed = max(path.stat().st_size, 1)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if len(infos) > max_members:
                raise ArchiveError(f"refused archive with {len(infos)} members (limit {max_members})")
            total = 0
            for info in infos:
                rel = _safe_rel(info.filename)
                mode = (info.external_attr >> 16) & 0o170000
                if mode and mode not in (0o100000, 0o040000):
                    raise ArchiveError(f"refused archive member that is a link or device: {info.filename!r}")
                total += info.file_size
                if total > max_total:
                    raise ArchiveError(f"refused archive: unpacks to more than {max_total} bytes")
                if total / packed > max_ratio and total > 10 * 1024 * 1024:
                    raise ArchiveError(f"refused archive: compression ratio over {max_ratio} (a zip bomb?)")
                if info.is_dir():
                    continue
                budget.take(info.file_size, 1)
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                written = 0
                with zf.open(info) as src, open(target, "wb") as out:
                    while chunk := src.read(1 << 20):
                        written += len(chunk)
                        if written > info.file_size + 1024 or written > max_total:
                            raise ArchiveError(f"refused archive member that inflates past its size: {info.filename!r}")
                        if written > info.file_size:
                            budget.take(len(chunk))
                        out.write(chunk)
        return dest
    try:
        tf = tarfile.open(path)  # noqa: SIM115
    except (tarfile.TarError, OSError):
        raise ArchiveError("not a readable archive: neither a zip nor a tar (plain, gz, bz2 or xz) file") from None
    with tf:
        total = 0
        count = 0
        for member in tf:
            count += 1
            if count > max_members:
                raise ArchiveError(f"refused archive with more than {max_members} members")
            rel = _safe_rel(member.name)
            if member.issym() or member.islnk() or member.isdev() or member.isfifo():
                raise ArchiveError(f"refused archive member that is a link or device: {member.name!r}")
            if member.isdir():
                continue
            if not member.isfile():
                continue
            total += member.size
            if total > max_total:
                raise ArchiveError(f"refused archive: unpacks to more than {max_total} bytes")
            if total / packed > max_ratio and total > 10 * 1024 * 1024:
                raise ArchiveError(f"refused archive: compression ratio over {max_ratio} (a bomb?)")
            budget.take(member.size, 1)
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            member_src = tf.extractfile(member)
            if member_src is None:
                continue
            with member_src, open(target, "wb") as out:
                shutil.copyfileobj(member_src, out, 1 << 20)
    return dest


def within(base: Path, candidate: Path) -> bool:
    """True when ``candidate`` resolves inside ``base`` (no symlink or .. escape)."""
    try:
        return os.path.commonpath([base.resolve(), candidate.resolve()]) == str(base.resolve())
    except ValueError:
        return False
