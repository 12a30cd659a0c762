"""Find input files (folder, files, archives), recognise each by content, parse it to records.

I/O lives here; parsers are pure functions of lines or bytes. Files are read as bytes and
decoded per line with ``errors='replace'``, so invalid UTF-8 and NUL bytes never raise; lines
longer than ``MAX_LINE`` are cut. Large sets of files are parsed in worker processes.
"""
from __future__ import annotations

import collections
import contextlib
import json
import mmap
import multiprocessing
import os
import pickle
import shutil
import signal
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import archive, safe_io
from .gc_pause import gc_paused
from .input_names import MAX_FILES, SKIP_DIRS, SKIP_NAMES, InputError
from .malloc import keep_freed_memory
from .safe_pickle import UnsafePickleError
from .sources.coll import kernel as coll_kernel
from .sources.env_file import parse_env_lines
from .sources.flight_recorder import parse_fr_json, parse_fr_pickle
from .sources.fold import fold_topology
from .sources.hook_jsonl import parse_jsonl
from .sources.nccl_log import NcclCollBatch, join_adds, parse_nccl_line, scan_coll_block
from .sources.nccl_tests import parse_nccl_tests_json, parse_nccl_tests_lines
from .sources.ras import looks_like_ras_json, parse_ras_job, parse_ras_json, parse_ras_text
from .sources.lines import lone_cr_to_lf, maybe_nccl, nccl_only, rejoin_wrapped, strip_tool_prefixes, unglue_host
from .sources.records import (
    FileEnd,
    NcclChannels,
    NcclColl,
    NcclCommInfo,
    NcclConnection,
    NcclInit,
    NcclRec,
    NcclRing,
    NcclRingOrder,
    NcclTopologyRun,
    NcclTree,
    NcclTrees,
    Rec,
    TorchRec,
    UnreadLines,
)
from .sources.topo_xml import parse_topo_xml
from .sources.torch_log import parse_torch_lines, torch_line_facts

MAX_LINE = 64 * 1024
MAX_STRUCTURED_BYTES = 256 * 1024 * 1024  # JSON / pickle / XML are loaded whole: bounded
PARALLEL_MIN_BYTES = 32 * 1024 * 1024
KERNEL_MIN_BYTES = 4 * 1024 * 1024  # inputs this big use the compiled COLL reader when it is built (1 ms to load) ...
KERNEL_BUILD_MIN_BYTES = 48 * 1024 * 1024  # ... and this big build it first (once, about 10 s) if it is not
PROGRESS_MIN_BYTES = 64 * 1024 * 1024  # smaller inputs get no progress calls
BLOCK_BYTES = 16 * 1024 * 1024  # bulk COLL scan: bytes read and matched at a time
SMALL_LOG_BYTES = 2 * 1024 * 1024  # logs up to this size are parsed several at a time ...
GROUP_BYTES = 16 * 1024 * 1024  # ... in groups of about this many bytes: each group is a task of the worker pool,
# and per task costs (the pool's round trip, the reader's set-up) made 4 MB groups 13-23 % slower
GROUP_FILES = 256
# lines that only NCCL or PyTorch print: a head holding one is a log, whatever junk (NUL runs left by a
# crash, a binary blob, invalid UTF-8) surrounds it
# PyTorch and launcher output: a log holding such lines is read even when no line of it is one we model
TORCH_EVIDENCE = ("torch.distributed", "ProcessGroupNCCL", "ProcessGroupGloo", "torchrun", "Traceback (most recent",
                  "torch/distributed", "CUDA error", "NCCL error")
LOG_EVIDENCE = (b"NCCL INFO", b"NCCL WARN", b"ProcessGroupNCCL", b"torch.distributed", b"Traceback (most recent")


@dataclass
class Parsed:
    file: str  # name relative to the input root, used in evidence
    fmt: str
    records: list[Rec] = field(default_factory=list)
    problem: str | None = None
    size: int = 0
    end: FileEnd | None = None  # a text log's: where it ends against its NCCL lines (not one of its records)


