"""What an input file is and how it is read: its format told by its first bytes (``sniff``), who wrote it
told by its name (``origin_of``), and one table from format to reader (``READERS``) that ``parse_file``
goes through. Structured files (JSON, pickle, XML) are read whole and bounded; text line by line.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import safe_io
from ..model import Format, Origin
from ..safe_pickle import UnsafePickleError
from ..sources.env_file import parse_env_lines
from ..sources.flight_recorder import parse_fr_json, parse_fr_pickle
from ..sources.hook_jsonl import parse_jsonl
from ..sources.json_log import looks_like_json_log, message_lines
from ..sources.inspector import (
    InspectorReader,
    looks_like_inspector,
    looks_like_inspector_prom,
    parse_inspector_prom,
)
from ..sources.nccl_tests import parse_nccl_tests_json, parse_nccl_tests_lines
from ..sources.ras import (
    looks_like_ras_json, parse_ras_job, parse_ras_json, parse_ras_replies, parse_ras_text, parse_ras_version,
    ras_json_version,
)
from ..sources.records import FileEnd, Rec
from ..sources.topo_xml import parse_topo_xml
from .assemble import log_records, parse_log
from .blocks import iter_lines, read_bounded

__all__ = ["Format", "Origin", "Parsed", "READERS", "LOG_EVIDENCE", "origin_of", "parse_file", "sniff"]

HEAD_BYTES = 65536  # the first bytes of a file, read to tell its format
# lines that only NCCL or PyTorch print: a head holding one is a log, whatever junk (NUL runs left by a
# crash, a binary blob, invalid UTF-8) surrounds it; and those of the tools read beside them (sources.tool_lines): the
# NVIDIA driver's kernel lines, a Python stack dump, UCX's and UCC's errors, Open MPI's runtime
LOG_EVIDENCE = (b"NCCL INFO", b"NCCL WARN", b"ProcessGroupNCCL", b"torch.distributed", b"Traceback (most recent",
                b"NVRM: ", b"(most recent call first)", b"UCX  ERROR", b"TL_SHM ERROR", b"RTE was unable to reliably",
                b"RTE has lost communication")
HOOK_MARK = "ncclscope-rank"  # the hook's files: ncclscope-rank<N>.jsonl (analyzer/hook), maybe renamed node3-...
RUN_PREFIX = "ncclscope-"  # what ``ncclscope run`` names: its run folders (ncclscope-runs/) and files


def origin_of(name: str) -> Origin:
    """Who wrote the file named ``name`` (relative to the input root): the hook (its file's name holds
    ``ncclscope-rank``), ``ncclscope run`` (a part of its path starts with ``ncclscope-``:
    ``ncclscope-runs/<date>/stdout.log``), else the job. The one place a file's name decides anything."""
    if HOOK_MARK in name.rpartition("/")[2]:
        return Origin.HOOK
    if name.startswith(RUN_PREFIX) or "/" + RUN_PREFIX in name:
        return Origin.RUN
    return Origin.INPUT


@dataclass
class Parsed:
    """One input file, parsed: its records, or why there are none. ``origin`` follows from ``file``."""

    file: str  # name relative to the input root, used in evidence
    fmt: Format
    records: list[Rec] = field(default_factory=list)
    problem: str | None = None
    size: int = 0
    end: FileEnd | None = None  # a text log's: where it ends against its NCCL lines (not one of its records)
    origin: Origin = field(init=False)

    def __post_init__(self) -> None:
        self.origin = origin_of(self.file)


_NONPRINT = dict.fromkeys([*range(9), *range(14, 32), 0xFFFD])  # str.translate deletes these


