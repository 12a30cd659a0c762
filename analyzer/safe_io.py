"""Opening files on a shared machine: never through a link nobody named, never blocking, never a
folder someone else controls.

Reading (``open_regular``, ``open_sized``, ``read_capped``): ``O_NONBLOCK`` so that a FIFO or a device swapped in
for a log between a folder walk and the read cannot block the open, ``O_NOFOLLOW`` unless the
caller names the path itself, then ``fstat`` on the open descriptor: anything but a regular file is
refused (``NotRegularFile``). Checking the descriptor, not the name, leaves no window for a swap. A
sized read (``open_sized``, ``read_capped``) stops at the size the file had at the open: a log still growing ends.

Writing (``create_new``, ``write_replace``, ``write_at``, ``open_append``): ``O_NOFOLLOW`` always; new
files with ``O_EXCL``; a whole-file write goes through a descriptor of the target's folder
(``open_dir``): a fresh ``O_EXCL`` temporary under a name from ``secrets`` is written there and renamed
over the target within that descriptor (a rename replaces a planted link itself, never what it points
to, and a folder swapped for a link after the open changes nothing); with ``regular_only`` a target
that exists and is not a regular file (a device, a FIFO, a link) is refused (``NotRegularFile``). An
append checks that the file it opened is a regular file of ours with one name. ``check_private_dir``
says why a folder is not safe to write into (not ours, or writable by others), ``private_dir`` makes
or checks one (0700) and the folders above it (``check_ancestors``: none another user could rename it
out of); ``sub_dir`` opens (or makes) a folder inside a folder descriptor, refused when it is a link or
not of an owner the caller names.
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
from io import BufferedReader
from pathlib import Path
from typing import Self, cast

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class NotRegularFile(OSError):
    """The path is a FIFO, device, socket, folder or link where a regular file was wanted."""


class UnsafeFolder(OSError):
    """A folder another user owns or can write to, where ncclscope would write or take code from."""


def kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def open_fd(path: str | os.PathLike[str], follow: bool = False) -> int:
    """A read-only descriptor of the regular file ``path``; raises NotRegularFile or OSError.

    ``follow``: the user named this path, so a link in its last component is followed.
    """
    flags = os.O_RDONLY | NONBLOCK | CLOEXEC | (0 if follow else NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP and not follow:
            raise NotRegularFile(errno.ELOOP, "a symbolic link, not followed", str(path)) from None
        raise
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegularFile(errno.EINVAL, f"{kind_of(st.st_mode)}, not a regular file", str(path))
    return fd


def open_regular(path: str | os.PathLike[str], follow: bool = False) -> BufferedReader:
    """``open(path, "rb")`` for a regular file only, opened without blocking and without following a link."""
    return cast(BufferedReader, os.fdopen(open_fd(path, follow), "rb"))


class SizedReader:
    """A regular file read no further than the size it had when it was opened (``fstat`` on the open
    descriptor): a log that keeps growing while it is read ends where it stood at the open, and one cut
    shorter meanwhile ends early. ``read`` and ``readinto`` as a binary file's, never past ``size``."""

    def __init__(self, f: BufferedReader) -> None:
        self._f = f
        self.size = os.fstat(f.fileno()).st_size
        self._left = self.size

    def read(self, n: int = -1) -> bytes:
        want = self._left if n < 0 else min(n, self._left)
        data = self._f.read(want) if want > 0 else b""
        self._left -= len(data)
        return data

    def readinto(self, buf: bytearray | memoryview) -> int:
        view = memoryview(buf).cast("B")
        if len(view) > self._left:
            view = view[:self._left]
        got = self._f.readinto(view) if len(view) else 0
        self._left -= got or 0
        return got or 0

    def fileno(self) -> int:
        return self._f.fileno()

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_sized(path: str | os.PathLike[str], follow: bool = False) -> SizedReader:
    """``open_regular``, read up to the size the file had at the open and never past it (``SizedReader``)."""
    f = open_regular(path, follow)
    try:
        return SizedReader(f)
    except BaseException:
        f.close()
        raise


class TooLarge(ValueError):
    """A file holds more than the bytes a reader accepts."""


def read_capped(path: str | os.PathLike[str], limit: int, follow: bool = False) -> bytes:
    """The whole regular file ``path`` if it holds at most ``limit`` bytes; raises TooLarge otherwise.

    At most ``limit + 1`` bytes are ever read, whatever the file claims (or a link to /dev/zero), and never
    more than its size at the open (``open_sized``: a file growing while it is read ends)."""
    with open_sized(path, follow) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"{path}: over the {limit} byte limit")
    return data