def iter_lines(path: Path, max_line: int = MAX_LINE) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line; overlong lines are cut, never loaded whole; a CR that no LF
    follows ends a line (``iter_blocks``). Each text keeps its line end, as ``readline`` gives it."""
    for first, block, _ in iter_blocks(path, LINE_BLOCK_BYTES, max_line):
        pieces = block.split(b"\n")
        last = pieces.pop()  # after the last newline: empty, or the file's unterminated last line
        for i, raw in enumerate(pieces):  # an overlong line is cut at max_line, as readline(max_line) cut it
            raw = raw[:max_line] if len(raw) >= max_line else raw + b"\n"
            yield first + i, raw.decode("utf-8", "replace").replace("\x00", "")
        if last:
            yield first + len(pieces), last[:max_line].decode("utf-8", "replace").replace("\x00", "")


LINE_BLOCK_BYTES = 1 << 20  # iter_lines reads this much at a time


_NONPRINT = dict.fromkeys([*range(9), *range(14, 32), 0xFFFD])  # str.translate deletes these


def sniff(head: bytes, name: str) -> str:
    """Format of a file from its first bytes: pickle, json, jsonl, xml, ras, nccl_tests, env, log, binary."""
    if not head:
        return "empty"
    if head[:1] == b"\x80" and len(head) > 1 and head[1] <= 5:
        return "pickle"
    stripped = head.lstrip()
    nl = stripped.find(b"\n")
    first = (stripped[:nl] if nl >= 0 else stripped).strip()
    if first.startswith((b"{'", b"[{'")) and b"\n" in stripped.strip():
        pass  # a Python dict printed as a log's line (HF Trainer's "{'loss': 0.12, ...}"): JSON quotes keys with '"'
    elif stripped.startswith(b"{") or (stripped.startswith(b"[") and stripped[1:].lstrip()[:1] in (b"{", b"[", b'"', b"]")):
        if first.startswith(b"{") and first.endswith(b"}") and b"\n" in stripped.strip():
            try:
                json.loads(first)
                return "jsonl"
            except ValueError:
                pass
        return "json"
    if stripped.startswith(b"<system") or stripped.startswith(b"<graphs") or stripped.startswith(b"<?xml"):
        return "xml"
    if b"\x00" in head[:4096] and not any(e in head for e in LOG_EVIDENCE):
        return "binary"
    probe = head[:MARKER_PROBE]
    marked = _marker(probe if len(head) > MARKER_PROBE and COLL_MARK in probe else head)
    if marked is not None:
        return marked
    text = head.decode("utf-8", "replace")
    start = text[:8192]  # holds the first 50 lines whenever it holds 51 line breaks: no 64 KB split
    lines = [ln for ln in (start if start.count("\n") > 50 else text).splitlines()[:50] if ln.strip()]
    if lines and all(("=" in ln and ln.split("=", 1)[0].replace("_", "").isalnum()) for ln in lines[:20]):
        return "env"
    if any(e in head for e in LOG_EVIDENCE):
        return "log"
    sample = text[:4096]
    nonprint = len(sample) - len(sample.translate(_NONPRINT))
    if nonprint > 0.1 * min(len(text), 4096):
        return "binary"
    return "log"


MARKER_PROBE = 8192  # when the head's first 8 KB hold a COLL line, the RAS / nccl-tests headers are
COLL_MARK = b": opCount "  # searched there only: those print their headers first, and a log with COLL
# tracing from its start is neither; six searches of 64 KB cost 0.15 ms, most of sniffing a rank log


def _marker(head: bytes) -> str | None:
    """"ras" or "nccl_tests" by the headers those print (searched as bytes: an ASCII string is in the
    decoded text exactly when its bytes are in the raw ones), else None."""
    if b"SERVER PROTOCOL" in head or (b"Job summary" in head and b"Communicators" in head):
        return "ras"
    if (b"nccl-tests" in head or b"# nThread" in head or b"out-of-place" in head or b"ncclscope perf:" in head
            or (b"nThread " in head and b" nGpus " in head) or b"Out of bounds values" in head):
        return "nccl_tests"  # the last two: a paste whose '#' marks a renderer dropped
    return None


def iter_blocks(path: Path, block_bytes: int = BLOCK_BYTES,
                max_line: int = MAX_LINE) -> Iterator[tuple[int, bytes, np.ndarray | None]]:
    """(number of the first line, block of whole lines, offsets of its newlines or None) over a file,
    ``block_bytes`` at a time. The newlines, found anyway to count lines, spare the COLL reader a pass.

    Line numbers agree with ``iter_lines``: a line longer than ``max_line`` is cut there and counts as one.
    """
    with safe_io.open_regular(path) as f:  # no FIFO, device or link swapped in after the walk
        lineno = 1
        rest = b""
        skipping = False  # inside the tail of an overlong line
        while True:
            data = f.read(block_bytes)
            if data and b"\r" in data:  # CR-only line ends (tqdm redraws, old Mac text): LF, in place
                if data.endswith(b"\r"):
                    data += f.read(1)  # a CRLF split between two reads stays one line end
                crs = bytearray(data)
                lone_cr_to_lf(crs)
                data = bytes(crs)
            if not data:
                if rest and not skipping:
                    yield lineno, rest, None
                return
            if skipping:
                nl = data.find(b"\n")
                if nl < 0:
                    continue
                data, skipping = data[nl + 1:], False
            buf = rest + data if rest else data
            cut = buf.rfind(b"\n")
            if cut < 0:
                if len(buf) > max_line:
                    yield lineno, buf[:max_line] + b"\n", None
                    lineno += 1
                    rest, skipping = b"", True
                else:
                    rest = buf
                continue
            block, rest = buf[:cut + 1], buf[cut + 1:]
            if len(rest) > max_line:
                block += rest[:max_line] + b"\n"
                rest, skipping = b"", True
            newlines = newline_offsets(block)
            yield lineno, block, newlines
            lineno += len(newlines)


def newline_offsets(block: bytes | memoryview) -> np.ndarray:
    """Offsets of ``block``'s newlines in order, as ``np.flatnonzero(bytes == 10)`` gives them, in two thirds
    of its time on a log: the 8-byte words that hold a newline are found first (a log's lines are 100-250
    bytes, one word in 15-30), then the newlines inside those words alone. At 4.3 MB 0.53 -> 0.35 ms."""
    is_nl = np.frombuffer(block, dtype=np.uint8) == 10
    n8 = len(is_nl) - len(is_nl) % 8
    words = np.flatnonzero(is_nl[:n8].view(np.uint64) != 0)
    hits = np.flatnonzero(np.take(is_nl[:n8].reshape(-1, 8), words, axis=0))
    out = words[hits >> 3] * 8 + (hits & 7)
    tail = np.flatnonzero(is_nl[n8:])
    return np.concatenate((out, tail + n8)) if len(tail) else out


def parse_log(path: Path, name: str) -> tuple[list[Rec], FileEnd]:
    """A text log: NCCL lines go to the NCCL parser, the rest to the PyTorch/torchrun parser.

    COLL lines, nearly all of a long job's log, are taken a block at a time as columns
    (``scan_coll_block``); the batch is then cut at every other record so that records and
    COLL rows keep the file's order. Also the file's ``FileEnd``.
    """
    batches: list[NcclCollBatch] = []

    def others() -> Iterator[tuple[int, str]]:
        for first, block, newlines in iter_blocks(path):
            batch, rest = scan_coll_block(block, first, name, newlines=newlines)
            if batch is not None:
                batches.append(batch)
            yield from rest

    return _log_records(others(), batches, name)


def _log_records(lines: Iterable[tuple[int, str]], batches: list[NcclCollBatch],
                 name: str) -> tuple[list[Rec], FileEnd]:
    """Records of a log's lines that are not COLL rows, merged in line order with its COLL batches
    (``batches`` may fill while ``lines`` is consumed), and where the log ends against its NCCL lines."""
    out: list[Rec] = []
    unread = UnreadLines(name, 0, "", "nccl")  # NCCL-looking lines no parser took: counted, so that they are said
    torch_seen = UnreadLines(name, 0, "", "pytorch")  # PyTorch / launcher lines: said when none of them was read
    end = _End()

    def rest() -> Iterator[tuple[int, str]]:
        for lineno, text in rejoin_wrapped(lines, wrapped_join_known):
            end.last = lineno
            if maybe_nccl(text):  # 2.2 printed no "NCCL" word
                rec = parse_nccl_line(text, name, lineno)
                if rec is not None:
                    out.append(rec)
                    end.nccl = lineno
                    continue
                if nccl_only(text):
                    if "] NCCL " in text:  # behind an NCCL head ("[dev] NCCL INFO"): a line of NCCL's, not text naming it
                        unread.add(lineno, text)
                    end.nccl = lineno
                    continue
            if any(map(text.__contains__, TORCH_EVIDENCE)):  # no generator frame per word: 8 words a line
                torch_seen.add(lineno, text)
            if text and not text.isspace() and (len(text) > PREFIX_ONLY_MAX or strip_tool_prefixes(text)[1].strip()):
                end.text.append(lineno)  # a launcher's prefix alone ('nodeg18: ', '[default0]:') is no progress
            yield lineno, text

    for rec in parse_torch_lines(rest(), name):
        out.append(rec)
    if unread.count:
        out.append(unread)
    if torch_seen.count and not any(isinstance(r, TorchRec) for r in out):
        out.append(torch_seen)
    out.sort(key=lambda r: r.line)
    _unglue_hosts(out, batches)
    out = fold_topology(out, batches)
    done = end.record(name, batches)
    if batches:
        out = _interleave(out, batches)
    return out, done


PREFIX_ONLY_MAX = 48  # a line this short may be a launcher's prefix with nothing behind it
TEXT_AFTER_MAX = 64  # FileEnd.text_after counts the application's lines after the last NCCL line up to this


class _End:
    """Where a log's lines end against its NCCL lines, as they go by: its last line, the last NCCL
    line among them (a record or an NCCL line no parser took), the line numbers of the last
    ``TEXT_AFTER_MAX`` non-blank lines that are not NCCL's (bounded, whatever the log's size)."""

    __slots__ = ("last", "nccl", "text")

    def __init__(self) -> None:
        self.last = 0
        self.nccl = 0
        self.text: collections.deque[int] = collections.deque(maxlen=TEXT_AFTER_MAX)

    def record(self, name: str, batches: list[NcclCollBatch]) -> FileEnd:
        """The file's ``FileEnd``: its COLL rows (``batches``, in line order) count as NCCL lines."""
        last, nccl = self.last, self.nccl
        for b in batches:
            if len(b):
                last, nccl = max(last, int(b.lines[-1])), max(nccl, int(b.lines[-1]))
        return FileEnd(name, last, "", nccl, sum(1 for ln in self.text if ln > nccl))


