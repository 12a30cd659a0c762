"""Files parsed a group at a time: the pool's unit of work. Small logs of a group are read into one
buffer and go through the COLL reader together (one pass for all their lines instead of one per file,
most of the cost when a run is thousands of small files); each file still gets exactly the records it
gets parsed alone. Anything else in a group is parsed alone (``formats.parse_file``).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .. import safe_io
from ..gc_pause import gc_paused
from ..model import Format
from ..sources.coll import kernel as coll_kernel
from ..sources.lines import lone_cr_to_lf
from ..sources.nccl_log import NcclCollBatch, scan_coll_block
from ..sources.records import UnreadLines
from .assemble import log_records
from .blocks import BLOCK_LINES, MAX_LINE, few_newline_offsets
from .formats import HEAD_BYTES, Parsed, parse_file, sniff
from .quoted import QUOTED_MAX_BYTES, quoted_nccl_errors

SMALL_LOG_BYTES = 2 * 1024 * 1024  # logs up to this size are parsed several at a time ...
GROUP_BYTES = 16 * 1024 * 1024  # ... in groups of about this many bytes: each group is a task of the worker pool,
# and per task costs (the pool's round trip, the reader's set-up) made 4 MB groups 13-23 % slower
GROUP_FILES = 256

FileItem = tuple[str, str, int]  # (path, display name, size at listing time)


def group_files(files: list[FileItem]) -> list[list[FileItem]]:
    """Biggest first; files up to ``SMALL_LOG_BYTES`` packed into groups of about ``GROUP_BYTES``."""
    groups: list[list[FileItem]] = []
    current: list[FileItem] = []
    filled = 0
    for f in sorted(files, key=lambda f: -f[2]):
        if f[2] > SMALL_LOG_BYTES:
            groups.append([f])
            continue
        if current and (filled + f[2] > GROUP_BYTES or len(current) >= GROUP_FILES):
            groups.append(current)
            current, filled = [], 0
        current.append(f)
        filled += f[2]
    if current:
        groups.append(current)
    return groups


def parse_job(group: list[FileItem]) -> list[Parsed]:
    """Parse a group of files (path, name, size): small logs together, anything else alone."""
    with gc_paused():
        return _parse_group(group)


def _parse_group(group: list[FileItem]) -> list[Parsed]:
    out: list[Parsed] = []
    small: list[tuple[Path, str, int]] = []
    for path_s, name, size in group:
        path = Path(path_s)
        if 0 < size <= SMALL_LOG_BYTES:
            small.append((path, name, size))
        else:
            out.append(parse_file(path, name))
    if small:
        out.extend(_parse_small(small))
    sizes = {name: (Path(path_s), size) for path_s, name, size in group}
    for p in out:  # a small log no parser read a line of (lines it did not understand aside): an error quoted alone, maybe
        item = sizes.get(p.file)
        if (item is not None and p.fmt is Format.LOG and 0 < item[1] <= QUOTED_MAX_BYTES
                and all(isinstance(r, UnreadLines) for r in p.records)):
            p.records = quoted_nccl_errors(item[0], p.file) or p.records
    return out


_READ_BUFFER: list[bytearray] = [bytearray()]  # a process's buffer for groups of small logs, kept between groups


def release_read_buffer() -> None:
    """Let this process's small-log buffer go: a long-lived process (the dashboard, the live monitor)
    keeps no 16 MB after its parse."""
    _READ_BUFFER[0] = bytearray()


def _parse_small(small: list[tuple[Path, str, int]]) -> list[Parsed]:
    """Small files (path, name, size) read straight into one buffer, a newline after each that lacks
    one, and parsed together; a file that is not a log, or is empty, is parsed alone. The buffer is
    the process's own and reused by the next group (no allocation and no joining copy per group:
    0.1-0.2 ms a rank log); the files' sizes are those at listing time, so a log still growing is
    read as it was then."""
    need = sum(size + 1 for _, _, size in small)
    if len(_READ_BUFFER[0]) < need:
        _READ_BUFFER[0] = bytearray(max(need, 2 * len(_READ_BUFFER[0])))
    buf = _READ_BUFFER[0]
    view = memoryview(buf)
    out: list[Parsed] = []
    items: list[tuple[Path, str, int]] = []
    ends: list[int] = []
    at = 0
    for path, name, size in small:
        n = _read_into(path, view[at:at + size])
        if not n or sniff(bytes(view[at:at + min(n, HEAD_BYTES)]), name) is not Format.LOG:
            out.append(parse_file(path, name))
            continue
        if buf.find(b"\r", at, at + n) >= 0:
            lone_cr_to_lf(view, at, at + n)  # CR-only line ends, as iter_blocks reads them
        end = at + n
        if buf[end - 1] != 10:
            buf[end] = 10
            end += 1
        items.append((path, name, n))
        ends.append(end)
        at = end
    if items:
        out += _parse_joined(view[:at], items, np.array(ends, dtype=np.int64))
    return out


def _read_into(path: Path, dest: memoryview) -> int:
    """Bytes of the regular file ``path`` read into ``dest``, up to its length (the size at listing time), through
    a bare descriptor (``safe_io.open_fd``: no link followed, never blocking, a regular file only) and no file
    object; 0 when it cannot be opened or read (``parse_file`` then says why)."""
    try:
        fd = safe_io.open_fd(path)
    except OSError:
        return 0
    try:
        n = 0
        while n < len(dest):
            got = os.readv(fd, [dest[n:]])
            if not got:
                break
            n += got
        return n
    except OSError:
        return 0
    finally:
        os.close(fd)


def parse_small_logs(files: list[tuple[Path, str, bytes]]) -> list[Parsed]:
    """Several small logs (path, name, content) parsed as one block: one pass of the COLL reader for
    all their lines instead of one per file, which is most of the cost when a run is thousands of
    small files. Each file's records are what ``parse_log`` gives it alone; an empty file, or one
    with a line longer than ``MAX_LINE`` (``iter_blocks`` cuts those), is parsed alone."""
    out = [parse_file(path, name) for path, name, data in files if not data]
    items = [(path, name, _lf_ends(data)) for path, name, data in files if data]
    if not items:
        return out
    joined = b"".join(data if data.endswith(b"\n") else data + b"\n" for _, _, data in items)
    ends = np.cumsum([len(data) + (not data.endswith(b"\n")) for _, _, data in items])
    return out + _parse_joined(joined, [(path, name, len(data)) for path, name, data in items], ends)


def _lf_ends(data: bytes) -> bytes:
    """``data`` with CR-only line ends made LF (``iter_blocks`` reads a file so)."""
    if b"\r" not in data:
        return data
    buf = bytearray(data)
    lone_cr_to_lf(buf)
    return bytes(buf)


def _parse_joined(joined: bytes | memoryview, items: list[tuple[Path, str, int]], ends: np.ndarray) -> list[Parsed]:
    """``parse_small_logs`` of files already joined: ``ends[i]`` is where file i (``items``: path, name,
    size) ends in ``joined``, each ending with a newline. ``joined`` may be a view of a buffer that is
    reused once this returns: nothing returned refers to it.

    The COLL reader keeps a Python object for each other line until its pass is done, so a pass takes runs
    of whole files of at most ``BLOCK_LINES`` lines; a file of more lines is parsed alone (a block at a
    time), and so is every file of a buffer of short lines (``JOINED_WORDS``), whose newline offsets alone
    would be up to 8 times its size."""
    nl = few_newline_offsets(joined, JOINED_WORDS)
    if nl is None:
        return [parse_file(path, name) for path, name, _ in items]
    last = np.searchsorted(nl, ends - 1)  # index of each file's last newline
    length = np.diff(nl, prepend=-1) - 1  # every line's length, its newline left out
    too_long = np.maximum.reduceat(length, np.concatenate([[0], last[:-1] + 1])) > MAX_LINE
    del length
    if too_long.any():
        out = [parse_file(path, name) for (path, name, _), bad in zip(items, too_long.tolist()) if bad]
        starts = np.concatenate([[0], ends[:-1]])
        rest = [(path, name, bytes(joined[int(a):int(a) + size])) for (path, name, size), a, bad in
                zip(items, starts, too_long.tolist()) if not bad]
        return out + (parse_small_logs(rest) if rest else [])
    firsts = np.concatenate([[0], last + 1])  # lines before each file, and in all
    out = []
    for lo, hi in _runs(np.diff(firsts), BLOCK_LINES):
        if int(firsts[hi] - firsts[lo]) > BLOCK_LINES:  # one file alone of more lines
            out.append(parse_file(items[lo][0], items[lo][1]))
            continue
        a = int(ends[lo - 1]) if lo else 0
        out += _scan_files(joined[a:int(ends[hi - 1])], nl[firsts[lo]:firsts[hi]] - a, items[lo:hi],
                           firsts[lo:hi + 1] - firsts[lo])
    return out


JOINED_WORDS = 256 * 1024  # a buffer of small logs with more 8-byte words holding a newline has short lines


def _runs(counts: np.ndarray, most: int) -> list[tuple[int, int]]:
    """Consecutive items as [lo, hi) runs of at most ``most`` in ``counts`` together; an item over it alone."""
    runs: list[tuple[int, int]] = []
    lo, total = 0, 0
    for i, n in enumerate(counts.tolist()):
        if i > lo and total + n > most:
            runs.append((lo, i))
            lo, total = i, 0
        total += n
    if len(counts):
        runs.append((lo, len(counts)))
    return runs


def _scan_files(block: bytes | memoryview, nl: np.ndarray, items: list[tuple[Path, str, int]],
                firsts: np.ndarray) -> list[Parsed]:
    """Files joined in ``block`` (``nl``: its newlines; file i holds lines ``firsts[i]`` + 1 to ``firsts[i + 1]``)
    through one pass of the COLL reader, then each file's records. Blank lines reach no line parser (none reads
    them); each file's ``FileEnd`` still counts them."""
    if coll_kernel.ready() is None:
        block = bytes(block)  # the numpy reader wants bytes
    batch, rest_lines = scan_coll_block(block, 1, "", newlines=nl)
    del block, nl
    rest_numbers = np.array([ln for ln, _ in rest_lines], dtype=np.int64)
    out: list[Parsed] = []
    for i, (_, name, size) in enumerate(items):
        before = int(firsts[i])
        lo_line, hi_line = before + 1, int(firsts[i + 1]) + 1
        mine: list[NcclCollBatch] = []
        if batch is not None:
            lo, hi = np.searchsorted(batch.lines, [lo_line, hi_line]).tolist()
            if hi > lo:
                mine.append(batch.for_file(lo, hi, name, before))
        r_lo, r_hi = np.searchsorted(rest_numbers, [lo_line, hi_line]).tolist()
        lines = [(ln - before, text) for ln, text in rest_lines[r_lo:r_hi] if text != "\n"]
        p = Parsed(name, Format.LOG, size=size)
        try:
            p.records, p.end = log_records(lines, mine, name, hi_line - lo_line)
        except (ValueError, RecursionError) as e:
            p.records, p.problem = [], f"{name}: {e}"
        out.append(p)
    return out