def sniff(head: bytes, name: str) -> Format:
    """Format of a file from its first bytes: pickle, json, jsonl, inspector, xml, ras, nccl_tests, env,
    inspector_prom, log, binary."""
    if not head:
        return Format.EMPTY
    if head[:1] == b"\x80" and len(head) > 1 and head[1] <= 5:
        return Format.PICKLE
    stripped = head.lstrip()
    nl = stripped.find(b"\n")
    first = (stripped[:nl] if nl >= 0 else stripped).strip()
    if first.startswith((b"{'", b"[{'")) and b"\n" in stripped.strip():
        pass  # a Python dict printed as a log's line (HF Trainer's "{'loss': 0.12, ...}"): JSON quotes keys with '"'
    elif stripped.startswith(b"{") or (stripped.startswith(b"[") and stripped[1:].lstrip()[:1] in (b"{", b"[", b'"', b"]")):
        if looks_like_inspector(first, head):
            return Format.INSPECTOR
        if first.startswith(b"{") and first.endswith(b"}") and b"\n" in stripped.strip():
            try:
                json.loads(first)
                return Format.JSONL
            except ValueError:
                pass
        return Format.JSON
    if stripped.startswith(b"<system") or stripped.startswith(b"<graphs") or stripped.startswith(b"<?xml"):
        return Format.XML
    if b"\x00" in head[:4096] and not any(e in head for e in LOG_EVIDENCE):
        return Format.BINARY
    if looks_like_inspector_prom(first):
        return Format.INSPECTOR_PROM
    probe = head[:MARKER_PROBE]
    marked = _marker(probe if len(head) > MARKER_PROBE and COLL_MARK in probe else head)
    if marked is not None:
        return marked
    text = None if _first_line_not_env(head) else head.decode("utf-8", "replace")
    if text is not None:
        start = text[:8192]  # holds the first 50 lines whenever it holds 51 line breaks: no 64 KB split
        lines = [ln for ln in (start if start.count("\n") > 50 else text).splitlines()[:50] if ln.strip()]
        if lines and all(_env_line(ln) for ln in lines[:20]):
            return Format.ENV
    if any(e in head for e in LOG_EVIDENCE):
        return Format.LOG
    if text is None:
        text = head.decode("utf-8", "replace")
    sample = text[:4096]
    nonprint = len(sample) - len(sample.translate(_NONPRINT))
    if nonprint > 0.1 * min(len(text), 4096):
        return Format.BINARY
    return Format.LOG


MARKER_PROBE = 8192  # when the head's first 8 KB hold a COLL line, the RAS / nccl-tests headers are
COLL_MARK = b": opCount "  # searched there only: those print their headers first, and a log with COLL
# tracing from its start is neither; six searches of 64 KB cost 0.15 ms, most of sniffing a rank log


def _env_line(line: str) -> bool:
    """A ``NAME=value`` line of an environment dump (``ENV`` needs the first 20 non-blank lines to be such)."""
    return "=" in line and line.split("=", 1)[0].replace("_", "").isalnum()


ENV_PROBE = 1024  # bytes decoded to find a head's first non-blank line


def _first_line_not_env(head: bytes) -> bool:
    """True when the first non-blank line of ``head`` ends within its first ``ENV_PROBE`` bytes and is no
    ``NAME=value`` line: then ``sniff``'s ENV test fails on that line whatever follows, and the 64 KB head is not
    decoded for it (a rank log's sniff: 25 of its 90 us). False when that cannot be told from so few bytes (the
    whole test runs). Line breaks are ``str.splitlines``' own; the probe's last piece may be cut, so it is not
    taken."""
    pieces = head[:ENV_PROBE].decode("utf-8", "replace").splitlines()
    for line in pieces[:-1]:
        if line.strip():
            return not _env_line(line)
    return False


def _marker(head: bytes) -> Format | None:
    """``RAS`` or ``NCCL_TESTS`` by the headers those print (searched as bytes: an ASCII string is in the
    decoded text exactly when its bytes are in the raw ones), else None."""
    if b"SERVER PROTOCOL" in head or (b"Job summary" in head and b"Communicators" in head):
        return Format.RAS
    if (b"nccl-tests version" in head or b"# nThread" in head or b"out-of-place" in head or b"ncclscope perf:" in head
            or (b"nThread " in head and b" nGpus " in head) or b"Out of bounds values" in head
            or b'"nccl-tests structured output"' in head):
        return Format.NCCL_TESTS  # the two before the last: a paste whose '#' marks a renderer dropped; the last: --json
    return None


# A reader fills ``p`` (records, and where it says so its format, end or problem) from the file at ``path``,
# whose first bytes are ``head``; it may raise ValueError, RecursionError, MemoryError or UnsafePickleError,
# which ``parse_file`` turns into the file's problem. A format with no reader has nothing to read (empty).
Reader = Callable[[Parsed, Path, bytes], None]


def _read_pickle(p: Parsed, path: Path, head: bytes) -> None:
    p.records = [parse_fr_pickle(read_bounded(path), p.file)]


def _read_json(p: Parsed, path: Path, head: bytes) -> None:
    """A JSON file is what its keys say: a RAS report, nccl-tests results, ``ncclscope perf``'s sweep or a
    Flight Recorder dump."""
    name = p.file
    data = read_bounded(path)
    obj = json.loads(data)
    if looks_like_ras_json(obj):
        p.fmt, p.records = Format.RAS, [*parse_ras_json(obj, name), *ras_json_version(obj, name)]
    elif isinstance(obj, dict) and "results" in obj and isinstance(obj["results"], list):
        p.fmt, p.records = Format.NCCL_TESTS, list(parse_nccl_tests_json(obj, name))
    elif isinstance(obj, dict) and obj.get("tool") == "ncclscope perf":
        p.fmt = Format.PERF_JSON  # the same sweep as perf.txt, which is read as a table
    elif isinstance(obj, dict) and ("entries" in obj or "pg_status" in obj):
        p.fmt, p.records = Format.FLIGHT_RECORDER, [parse_fr_json(data, name)]
    else:
        p.problem = f"{name}: JSON that is none of Flight Recorder, RAS or nccl-tests; skipped"