def wrapped_join_known(first: str, joined: str) -> bool:
    """Whether the pieces of a hard-wrapped line, joined, are a line the parsers know: an NCCL line that
    reads more than its first piece alone (cut at the wrap, that lost the rest of its message), or a
    PyTorch line that reads at least the facts its first piece alone does (a watchdog's exception whose
    quoted timeout was cut at the wrap)."""
    if join_adds(first, joined):  # a complete NCCL line and the short line after it are no wrap
        return True
    facts = torch_line_facts(joined)
    return facts > 0 and facts >= torch_line_facts(first)


def _unglue_hosts(recs: list[Rec], batches: list[NcclCollBatch]) -> None:
    """Another process's output glued in front of an NCCL line makes its host ``0.00009vm`` where the
    process's other lines say ``vm``: such hosts are put right, in place, for one file's records."""
    hosts: dict[int, set[str]] = {}
    for r in recs:
        if isinstance(r, NcclRec):
            hosts.setdefault(r.pid, set()).add(r.host)
    for b in batches:
        for h, pid in b.procs:
            hosts.setdefault(pid, set()).add(h)
    fix = {(h, pid): unglue_host(h, hs) for pid, hs in hosts.items() if len(hs) > 1 for h in hs}
    fix = {k: v for k, v in fix.items() if v != k[0]}
    if not fix:
        return
    for r in recs:
        if isinstance(r, NcclRec) and (r.host, r.pid) in fix:
            r.host = fix[(r.host, r.pid)]
    for b in batches:
        b.procs = [(fix.get((h, pid), h), pid) for h, pid in b.procs]
        if (b.host, b.pid) in fix:
            b.host = fix[(b.host, b.pid)]


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
    reused once this returns: nothing returned refers to it."""
    out: list[Parsed] = []
    nl = newline_offsets(joined)
    last = np.searchsorted(nl, ends - 1)  # index of each file's last newline
    length = np.diff(nl, prepend=-1) - 1  # every line's length, its newline left out
    too_long = np.maximum.reduceat(length, np.concatenate([[0], last[:-1] + 1])) > MAX_LINE
    if too_long.any():
        out += [parse_file(path, name) for (path, name, _), bad in zip(items, too_long.tolist()) if bad]
        starts = np.concatenate([[0], ends[:-1]])
        rest = [(path, name, bytes(joined[int(a):int(a) + size])) for (path, name, size), a, bad in
                zip(items, starts, too_long.tolist()) if not bad]
        return out + (parse_small_logs(rest) if rest else [])
    block = joined if coll_kernel.ready() is not None else bytes(joined)  # the numpy reader wants bytes
    batch, rest_lines = scan_coll_block(block, 1, "", newlines=nl)
    del block, joined, nl
    firsts = np.concatenate([[0], last + 1])  # lines before each file
    rest_numbers = np.array([ln for ln, _ in rest_lines], dtype=np.int64)
    for i, (_, name, size) in enumerate(items):
        before = int(firsts[i])
        lo_line, hi_line = before + 1, int(firsts[i + 1]) + 1
        mine: list[NcclCollBatch] = []
        if batch is not None:
            lo, hi = np.searchsorted(batch.lines, [lo_line, hi_line]).tolist()
            if hi > lo:
                mine.append(batch.for_file(lo, hi, name, before))
        r_lo, r_hi = np.searchsorted(rest_numbers, [lo_line, hi_line]).tolist()
        lines = [(ln - before, text) for ln, text in rest_lines[r_lo:r_hi]]
        p = Parsed(name, "log", size=size)
        try:
            p.records, p.end = _log_records(lines, mine, name)
        except (ValueError, RecursionError) as e:
            p.records, p.problem = [], f"{name}: {e}"
        out.append(p)
    return out


# records that move a process's current communicator in ``model_build.gather`` (an Init or comm-info line, a
# COLL line of its own) and those that read it (ring, tree, channel and connection lines): a COLL batch is cut
# at them so that gather sees them between its rows; any other record reads and moves nothing a batch does
_MOVES_CURRENT = (NcclInit, NcclCommInfo, NcclColl)
_READS_CURRENT = (NcclConnection, NcclRing, NcclRingOrder, NcclTrees, NcclTree, NcclChannels, NcclTopologyRun)


def _interleave(recs: list[Rec], batches: list[NcclCollBatch]) -> list[Rec]:
    """Cut each batch at the lines of the records whose place among its rows matters to the model, then
    merge everything by line. A batch of one process and one communicator (one file's rows, the usual
    case) leaves its process's current communicator where it was at each of its rows, so only the
    records that move it cut it; a record that reads or moves nothing a batch does (an event, a setting,
    a PyTorch line) is merged after the batch's rows instead of cutting it (at 4,096 ranks, the channel
    lines NCCL prints after each rank's first collective cut every log's batch in two)."""
    moves = np.array([r.line for r in recs if isinstance(r, _MOVES_CURRENT)], dtype=np.int64)
    both = np.array([r.line for r in recs if isinstance(r, (*_MOVES_CURRENT, *_READS_CURRENT))], dtype=np.int64)
    pieces: list[Rec] = []
    for b in batches:
        marks = moves if len(b.procs) == 1 and len(b.comms) == 1 else both
        inside = marks[(marks > b.lines[0]) & (marks < b.lines[-1])]
        if not len(inside):
            pieces.append(b)
            continue
        cuts = [0, *np.searchsorted(b.lines, inside).tolist(), len(b)]
        for lo, hi in zip(cuts, cuts[1:]):
            if hi > lo:
                pieces.append(b.take(lo, hi))
    merged = recs + pieces
    merged.sort(key=lambda r: r.line)
    return merged


def _read_bounded(path: Path) -> bytes:
    """The whole file, read through ``safe_io`` and never more than the limit (whatever its size claims)."""
    try:
        return safe_io.read_capped(path, MAX_STRUCTURED_BYTES)
    except safe_io.TooLarge:
        raise ValueError(f"over the {MAX_STRUCTURED_BYTES} byte limit for structured files") from None


def parse_file(path: Path, name: str) -> Parsed:
    """Parse one file by its content. Never raises: trouble is reported in ``problem``."""
    try:
        with safe_io.open_regular(path) as f:  # regular files only, checked on the open descriptor
            size = os.fstat(f.fileno()).st_size
            head = f.read(65536)
    except OSError as e:
        return Parsed(name, "unreadable", problem=f"{name}: cannot read ({e.strerror or e})")
    fmt = sniff(head, name)
    p = Parsed(name, fmt, size=size)
    try:
        if fmt == "pickle":
            p.records = [parse_fr_pickle(_read_bounded(path), name)]
        elif fmt == "json":
            data = _read_bounded(path)
            obj = json.loads(data)
            if looks_like_ras_json(obj):
                p.fmt, p.records = "ras", list(parse_ras_json(obj, name))
            elif isinstance(obj, dict) and "results" in obj and isinstance(obj["results"], list):
                p.fmt, p.records = "nccl_tests", list(parse_nccl_tests_json(obj, name))
            elif isinstance(obj, dict) and obj.get("tool") == "ncclscope perf":
                p.fmt = "perf_json"  # the same sweep as perf.txt, which is read as a table
            elif isinstance(obj, dict) and ("entries" in obj or "pg_status" in obj):
                p.fmt, p.records = "flight_recorder", [parse_fr_json(data, name)]
            else:
                p.problem = f"{name}: JSON that is none of Flight Recorder, RAS or nccl-tests; skipped"
        elif fmt == "jsonl":
            p.records = list(parse_jsonl(iter_lines(path), name))
        elif fmt == "xml":
            p.records = [parse_topo_xml(_read_bounded(path), name)]
        elif fmt == "ras":
            text = _read_bounded(path).decode("utf-8", "replace")
            p.records = [*parse_ras_text(text, name), *parse_ras_job(text, name)]
            if any(e in head for e in LOG_EVIDENCE):  # the report pasted before the ranks' own log lines
                recs, p.end = parse_log(path, name)
                p.records += recs
        elif fmt == "nccl_tests":
            p.records = list(parse_nccl_tests_lines(iter_lines(path), name))
        elif fmt == "env":
            p.records = list(parse_env_lines(iter_lines(path), name))
        elif fmt == "log":
            p.records, p.end = parse_log(path, name)
        elif fmt == "binary":
            p.problem = f"{name}: binary content, not a log, dump or table; skipped"
    except UnsafePickleError as e:
        p.fmt, p.records, p.problem = "refused", [], f"{name}: {e}; nothing in it was run"
    except (ValueError, RecursionError) as e:
        p.records, p.problem = [], f"{name}: {e}"
    except MemoryError:
        p.records, p.problem = [], f"{name}: too large to load"
    if p.fmt == "pickle" and p.records:
        p.fmt = "flight_recorder"
    return p


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def _parse_job(group: list[tuple[str, str, int]]) -> list[Parsed]:
    """Parse a group of files (path, name, size): small logs together, anything else alone."""
    with gc_paused():
        return _parse_group(group)


def _parse_job_to_file(group: list[tuple[str, str, int]], dest: str) -> list[int] | bytes:
    """``_parse_job`` in a worker, its result written to the new file ``dest`` as a protocol-5 pickle
    with its numpy columns out of band (``_write_result``); returns the layout ``_read_result`` needs.
    Sent through the pool instead, a result is pickled again by the pool, pushed through a pipe 64 KB
    at a time (each piece waiting for the parent's result thread to get the GIL while the parent
    imports or unpickles: the workers sat blocked for half the parse at 4,096 ranks) and copied
    twice more on the way in. Only this process's own worker wrote the file, in this process's
    private folder. Where the file cannot be written (a small ``/dev/shm``, such as a container's
    64 MB: the parent's mappings hold every result until the model has it), the result comes back
    the old way, as one protocol-5 pickle through the pool."""
    parsed = _parse_job(group)
    try:
        return _write_result(parsed, dest)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(dest)
        return pickle.dumps(parsed, protocol=5)


RESULT_ALIGN = 64  # each out-of-band column starts at a multiple of this in a result file


def _write_result(parsed: list[Parsed], dest: str) -> list[int]:
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


def _read_result(path: str, layout: list[int]) -> list[Parsed]:
    """A worker's result file (``_write_result``), mapped copy-on-write and removed at once: the
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


def _parse_group(group: list[tuple[str, str, int]]) -> list[Parsed]:
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
    return out


_READ_BUFFER: list[bytearray] = [bytearray()]  # a process's buffer for groups of small logs, kept between groups


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
        try:
            with safe_io.open_regular(path) as f:
                n = f.readinto(view[at:at + size]) or 0
        except OSError:
            n = 0
        if not n or sniff(bytes(view[at:at + min(n, 65536)]), name) != "log":
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


def _worker_init(parent: int) -> None:
    """A parse worker keeps the memory it frees (``malloc.keep_freed_memory``): every group of files
    is read, joined and scanned into fresh buffers of megabytes. At 4,096 rank logs that took the
    workers' system time from 4.5 s to 0.4 s. And it ends with ``parent``, the analysing process."""
    _die_with_parent(parent)
    keep_freed_memory()


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel sends this worker SIGKILL when the process that forked it ends, however it ends
    (a scheduler's SIGTERM or SIGKILL left the workers waiting on the pool's queue for ever, orphaned)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError, TypeError):
        return  # not Linux: the pool's own shutdown still ends the workers on a normal exit
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)


