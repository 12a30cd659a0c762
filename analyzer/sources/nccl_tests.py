"""nccl-tests output (``all_reduce_perf`` and friends): the table rows and the ``-J`` JSON.

Row: ``size count type redop root  time algbw busbw #wrong  time algbw busbw #wrong`` (out of
place, then in place). ``ncclscope perf`` prints the same layout, so it is read back here too.
A run with ``NCCL_DEBUG=INFO`` interleaves NCCL's lines with the table: those are read as NCCL lines.

What the benchmark's bandwidth is judged against (``metrics.link_floor``) needs two facts the
connection records drop: whether a network channel uses GPU Direct RDMA (``via NET/IB/0/GDRDMA`` or
plain ``via NET/IB/0``), kept as one ``NcclNet(kind="gdr", value=<the transport as printed>)`` per
process and transport, and the GPU of each rank, which ``device_gpu`` reads from its device line.
"""
from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterable, Iterator

from .lines import MAX_PREFIXES, MPI_STAMP_RE, MPI_TAG_RE, TOOL_PREFIX_RE, prefix_rank

STAMP_DAYS = frozenset({"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"})
from .nccl_log import parse_nccl_line
from .records import (
    DistError,
    ExitCode,
    NcclConnection,
    NcclNet,
    NcclRec,
    NcclTestsRow,
    NcclVersion,
    Rec,
    TestsTableHeader,
    WorldSize,
)
from .launcher_log import launch_failure
from .torch_log import TEST_FAILURE_RE, HeapWatch, NativeWatch, RankTagged, mpi_exit

ROW_RE = re.compile(  # no root before 2.x; no redop in the oldest tables of the gather/copy tests
    r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?:(?P<redop>[A-Za-z]\w*)\s+)?(?:(?P<root>-?\d+)\s+)?"
    r"(?P<t1>[\d.]+)\s+(?P<a1>[\d.]+)\s+(?P<b1>[\d.]+)\s+(?P<w1>\S+)"
    r"(?:\s+(?P<t2>[\d.]+)\s+(?P<a2>[\d.]+)\s+(?P<b2>[\d.]+)\s+(?P<w2>\S+))?\s*$"
)
TEST_RE = re.compile(r"Collective test starting: (\w+)|^# (\w+_perf)\b|ncclscope perf: (\w+)")
NRANKS_RE = re.compile(r"nranks[= ](\d+)|nGpus (\d+)")
RANK_DEV_RE = re.compile(r"^#\s+Rank\s+\d+ ")
OOB_OK_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*0\s+OK\b")  # the run's last check passed: it ends here
# ... or failed: values out of bounds (the results were wrong on some rank; the benchmark exits 1 after its summary)
OOB_FAILED_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d{1,15})\s+FAILED\b")
# "#  Rank  3 Group  0 Pid 4121 on node-b2 device  3 [0x4e] NVIDIA A100" (no Group before 2.13)
DEVICE_LINE_RE = re.compile(r"^#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+(?P<pid>\d{1,10})\s+on\s+(?P<host>[^\s:]{1,255})\s")
# the GPU after the device's bus id: "device  0 [0x81] NVIDIA A100-PCIE-40GB", "[0000:01:00] NVIDIA RTX PRO 6000 ..."
DEVICE_GPU_RE = re.compile(r"\sdevice\s+\d{1,4}\s+\[[0-9A-Fa-fx:.]{1,20}\]\s+(?P<gpu>\S[^\r\n]{0,120}?)\s*$")
VIA_RE = re.compile(r" via (NET/\S{1,100})")  # the network transport as printed, with its /GDRDMA flag if any
# "# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903": the NCCL the benchmark ran with, as a code
LIBRARY_RE = re.compile(r"^#\s*nccl-tests version \S{1,20}\s+nccl-headers=\d{1,6}\s+nccl-library=(?P<code>\d{4,6})\b")
# A table pasted through a renderer loses its "#" marks, or comes quoted ("> "): the lines nccl-tests prints
# behind "#", known by their own words, get it back (rows never start with a word, NCCL lines never with these)
QUOTE_RE = re.compile(r"^\s*(?:>[ \t]?)+")
HASHLESS_RE = re.compile(
    r"^\s*(?:nThread\s+\d|Using devices\b|Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s|Out of bounds values\s*:"
    r"|Avg bus bandwidth\s*:|size\s+count\s+type\b|\(B\)\s+\(elements\)|out-of-place\s+in-place\b"
    r"|nccl-tests version\s|Collective test starting:|\w+_perf\b)")