def _read_jsonl(p: Parsed, path: Path, head: bytes) -> None:
    """The hook's records, the completion hook's; else a log written as JSON records (``sources.json_log``), read as
    the console its messages hold."""
    first = head.decode("utf-8", "replace").splitlines()[:3]
    if looks_like_json_log(first):
        p.fmt = Format.LOG
        p.records, p.end = log_records(message_lines(iter_lines(path)), [], p.file)
        return
    p.records = list(parse_jsonl(iter_lines(path), p.file))


def _read_inspector(p: Parsed, path: Path, head: bytes) -> None:
    reader = InspectorReader(p.file)
    p.records = list(reader.read(iter_lines(path)))
    if reader.skipped and reader.first_skipped is not None:
        line, text = reader.first_skipped
        p.problem = (f"{p.file}: {reader.skipped} line{'s' if reader.skipped > 1 else ''} that are no Inspector record "
                     f"(cut, damaged, or a 4.3 record no dump_stats marker accounts for), skipped; the first, line {line}: "
                     f"{text[:120]}")


def _read_inspector_prom(p: Parsed, path: Path, head: bytes) -> None:
    p.records = list(parse_inspector_prom(iter_lines(path), p.file))


def _read_xml(p: Parsed, path: Path, head: bytes) -> None:
    p.records = [parse_topo_xml(read_bounded(path), p.file)]


def _read_ras(p: Parsed, path: Path, head: bytes) -> None:
    text = read_bounded(path).decode("utf-8", "replace")
    p.records = [*parse_ras_text(text, p.file), *parse_ras_job(text, p.file), *parse_ras_replies(text, p.file)]
    if any(e in head for e in LOG_EVIDENCE):  # the report pasted before the ranks' own log lines
        recs, p.end = parse_log(path, p.file)
        p.records += recs
    else:  # the report alone: its version line is the job's NCCL (the log reader reads it where it runs)
        p.records += parse_ras_version(text, p.file)


def _read_nccl_tests(p: Parsed, path: Path, head: bytes) -> None:
    p.records = list(parse_nccl_tests_lines(iter_lines(path), p.file))


def _read_env(p: Parsed, path: Path, head: bytes) -> None:
    p.records = list(parse_env_lines(iter_lines(path), p.file))


def _read_log(p: Parsed, path: Path, head: bytes) -> None:
    p.records, p.end = parse_log(path, p.file)


def _read_binary(p: Parsed, path: Path, head: bytes) -> None:
    p.problem = f"{p.file}: binary content, not a log, dump or table; skipped"


READERS: dict[Format, Reader] = {
    Format.PICKLE: _read_pickle,
    Format.JSON: _read_json,
    Format.JSONL: _read_jsonl,
    Format.INSPECTOR: _read_inspector,
    Format.INSPECTOR_PROM: _read_inspector_prom,
    Format.XML: _read_xml,
    Format.RAS: _read_ras,
    Format.NCCL_TESTS: _read_nccl_tests,
    Format.ENV: _read_env,
    Format.LOG: _read_log,
    Format.BINARY: _read_binary,
}


def parse_file(path: Path, name: str) -> Parsed:
    """Parse one file by its content. Never raises: trouble is reported in ``problem``."""
    try:
        with safe_io.open_regular(path) as f:  # regular files only, checked on the open descriptor
            size = os.fstat(f.fileno()).st_size
            head = f.read(HEAD_BYTES)
    except OSError as e:
        return Parsed(name, Format.UNREADABLE, problem=f"{name}: cannot read ({e.strerror or e})")
    p = Parsed(name, sniff(head, name), size=size)
    reader = READERS.get(p.fmt)
    try:
        if reader is not None:
            reader(p, path, head)
    except UnsafePickleError as e:
        p.fmt, p.records, p.problem = Format.REFUSED, [], f"{name}: {e}; nothing in it was run"
    except (ValueError, RecursionError) as e:
        p.records, p.problem = [], f"{name}: {e}"
    except MemoryError:
        p.records, p.problem = [], f"{name}: too large to load"
    if p.fmt is Format.PICKLE and p.records:
        p.fmt = Format.FLIGHT_RECORDER
    return p
