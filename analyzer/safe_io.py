"""Opening files on a shared machine: never through a link nobody named, never blocking, never a
folder someone else controls.

Reading (``open_regular``, ``read_capped``): ``O_NONBLOCK`` so that a FIFO or a device swapped in
for a log between a folder walk and the read cannot block the open, ``O_NOFOLLOW`` unless the
caller names the path itself, then ``fstat`` on the open descriptor: anything but a regular file is
refused (``NotRegularFile``). Checking the descriptor, not the name, leaves no window for a swap.

Writing (``create_new``, ``write_replace``, ``open_append``): ``O_NOFOLLOW`` always; new files with
``O_EXCL``; a whole-file write goes to a fresh ``O_EXCL`` temporary beside the target and is renamed
over it (a rename replaces a planted link itself, never what it points to); an append checks that the
file it opened is a regular file of ours with one name. ``check_private_dir`` says why a folder is
not safe to write into (not ours, or writable by others), ``private_dir`` makes or checks one (0700).
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
from io import BufferedReader
from pathlib import Path
from typing import cast

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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


class TooLarge(ValueError):
    """A file holds more than the bytes a reader accepts."""


def read_capped(path: str | os.PathLike[str], limit: int, follow: bool = False) -> bytes:
    """The whole regular file ``path`` if it holds at most ``limit`` bytes; raises TooLarge otherwise.

    At most ``limit + 1`` bytes are ever read, whatever the file claims (or a link to /dev/zero)."""
    with open_regular(path, follow) as f:
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


def private_dir(path: str | os.PathLike[str], mode: int = 0o700) -> Path:
    """``path`` as a folder of ours that only we can write: created (with its parents) if missing,
    checked if present. Raises UnsafeFolder with the reason."""
    p = Path(path)
    try:
        p.mkdir(mode=mode, parents=True)
    except FileExistsError:
        pass
    why = check_private_dir(p)
    if why is not None:
        raise UnsafeFolder(errno.EPERM, f"refused: {why}", str(p))
    return p


def create_new(path: str | os.PathLike[str], mode: int = 0o644) -> int:
    """A write descriptor of a new file: fails if anything (a file, a link) already has the name."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, mode)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_replace(path: str | os.PathLike[str], data: bytes | str, mode: int = 0o644) -> None:
    """Write ``data`` as the whole content of ``path``: a fresh temporary beside it, renamed over it."""
    p = Path(path)
    blob = data.encode() if isinstance(data, str) else data
    tmp = p.with_name(f".{p.name}.{secrets.token_hex(6)}.tmp")
    fd = create_new(tmp, mode)
    try:
        _write_all(fd, blob)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    try:
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


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
