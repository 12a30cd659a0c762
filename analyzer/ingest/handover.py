"""How a parse worker hands its result to the analysing process: a protocol-5 pickle whose numpy columns
follow it raw, in a new file of a private folder in shared memory (``/dev/shm``), mapped copy-on-write by
the parent and removed at once; through the pool as one pickle where the file cannot be written.
"""
from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import shutil
import tempfile

from .. import safe_io
from .formats import Parsed
from .groups import FileItem, parse_job

SHARED_MEMORY_DIR = "/dev/shm"  # parse workers' result files go here when it is a folder (memory, no disk)
RESULT_ALIGN = 64  # each out-of-band column starts at a multiple of this in a result file


def parse_job_to_file(group: list[FileItem], dest: str) -> list[int] | bytes:
    """``groups.parse_job`` in a worker, its result written to the new file ``dest`` as a protocol-5 pickle
    with its numpy columns out of band (``write_result``); returns the layout ``read_result`` needs.
    Sent through the pool instead, a result is pickled again by the pool, pushed through a pipe 64 KB
    at a time (each piece waiting for the parent's result thread to get the GIL while the parent
    imports or unpickles: the workers sat blocked for half the parse at 4,096 ranks) and copied
    twice more on the way in. Only this process's own worker wrote the file, in this process's
    private folder. Where the file cannot be written (a small ``/dev/shm``, such as a container's
    64 MB: the parent's mappings hold every result until the model has it), the result comes back
    the old way, as one protocol-5 pickle through the pool."""
    parsed = parse_job(group)
    try:
        return write_result(parsed, dest)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(dest)
        return pickle.dumps(parsed, protocol=5)


def write_result(parsed: list[Parsed], dest: str) -> list[int]:
    """``parsed`` as a pickle whose numpy columns follow it raw, each at an offset aligned to
    ``RESULT_ALIGN``, in the new file ``dest`` (created exclusively, never through a link). Returns
    [pickle length, then offset and length of each column]."""
    columns: list[pickle.PickleBuffer] = []
    head = pickle.dumps(parsed, protocol=5, buffer_callback=columns.append)
    layout = [len(head)]
    fd = safe_io.create_new(dest, 0o600)
    try:
        _write_all(fd, memoryview(head))
        at = len(head)
        for col in columns:
            raw = col.raw()
            pad = -at % RESULT_ALIGN
            if pad:
                _write_all(fd, memoryview(bytes(pad)))
            at += pad
            layout += [at, raw.nbytes]
            _write_all(fd, raw)
            at += raw.nbytes
    finally:
        os.close(fd)
    return layout


def _write_all(fd: int, data: memoryview) -> None:
    data = data.cast("B")
    while data:
        data = data[os.write(fd, data):]


def read_result(path: str, layout: list[int]) -> list[Parsed]:
    """A worker's result file (``write_result``), mapped copy-on-write and removed at once: the
    numpy columns are views of the mapping (no copy; its pages are the ones the worker wrote), the
    mapping lives as long as they do."""
    fd = safe_io.open_fd(path)
    try:
        size = os.fstat(fd).st_size
        ends = [layout[0]] + [layout[i] + layout[i + 1] for i in range(1, len(layout), 2)]
        if max(ends) > size:
            raise OSError(f"{path}: a parse worker's result is cut short ({size} of {max(ends)} bytes)")
        view = memoryview(mmap.mmap(fd, size, access=mmap.ACCESS_COPY))
    finally:
        os.close(fd)
        os.unlink(path)
    columns = [view[layout[i]:layout[i] + layout[i + 1]] for i in range(1, len(layout), 2)]
    out: list[Parsed] = pickle.loads(view[:layout[0]], buffers=columns)
    return out


def results_dir(stack: contextlib.ExitStack, fallback: str) -> str:
    """A new private folder (0700, a fresh random name) for the workers' result files, removed when
    ``stack`` closes: in ``SHARED_MEMORY_DIR`` where there is one, else ``fallback``."""
    if os.path.isdir(SHARED_MEMORY_DIR):
        try:
            folder = tempfile.mkdtemp(prefix="ncclscope-parse-", dir=SHARED_MEMORY_DIR)
        except OSError:
            return fallback
        LIVE_RESULT_DIRS.add(folder)
        stack.callback(_remove_results_dir, folder)
        return folder
    return fallback


LIVE_RESULT_DIRS: set[str] = set()  # this process's result folders in shared memory, until removed


def _remove_results_dir(folder: str) -> None:
    LIVE_RESULT_DIRS.discard(folder)
    shutil.rmtree(folder, True)


def remove_live_results() -> None:
    """Remove every result folder this process still has in shared memory (memory until removed): for a
    signal handler about to end the process without its ``finally`` blocks."""
    for folder in list(LIVE_RESULT_DIRS):
        _remove_results_dir(folder)