# mpirun --tag-output's "[1,0]<stdout>:" (horovodrun's "[0]<stdout>:") before each line of the benchmark's output:
# taken off for the table and its "#" lines (NCCL's lines keep it: their parser reads the rank from it)
MAX_GDR_SEEN = 4096  # (process, transport) pairs remembered per file: nothing from the input sizes it


# the result table's column line, "#       size         count    type   redop    root     time   algbw   busbw ..."
COLUMNS_RE = re.compile(r"^#\s{0,20}(?:size|bytes)\s+(?:count|N)\s+type\b.{0,120}\balgbw\b")


def device_gpu(text: str) -> str | None:
    """The GPU a ``#  Rank N ... device D [bus] NAME`` line names (``NVIDIA A100-SXM4-80GB``), or None."""
    if not RANK_DEV_RE.match(text):
        return None
    m = DEVICE_GPU_RE.search(text)
    return m.group("gpu") if m else None


def device_process(text: str) -> tuple[str, int] | None:
    """The (host, pid) a ``#  Rank N ... Pid P on HOST device D`` line names, or None."""
    d = DEVICE_LINE_RE.match(text)
    return (d.group("host"), int(d.group("pid"))) if d else None


def launcher_prefix_off(raw: str) -> str:
    """The line without the process prefixes a launcher put in front of mpirun's output (SkyPilot's ``(head, rank=0,
    pid=4127) ``, Ray's ``(run_tests pid=311) ``), peeled as the log readers peel them (``TOOL_PREFIX_RE``), down to
    mpirun's own tag or the benchmark's text, which the caller reads. A host's prefix (pdsh's ``node2: ``) stays: the
    benchmark's failure lines name their host that way."""
    text = raw
    for _ in range(MAX_PREFIXES):
        if text[:1] != "(":
            return text
        m = TOOL_PREFIX_RE.match(text)
        if m is None or m.end() == 0:
            return text
        text = text[m.end():]
    return text


def restore_marks(text: str) -> str:
    """A line as nccl-tests printed it: a quoting ``> `` taken off, a header line that lost its ``#`` (``nThread 1
    nGpus 8 ...``, ``Rank 0 Pid ... device 0``, ``Out of bounds values : 0 OK``) or has blanks before it given
    its ``#`` back; any other line unchanged."""
    if text[:1] in ("#", "") or text[:1].isdigit():
        return text
    if ">" in text[:8]:
        text = QUOTE_RE.sub("", text, count=1)
    body = text.lstrip()
    if body.startswith("#"):
        return body
    return "# " + body if HASHLESS_RE.match(body) else text


def library_version(code: int) -> str | None:
    """NCCL_VERSION_CODE -> "2.19.3": major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 + patch
    before; None for a code neither form gives."""
    if code >= 20900:
        major, minor, patch = code // 10000, code // 100 % 100, code % 100
    elif 2000 <= code < 3000:
        major, minor, patch = code // 1000, code // 100 % 10, code % 100
    else:
        return None
    return f"{major}.{minor}.{patch}"


def _gdr_record(rec: NcclConnection, seen: set[tuple[str, int, str]]) -> NcclNet | None:
    """A network connection's path as printed, once per process and transport: the GDRDMA flag it carries
    or lacks is what tells whether GPU Direct RDMA is in use."""
    if not rec.transport.startswith("NET/"):
        return None
    m = VIA_RE.search(rec.text)
    if m is None:
        return None
    key = (rec.host, rec.pid, m.group(1))
    if key in seen or len(seen) >= MAX_GDR_SEEN:
        return None
    seen.add(key)
    return NcclNet(rec.file, rec.line, rec.text, rec.host, rec.pid, rec.tid, rec.ts, "gdr", m.group(1))


