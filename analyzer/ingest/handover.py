"""How a parse worker hands its result to the analysing process: a protocol-5 pickle whose numpy columns follow
it raw, written into a nameless memory file that the analysing process made for the group before it forked the
workers (``ResultFiles``: ``memfd_create``; where there is none, a temporary file unlinked as it is made), mapped
copy-on-write by the parent. Such a file has no name in /dev/shm or anywhere: it lives while a process holds its
descriptor, so however the analysis ends (SIGHUP, SIGQUIT, SIGTERM, SIGKILL) the kernel frees it with the
processes. Through the pool as one pickle where the file cannot be written or no descriptor was left for it.
"""
from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import resource
import tempfile

from .formats import Parsed
from .groups import FileItem, parse_job

RESULT_ALIGN = 64  # each out-of-band column starts at a multiple of this in a result file
SPARE_FDS = 256  # descriptors left free for everything else when result files are made
RESULT_NAME = "ncclscope-result"  # a memory file's name, as /proc/<pid>/fd shows it (memfd:ncclscope-result)


def parse_job_to_fd(group: list[FileItem], fd: int | None) -> list[int] | bytes:
    """``groups.parse_job`` in a worker, its result written into the memory file ``fd`` (the worker's copy of a
    descriptor the parent made before the fork) as a protocol-5 pickle with its numpy columns out of band
    (``write_result``); returns the layout ``read_result`` needs, and closes the worker's copy (the parent's
    keeps the file). Sent through the pool instead, a result is pickled again by the pool, pushed through a pipe
    64 KB at a time (each piece waiting for the parent's result thread to get the GIL while the parent imports
    or unpickles: the workers sat blocked for half the parse at 4,096 ranks) and copied twice more on the way
    in. Where the file cannot be written (memory refused) or ``fd`` is None (no descriptor was left for the
    group), the result comes back the old way, as one protocol-5 pickle through the pool, the file emptied."""
    parsed = parse_job(group)
    if fd is None:
        return pickle.dumps(parsed, protocol=5)
    try:
        return write_result(parsed, fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        return pickle.dumps(parsed, protocol=5)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def write_result(parsed: list[Parsed], fd: int) -> list[int]:
    """``parsed`` as a pickle whose numpy columns follow it raw, each at an offset aligned to ``RESULT_ALIGN``,
    from the start of the empty file ``fd`` (written at offsets, whatever the descriptor's position). Returns
    [pickle length, then offset and length of each column]."""
    columns: list[pickle.PickleBuffer] = []
    head = pickle.dumps(parsed, protocol=5, buffer_callback=columns.append)
    layout = [len(head)]
    _write_all(fd, memoryview(head), 0)
    at = len(head)
    for col in columns:
        raw = col.raw()
        at += -at % RESULT_ALIGN  # the gap reads as zeros
        layout += [at, raw.nbytes]
        _write_all(fd, raw, at)
        at += raw.nbytes
    return layout


def _write_all(fd: int, data: memoryview, at: int) -> None:
    data = data.cast("B")
    while data:
        n = os.pwrite(fd, data, at)
        data, at = data[n:], at + n


def read_result(fd: int, layout: list[int]) -> list[Parsed]:
    """A worker's result (``write_result``) in the file ``fd``, mapped copy-on-write: the numpy columns are views
    of the mapping (no copy; its pages are the ones the worker wrote), the mapping lives as long as they do.
    Raises OSError when the file is shorter than the layout says."""
    size = os.fstat(fd).st_size
    ends = [layout[0]] + [layout[i] + layout[i + 1] for i in range(1, len(layout), 2)]
    if max(ends) > size:
        raise OSError(f"a parse worker's result is cut short ({size} of {max(ends)} bytes)")
    view = memoryview(mmap.mmap(fd, size, access=mmap.ACCESS_COPY))
    columns = [view[layout[i]:layout[i] + layout[i + 1]] for i in range(1, len(layout), 2)]
    out: list[Parsed] = pickle.loads(view[:layout[0]], buffers=columns)
    return out


class ResultFiles:
    """One nameless memory file per group of files, made before the workers fork (they inherit the descriptors):
    ``memfd_create`` where the system has it, else a temporary file in ``fallback_dir`` unlinked as it is made.
    As many as the descriptor limit allows (raised to its ceiling where that helps) less ``SPARE_FDS``; a group
    past them gets None and comes back through the pool. ``take`` reads a group's result and closes its file."""

    def __init__(self, n: int, fallback_dir: str) -> None:
        self._fds: list[int | None] = []
        try:
            for _ in range(min(n, _free_descriptors(n))):
                self._fds.append(_anonymous_file(fallback_dir))
        except OSError:  # out of descriptors or memory after all: the rest through the pool
            pass
        self._fds += [None] * (n - len(self._fds))

    def fd(self, i: int) -> int | None:
        """Group ``i``'s file, None once taken or closed (or where none was left for it)."""
        return self._fds[i] if i < len(self._fds) else None

    def take(self, i: int, layout: list[int]) -> list[Parsed]:
        """Group ``i``'s result, read from its file (``read_result``), which is then closed."""
        fd, self._fds[i] = self._fds[i], None
        if fd is None:
            raise OSError(f"no result file for group {i}")
        try:
            return read_result(fd, layout)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Close every file not yet taken (what a worker wrote into one is freed with the last descriptor)."""
        fds, self._fds = self._fds, []
        for fd in fds:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _anonymous_file(fallback_dir: str) -> int:
    """A descriptor of a new, empty file that has no name: freed when its last descriptor closes."""
    if hasattr(os, "memfd_create"):
        try:
            return os.memfd_create(RESULT_NAME, os.MFD_CLOEXEC)
        except OSError:
            pass  # a kernel or sandbox without it
    fd, path = tempfile.mkstemp(prefix=RESULT_NAME + "-", dir=fallback_dir)
    os.unlink(path)
    return fd


def _free_descriptors(wanted: int) -> int:
    """How many more descriptors this process may open, keeping ``SPARE_FDS`` free; the soft limit is raised
    toward the hard one first when ``wanted`` more would not fit."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        used = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 64
        if soft != resource.RLIM_INFINITY and used + wanted + SPARE_FDS > soft:
            raised = used + wanted + SPARE_FDS if hard == resource.RLIM_INFINITY else min(hard, used + wanted + SPARE_FDS)
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
    except (OSError, ValueError):
        return 0
    return wanted if soft == resource.RLIM_INFINITY else max(0, soft - used - SPARE_FDS)