def check_private_dir(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is not a folder to write into or take code from (None: it is ours and no one
    else may write to it). A sticky shared folder (/tmp) is refused too: others can create names in it."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot inspect it ({e.strerror or e})"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if st.st_uid != os.geteuid():
        return f"it belongs to another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"others can write to it (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def check_ancestors(path: str | os.PathLike[str]) -> str | None:
    """Why a folder above ``path`` lets another user move ``path`` away or put something else in its
    place (None: each folder above it, links resolved, is ours or root's, and writable by no one else
    unless sticky, where others cannot rename what is ours)."""
    here = Path(os.path.realpath(os.path.dirname(os.path.abspath(path))))
    for folder in (here, *here.parents):
        try:
            st = os.lstat(folder)
        except OSError as e:
            return f"cannot inspect {folder} ({e.strerror or e})"
        if st.st_uid not in (0, os.geteuid()):
            return f"{folder} above it belongs to another user (uid {st.st_uid})"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            return f"others can write to {folder} above it (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def private_dir(path: str | os.PathLike[str], mode: int = 0o700) -> Path:
    """``path`` as a folder of ours that only we can write, in folders no other user can rename it out
    of (``check_ancestors``): created (with its parents) if missing, checked if present. Raises
    UnsafeFolder with the reason."""
    p = Path(path)
    try:
        p.mkdir(mode=mode, parents=True)
    except FileExistsError:
        pass
    why = check_private_dir(p) or check_ancestors(p)
    if why is not None:
        raise UnsafeFolder(errno.EPERM, f"refused: {why}", str(p))
    return p


def open_dir(path: str | os.PathLike[str], follow: bool = True) -> int:
    """A descriptor of the folder ``path`` to create and rename names in (``write_at``, ``sub_dir``).

    ``follow``: the user named this path, so a link in its last component is followed; without it a
    link raises UnsafeFolder."""
    try:
        return os.open(path, os.O_RDONLY | DIRECTORY | CLOEXEC | (0 if follow else NOFOLLOW))
    except OSError as e:
        if not follow and e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
            raise UnsafeFolder(errno.EPERM, "refused: it is a symbolic link", str(path)) from None
        raise


def sub_dir(parent_fd: int, name: str, owners: frozenset[int], mode: int = 0o755) -> int:
    """A descriptor of the folder ``name`` inside the folder ``parent_fd``, made (``mode``) if missing;
    raises UnsafeFolder when it is a link, no folder, of a user not in ``owners``, or writable by others."""
    try:
        os.mkdir(name, mode, dir_fd=parent_fd)
    except FileExistsError:
        pass
    try:
        fd = os.open(name, os.O_RDONLY | DIRECTORY | NOFOLLOW | CLOEXEC, dir_fd=parent_fd)
    except OSError as e:
        if e.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        raise UnsafeFolder(errno.EPERM, f"refused: it is {kind_of(st.st_mode)}", name) from None
    st = os.fstat(fd)
    why = None
    if st.st_uid not in owners:
        why = f"it belongs to another user (uid {st.st_uid})"
    elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        why = f"others can write to it (mode {stat.S_IMODE(st.st_mode):04o})"
    if why is not None:
        os.close(fd)
        raise UnsafeFolder(errno.EPERM, f"refused: {why}", name)
    return fd


def create_new(path: str | os.PathLike[str], mode: int = 0o644) -> int:
    """A write descriptor of a new file: fails if anything (a file, a link) already has the name."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, mode)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def check_regular_at(dir_fd: int, name: str) -> None:
    """Raises NotRegularFile when ``name`` in the folder ``dir_fd`` exists and is not a regular file
    (a link, a device, a FIFO, a folder); a missing name is fine."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(errno.EINVAL, f"{kind_of(st.st_mode)}, not a regular file", name)


def write_at(dir_fd: int, name: str, data: bytes | str, mode: int = 0o644, regular_only: bool = False) -> None:
    """Write ``data`` as the whole content of ``name`` in the folder ``dir_fd``: a fresh temporary there
    (``O_EXCL | O_NOFOLLOW``, a name nobody can guess), renamed over ``name`` within the descriptor.

    ``regular_only``: refuse (NotRegularFile) a ``name`` that exists and is not a regular file."""
    if not name or "/" in name or name in (".", ".."):
        raise IsADirectoryError(errno.EISDIR, "not a file name", name)
    if regular_only:
        check_regular_at(dir_fd, name)
    blob = data.encode() if isinstance(data, str) else data
    tmp = f".{name[:200]}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, mode, dir_fd=dir_fd)
    try:
        try:
            _write_all(fd, blob)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def write_replace(path: str | os.PathLike[str], data: bytes | str, mode: int = 0o644,
                  regular_only: bool = False) -> None:
    """Write ``data`` as the whole content of ``path`` (``write_at`` in the folder the caller named)."""
    p = Path(path)
    dfd = open_dir(p.parent)
    try:
        write_at(dfd, p.name, data, mode, regular_only)
    finally:
        os.close(dfd)


def open_append(path: str | os.PathLike[str], mode: int = 0o644) -> int:
    """An ``O_APPEND`` descriptor of ``path`` (created if missing), never through a link; refused
    unless it is a regular file of ours with one name (a hard link of someone else's file is not)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW | NONBLOCK | CLOEXEC, mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, f"{kind_of(st.st_mode)}, not a regular file", str(path))
        if st.st_uid != os.geteuid() or st.st_nlink != 1:
            raise UnsafeFolder(errno.EPERM, "refused: another user's file or a hard link", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def append(path: str | os.PathLike[str], data: bytes) -> None:
    """One ``write(2)`` of ``data`` at the end of ``path`` (see ``open_append``)."""
    fd = open_append(path)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def describe(e: OSError) -> str:
    """An OSError as a short reason: 'a FIFO, not a regular file', 'Permission denied'."""
    return str(e.strerror or e)