def parse_nccl_tests_lines(lines: Iterable[tuple[int, str]], file: str) -> Iterator[Rec]:
    """Table rows, and the records of the NCCL lines between them."""
    test: str | None = None
    nranks_seen = 0
    nranks: int | None = None
    said_world = False
    gdr_seen: set[tuple[str, int, str]] = set()
    heaps = HeapWatch()
    native = NativeWatch(file)  # a crash report around the benchmark (valgrind's, a handler's): its process's end
    for lineno, raw in lines:
        if raw[:3] in STAMP_DAYS and (stamp := MPI_STAMP_RE.match(raw)) is not None:
            raw = raw[stamp.end():]  # mpirun --timestamp-output's stamp before its tag
        if raw[:1] in (" ", "\t") and MPI_TAG_RE.match(raw.lstrip()):  # mpirun's tagged lines indented as a whole
            raw = raw.lstrip()  # (a test runner's or CI job's log quoting the launcher's output)
        if raw[:1] == "(":
            raw = launcher_prefix_off(raw)
        text = restore_marks(MPI_TAG_RE.sub("", raw, count=1) if raw[:1] == "[" else raw)
        if "NCCL " in text or "] INFO " in text or " WARN " in text:
            rec = parse_nccl_line(restore_marks(raw) if raw[:1] == "[" else text, file, lineno)
            if rec is not None:
                yield rec
                if isinstance(rec, NcclConnection) and (gdr := _gdr_record(rec, gdr_seen)) is not None:
                    yield gdr
                continue
        if nranks_seen and not said_world and not RANK_DEV_RE.match(text):
            said_world = True  # the device block has ended: its lines are the ranks of the test
            yield WorldSize(file, lineno, text, None, None, None, None, nranks_seen)
        if (heap := heaps.read(file, lineno, text, text, None)) is not None:
            yield heap  # glibc's heap check before a process's abort, freed from NCCL (OpenMPI's report's frame)
            continue
        if (yield from _reports(native, text, file, lineno, test)):
            continue
        if "noticed that process rank" in text and (ended := mpi_exit(text, file, lineno)) is not None:
            yield ended  # mpirun's "... noticed that process rank 37 with PID N on node H exited on signal 6"
            continue
        if (launch := launch_failure(text, file, lineno, text, None)) is not None:
            yield launch  # ssh, the MPI runtime, UCX / UCC failing under the benchmark's mpirun
            continue
        if "NCCL failure " in text or "CUDA failure " in text or "Cuda failure " in text:  # (2018's tests: "Cuda")
            f = TEST_FAILURE_RE.search(text)
            if f:  # the test's own abort: "host: Test NCCL failure common.cu:1012 'internal error ...'", "Test CUDA
                # failure common.cu:1037 'an illegal memory access was encountered'"
                yield DistError(file, lineno, text, None, None, None, None, f"{f.group('lib').upper()} failure",
                                f.group("msg").strip(" /"))
                continue
        if text.startswith("#"):
            lib = LIBRARY_RE.match(text) if "nccl-library=" in text else None
            if lib and (version := library_version(int(lib.group("code")))):  # given to the first process seen
                yield NcclVersion(file, lineno, text, "", 0, 0, None, version, None)
                continue
            if OOB_OK_RE.match(text):  # printed once, after every size of every test checked out
                yield ExitCode(file, lineno, text, 0)
                continue
            if (bad := OOB_FAILED_RE.match(text)) is not None:  # the check failed: the collectives gave wrong results
                yield check_failed(file, lineno, text, f"Out of bounds values: {bad.group('n')} FAILED",
                                   "the #wrong columns count them per size")
                continue
            t = TEST_RE.search(text)
            if t:
                test = next(g for g in t.groups() if g)
                nranks_seen = 0
            if RANK_DEV_RE.match(text):
                if said_world:  # another run's device block (the benchmark run again in one console): its own world
                    nranks_seen, said_world = 0, False
                nranks_seen += 1
                nranks = nranks_seen
                d = DEVICE_LINE_RE.match(text)
                if d:  # the process on its host, its rank by the line's "# Rank N" (lines.TOOL_PREFIX_RE)
                    yield NcclRec(file, lineno, text, d.group("host"), int(d.group("pid")), 0, None)
                    rank = prefix_rank(text)
                    if rank is not None:  # "-g 4": four ranks in one process, each a rank of the test
                        yield RankTagged(file, lineno, text, rank, None, None, None)
            if COLUMNS_RE.match(text):  # printed after the communicators' init, before the first size
                yield TestsTableHeader(file, lineno, text, None, None, None, None)
            n = NRANKS_RE.search(text)
            if n and "nranks" in text:
                nranks = int(next(g for g in n.groups() if g))
            continue
        m = ROW_RE.match(text)
        if not m:
            continue
        try:
            float(m.group("t1")), float(m.group("a1")), float(m.group("b1"))  # "[\d.]+" also takes "0..0"
            if m.group("t2"):
                float(m.group("t2")), float(m.group("a2")), float(m.group("b2"))
        except ValueError:
            continue
        base = (int(m.group("size")), int(m.group("count")), m.group("type"), m.group("redop") or "",
                int(m.group("root") or -1))
        yield NcclTestsRow(file, lineno, text, test, nranks, *base, float(m.group("t1")), float(m.group("a1")),
                           float(m.group("b1")), False)
        if m.group("t2"):
            yield NcclTestsRow(file, lineno, text, test, nranks, *base, float(m.group("t2")), float(m.group("a2")),
                               float(m.group("b2")), True)
    yield from native.flush()
    if nranks_seen and not said_world:  # the output ends inside its device block
        yield WorldSize(file, 0, "", None, None, None, None, nranks_seen)