def _groups(files: list[tuple[str, str, int]]) -> list[list[tuple[str, str, int]]]:
    """Biggest first; files up to ``SMALL_LOG_BYTES`` packed into groups of about ``GROUP_BYTES``."""
    groups: list[list[tuple[str, str, int]]] = []
    current: list[tuple[str, str, int]] = []
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


class IngestJob:
    """Files being parsed: ``start_ingest`` lists and groups them and starts the worker pool at once;
    ``result()`` collects the parsed files. Between the two the caller may do other work (``analyze``
    imports pandas and the detectors, 0.25-0.3 s, while the workers parse). Use it as a context
    manager, or call ``result()``: either closes the pool, the temporary folder of extracted
    archives and the garbage-collector pause."""

    def __init__(self, paths: list[Path], progress: Callable[[int, int], None] | None,
                 workers: int | None, note: Callable[[str], None] | None) -> None:
        self._stack = contextlib.ExitStack()
        self._pool: ProcessPoolExecutor | None = None
        self._futures: list[Future[list[int] | bytes]] = []
        self._results = ""
        with self._stack as stack:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="ncclscope-"))
            stack.enter_context(gc_paused())
            self.skipped: list[tuple[str, str]] = []
            files = collect_files(paths, Path(tmp), self.skipped)
            if not files:
                raise InputError("no files found in " + ", ".join(str(p) for p in paths)
                                 + "".join(f"; {name}: {why}" for name, why in self.skipped[:5]))
            sized = [(str(p), name, _size(p)) for p, name in files]
            self.total = sum(f[2] for f in sized)
            self.groups = _groups(sized)
            self.report = progress if progress is not None and self.total >= PROGRESS_MIN_BYTES else None
            if self.total >= KERNEL_MIN_BYTES:  # before the workers fork: they inherit it
                coll_kernel.arm(note=note, build=self.total >= KERNEL_BUILD_MIN_BYTES)
            nworkers = pool_size(self.total, len(self.groups), workers)
            if nworkers > 1:
                self._results = _results_dir(stack, tmp)
                self._pool = ProcessPoolExecutor(max_workers=nworkers, mp_context=_FORK, initializer=_worker_init, initargs=(os.getpid(),))
                self._futures = [self._pool.submit(_parse_job_to_file, g, self._result_path(i))
                                 for i, g in enumerate(self.groups)]  # all forked here
            self._stack = stack.pop_all()  # started: closed by result() or close()

    def result(self) -> list[Parsed]:
        """The parsed files, sorted by name. Raises InputError when nothing at all can be read."""
        results: list[Parsed] = []
        done = 0
        try:
            if self._pool is not None:
                futures, self._futures = self._futures, []
                for i, group in enumerate(self.groups):
                    got = futures.pop(0).result()  # nothing keeps a group's pickle, where one came, once it is read
                    # the layout of the group's file, or (it could not be written) the pickle itself
                    results.extend(pickle.loads(got) if isinstance(got, bytes) else _read_result(self._result_path(i), got))
                    del got
                    done += sum(f[2] for f in group)
                    if self.report:
                        self.report(done, self.total)
            else:
                for group in self.groups:
                    results.extend(_parse_job(group))
                    done += sum(f[2] for f in group)
                    if self.report:
                        self.report(done, self.total)
                _READ_BUFFER[0] = bytearray()  # a long-lived process (the dashboard, the live monitor) keeps no 16 MB
        finally:
            self.close()
        results += [Parsed(name, "skipped", problem=f"{name}: {why}; skipped") for name, why in self.skipped]
        results.sort(key=lambda r: r.file)
        if not any(r.records for r in results):
            reasons = "; ".join(r.problem for r in results if r.problem) or "no NCCL, PyTorch or Flight Recorder content"
            raise InputError(f"nothing readable in the input: {reasons}")
        return results

    @property
    def parallel(self) -> bool:
        """Whether worker processes parse (this process is free until ``result()``)."""
        return self._pool is not None

    def _result_path(self, i: int) -> str:
        return os.path.join(self._results, f"{i}.pickle")

    def close(self) -> None:
        """Stop the pool (work not yet started is dropped) and wait for its workers to exit: one left
        waiting for work after this process ends would live on, holding this process's stdout open;
        then the temporary folder and the collector pause."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._stack.close()

    def __enter__(self) -> IngestJob:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


SHARED_MEMORY_DIR = "/dev/shm"  # parse workers' result files go here when it is a folder (memory, no disk)


def _results_dir(stack: contextlib.ExitStack, fallback: str) -> str:
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


# fork, where there is one: a worker starts as a copy of this process (numpy and the parsers already
# loaded: about a millisecond), where a forkserver or spawn worker imports them again (0.1 s or more)
_FORK = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None


def pool_size(total: int, ngroups: int, workers: int | None = None) -> int:
    """Worker processes for ``total`` bytes in ``ngroups`` groups; 1 means none (parse in this
    process): below ``PARALLEL_MIN_BYTES`` the whole parse takes less than starting a pool and
    sending the records back, and one group has nothing to share out. Else ``workers``, by default
    one per core and group."""
    if total < PARALLEL_MIN_BYTES or ngroups < 2:
        return 1
    return workers if workers is not None else min(ngroups, os.cpu_count() or 1)


def start_ingest(paths: list[Path], progress: Callable[[int, int], None] | None = None,
                 workers: int | None = None, note: Callable[[str], None] | None = None) -> IngestJob:
    """List and group the files under ``paths`` and start parsing them (``IngestJob``); raises
    InputError when there are none. The arguments are those of ``ingest``."""
    return IngestJob(paths, progress, workers, note)


def ingest(paths: list[Path], progress: Callable[[int, int], None] | None = None,
           workers: int | None = None, note: Callable[[str], None] | None = None) -> list[Parsed]:
    """Parse every file under ``paths``. Raises InputError when nothing at all can be read.

    ``progress(bytes done, bytes in all)`` is called after each file, only when the input is at
    least ``PROGRESS_MIN_BYTES``: a small input is parsed before a bar would be seen. ``note(text)``
    hears of one-off delays (the first build of the compiled reader).
    """
    return start_ingest(paths, progress, workers, note).result()