def check_failed(file: str, lineno: int, text: str, what: str, counted: str) -> DistError:
    """The benchmark's own check failed (the table's ``Out of bounds values : N FAILED``, the structured output's
    non-zero errors): the collectives returned wrong results."""
    return DistError(file, lineno, text, None, None, None, None, "nccl-tests check",
                     f"{what} (the collectives returned wrong results; {counted})")


def _reports(native: NativeWatch, text: str, file: str, lineno: int, test: str | None) -> Generator[Rec, None, bool]:
    """The line's records when it is one of the reports around a table (its ``--json`` summary, a native crash report
    that valgrind or a handler printed); True when nothing else reads it."""
    if text[:1] == "{" and STRUCTURED_MARK in text:
        yield from structured_rows(text, file, lineno, test)
        return True
    taken = native.read(lineno, text)
    if native.records:
        yield from native.flush()
    return taken


STRUCTURED_MARK = '"nccl-tests structured output"'  # the identifier of the one-line JSON that --json prints
STRUCTURED_MAX = 4 << 20  # a longer line is no benchmark's summary: not decoded
_SIDES = (("oop_", False), ("ip_", True))


def structured_rows(text: str, file: str, lineno: int, test: str | None) -> Iterator[Rec]:
    """nccl-tests' structured output (``--json``, 2.26+), one line printed when the sweep is over:
    ``{"identifier": "nccl-tests structured output", "version": ..., "benchmark": [{"<bytes>": {"count": ...,
    "oop_time": us, "oop_algbw": GB/s, "oop_busbw": GB/s, "oop_error": wrong, "ip_...": ...}}, ...]}``. Its rows,
    and the end of a sweep whose checks all passed (every error 0 or "N/A"), as the table's ``Out of bounds values
    : 0 OK`` is. A line that is not that JSON gives nothing."""
    if len(text) > STRUCTURED_MAX:
        return
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return
    bench = obj.get("benchmark") if isinstance(obj, dict) else None
    if not isinstance(bench, list):
        return
    wrong = 0
    rows = 0
    for item in bench:
        for size, r in (item.items() if isinstance(item, dict) else ()):
            if not isinstance(r, dict) or not str(size).isdigit():
                continue
            for side, in_place in _SIDES:
                try:
                    row = NcclTestsRow(file, lineno, text[:500], test, None, int(size), int(r.get("count", 0)),
                                       str(r.get("type", "")), str(r.get("redop", "")), int(r.get("root", -1)),
                                       float(r[side + "time"]), float(r[side + "algbw"]), float(r[side + "busbw"]),
                                       in_place)
                except (KeyError, TypeError, ValueError, OverflowError):
                    continue
                err = r.get(side + "error")
                wrong += isinstance(err, (int, float)) and err != 0
                rows += 1
                yield row
    if rows and not wrong:
        yield ExitCode(file, lineno, text[:500], 0)
    elif wrong:  # as the table's "Out of bounds values : N FAILED"
        yield check_failed(file, lineno, text[:500], f"{wrong} of the structured output's results have wrong values",
                           "its *_error fields count them per size")


def parse_nccl_tests_json(obj: dict, file: str) -> list[NcclTestsRow]:
    rows = []
    results = obj.get("results")
    for i, r in enumerate(results if isinstance(results, list) else (), 1):
        if not isinstance(r, dict):
            continue
        try:
            for key, inplace in (("out_of_place", False), ("in_place", True)):
                v = r.get(key)
                if isinstance(v, dict):
                    rows.append(NcclTestsRow(file, i, "", obj.get("test"), obj.get("nranks"), int(r["size"]),
                                             int(r.get("count", 0)), str(r.get("type", "")), str(r.get("redop", "")),
                                             int(r.get("root", -1)), float(v["time"]), float(v["alg_bw"]),
                                             float(v["bus_bw"]), inplace))
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
    return rows
