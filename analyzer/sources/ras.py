"""NCCL RAS answers (2.24+): the text report of ``STATUS`` / ``VERBOSE STATUS`` and the JSON of
``SET FORMAT json`` (2.28.7+). What matters for a hang is per-rank launched-collective counts
per communicator (``Rank 0 has launched up to operation 123``, ``collective_counts``) and
missing or dead ranks.

2.31+ adds the ``DIAGNOSTICS`` command (``ncclras -D``: the ``NCCL DIAG`` report, ``sources.nccl_diag``) and the
``CONTROL`` namespace (``CONTROL PROFILER_MASK <value>``); ``parse_ras_replies`` reads a session's answers
(``src/ras/client_support.cc``, 2.31.2): ``OK``, ``ERROR: Invalid profiler mask value '<v>'``, ``ERROR: Unknown
CONTROL subcommand '<s>'``, ``ERROR: diagnostics only supports text output``, ``BUSY: diagnostics already in
progress``, the other commands' ``ERROR:`` lines, and the report's own lines.
"""
from __future__ import annotations

import json
import re
from dataclasses import replace

from ..diag_model import DiagCheck, DiagLevel, DiagProblem, DiagResult, DiagSource
from .nccl_diag import DIAG_MARK, NcclDiag, parse_diag_line
from .records import NcclVersion, RasComm, Rec, WorldSize
from .torch_log import NodeCount

COMM_HDR_RE = re.compile(r"^#(?P<g>\d+)-(?P<c>\d+) \((?P<hash>[0-9a-fA-F]+)\) (?P<err>[A-Z, ]+)$")
LAUNCHED_RE = re.compile(r"Rank (?P<rank>\d+) has launched up to operation (?P<n>\d+)")
RANKS_LAUNCHED_RE = re.compile(r"(?<!\d)(?P<k>\d+) ranks have launched up to operation (?P<n>\d+)")
MISSING_RE = re.compile(r"The missing ranks?: (?P<ranks>[\d, -]+)")
VERSION_RE = re.compile(r"NCCL version (\d{1,3}\.\d{1,3}\.\d{1,4})")
REPORT_VERSION_RE = re.compile(r"^NCCL version (?P<v>\d{1,3}\.\d{1,3}\.\d{1,4})\S{0,40} compiled with CUDA "
                               r"(?P<cuda>\d{1,3}\.\d{1,3})", re.MULTILINE)
COUNTS_OP_RE = re.compile(r"different (?P<op>\w+) operation counts")


MAX_RANKS = 1 << 20
JOB_ROW_RE = re.compile(r"^\s*(\d{1,7})\s+(\d{1,7})\s+(\d{1,7})\s+(\d{1,7})\s+(\d{1,7})\s*$")


def parse_ras_job(text: str, file: str) -> list[Rec]:
    """The ``Job summary`` table of the text report (``Nodes (total)``, ``Processes per node``, ``GPUs per
    process``, ``Processes (total)``, ``GPUs (total)``): the job's node count and world size (its processes)."""
    at = text.find("Job summary")
    if at < 0:
        return []
    lineno = text.count("\n", 0, at) + 1
    for i, line in enumerate(text[at:at + 2000].splitlines()):
        m = JOB_ROW_RE.match(line)
        if m:
            nodes, procs = int(m.group(1)), int(m.group(4))
            if 0 < nodes <= 1 << 20 and 0 < procs <= 1 << 20:
                return [NodeCount(file, lineno + i, line, None, None, None, None, nodes),
                        WorldSize(file, lineno + i, line, None, None, None, None, procs)]
            break
    return []


GROUP_ROW_RE = re.compile(r"^\s{0,8}(?P<g>\d{1,6})\s{1,12}\d{1,7}\s{1,12}\d{1,7}\s{1,12}[\d-]{1,15}\s{1,12}(?P<n>\d{1,7})"
                          r"\s{1,12}\d{1,9}\s{1,12}(?P<status>[A-Z]{2,12})\s{1,12}(?P<err>[A-Z,]{2,40})\s{0,8}$")
COUNTS_GROUP_RE = re.compile(r"^(?P<k>\d{1,7}) ranks have (?:launched up to operation (?P<n>\d{1,19})|not launched any "
                             r"operations)$")
RANK_COUNT_RE = re.compile(r"^Rank (?P<rank>\d{1,7}) has (?:launched up to operation (?P<n>\d{1,19})|not launched any "
                           r"operations)\b")
RANK_LISTED_RE = re.compile(r"^Rank (?P<rank>\d{1,7}) -- ")
PROCESS_RE = re.compile(r"managed by process (?P<pid>\d{1,10}) on node (?P<host>[^\s]{1,255})")
DEAD_PROCESS_RE = re.compile(r"^Process (?P<pid>\d{1,10}) on node (?P<host>[^\s]{1,255}) managing GPU")
DEAD_COUNT_RE = re.compile(r"^(?P<k>\d{1,7}) job process(?:es)? (?:is|are) considered dead")
DIFFERENT_STATUS = "Communicator ranks have different status"


class _TextReport:
    """The state of one text report read line by line (``parse_ras_text``)."""

    def __init__(self, file: str, version: str | None) -> None:
        self.file, self.version = file, version
        self.comms: dict[str, RasComm] = {}  # by hash, in order of first mention
        self.table: dict[int, tuple[int, str]] = {}  # group -> (ranks per communicator, status)
        self.cur: RasComm | None = None
        self.block = ""  # what the current communicator block says: INCOMPLETE, ERROR, MISMATCH
        self.op = "collectives"
        self.status_mode = False  # inside "Communicator ranks have different status": its rank lines are no counts
        self.dead_block = False
        self.dead: set[tuple[int, str]] = set()  # (pid, node) of the processes RAS considers dead
        self.dead_count = 0
        self.procs: dict[tuple[int, str], set[tuple[str, int]]] = {}  # (pid, node) -> {(comm, rank)} the lines name

    def line(self, lineno: int, line: str) -> None:
        s = line.strip()
        if not s:
            self.dead_block = False
            return
        row = GROUP_ROW_RE.match(line)
        if row is not None:
            self.table[int(row.group("g"))] = (int(row.group("n")), row.group("status"))
            return
        m = COMM_HDR_RE.match(s)
        if m is not None:
            self._comm(lineno, s, m)
            return
        if s == "DEAD":
            self.dead_block, self.cur = True, None
            return
        if self.dead_block:
            self._dead(s)
            return
        if self.cur is not None:
            self._in_comm(s)

    def _comm(self, lineno: int, s: str, m: re.Match[str]) -> None:
        key = comm_id(m.group("hash"))
        self.block, self.status_mode, self.op = m.group("err").strip(), False, "collectives"
        cur = self.comms.get(key)
        if cur is None:
            nranks, status = self.table.get(int(m.group("g")), (None, None))
            cur = self.comms[key] = RasComm(self.file, lineno, s, key, status, self.block, {}, {}, [], self.version,
                                            nranks)
        elif self.block not in (cur.errors or "").split(","):
            cur.errors = f"{cur.errors},{self.block}" if cur.errors else self.block
        self.cur = cur

    def _in_comm(self, s: str) -> None:
        cur = self.cur
        assert cur is not None
        if (om := COUNTS_OP_RE.search(s)) is not None:
            self.op, self.status_mode = om.group("op"), False
            return
        if s.startswith(DIFFERENT_STATUS):
            self.status_mode = True
            return
        if (g := COUNTS_GROUP_RE.match(s)) is not None and not self.status_mode:
            cur.groups.append((self.op, int(g.group("n") or 0), int(g.group("k")), ()))
            return
        if (mm := MISSING_RE.search(s)) is not None:
            cur.missing_ranks.extend(int(p) for p in mm.group("ranks").replace(" ", "").split(",") if p.isdigit())
            return
        rc = RANK_COUNT_RE.match(s) if not self.status_mode else None
        rl = RANK_LISTED_RE.match(s) if rc is None else None
        if rc is not None:
            rank, n = int(rc.group("rank")), int(rc.group("n") or 0)
            cur.groups.append((self.op, n, 1, (rank,)))
            self._count(cur, rank, n)
        elif rl is not None:
            rank = int(rl.group("rank"))
            if self.block == "INCOMPLETE":
                cur.missing_ranks.append(rank)
            elif self.block == "MISMATCH" and not self.status_mode and cur.groups and cur.groups[-1][0] == self.op:
                op, n, k, ranks = cur.groups[-1]
                cur.groups[-1] = (op, n, k, (*ranks, rank))
                self._count(cur, rank, n)
        else:
            return
        if (pm := PROCESS_RE.search(s)) is not None:
            self.procs.setdefault((int(pm.group("pid")), pm.group("host")), set()).add((cur.comm_hash, rank))

    def _count(self, cur: RasComm, rank: int, n: int) -> None:
        cur.counts.setdefault(rank, {})[self.op] = n
        cur.launched_up_to[rank] = max(cur.launched_up_to.get(rank, 0), n)

    def _dead(self, s: str) -> None:
        if (d := DEAD_COUNT_RE.match(s)) is not None:
            self.dead_count += int(d.group("k"))
        elif (p := DEAD_PROCESS_RE.match(s)) is not None:
            self.dead.add((int(p.group("pid")), p.group("host")))

    def result(self) -> list[RasComm]:
        """The communicators, each with the job's dead processes: their count and the ranks of this communicator the
        report places in them."""
        out = list(self.comms.values())
        for c in out:
            c.dead_processes = max(self.dead_count, len(self.dead))
            c.dead_ranks = sorted({r for proc in self.dead for comm, r in self.procs.get(proc, ()) if comm == c.comm_hash})
        return out


def parse_ras_version(text: str, file: str) -> list[NcclVersion]:
    """The report's first line, ``NCCL version 2.26.2 compiled with CUDA 12.6``: the NCCL the job's processes run (the
    RAS thread that answered is one of theirs), as a version line no process printed."""
    m = REPORT_VERSION_RE.search(text[:20000])
    if m is None:
        return []
    lineno = text.count("\n", 0, m.start()) + 1
    return [NcclVersion(file, lineno, m.group(0), "", 0, 0, None, m.group("v"), m.group("cuda"))]


def ras_json_version(obj: dict, file: str) -> list[NcclVersion]:
    """The JSON answer's ``nccl_version`` as a version line no process printed (``parse_ras_version``'s twin)."""
    v = obj.get("nccl_version")
    if not isinstance(v, str) or (m := re.match(r"\d{1,3}\.\d{1,3}\.\d{1,4}", v)) is None:
        return []
    return [NcclVersion(file, 1, f"nccl_version: {v[:40]}", "", 0, 0, None, m.group(0), None)]


def parse_ras_text(text: str, file: str) -> list[RasComm]:
    """Each communicator the text report names (``#<group>-<index> (<hash>) MISMATCH`` and its INCOMPLETE / ERROR
    blocks, merged by hash): its size and status from the communicators table (``Ranks per comm``, ``Status``), its
    errors, its launched-operation counts as groups (``30 ranks have launched up to operation 2217``, the ranks the
    report lists under a group, ``Rank 5 has launched up to operation 2216 -- GPU ...`` alone, ``... have not launched
    any operations``: operation 0) and per named rank, its missing ranks (``The missing ranks: 3, 5`` before 2.26, the
    ``Rank N -- GPU ...`` lines of its INCOMPLETE block after), and the job's dead processes (the ``DEAD`` block) with
    the ranks of this communicator they run. A VERBOSE STATUS report lists every group's ranks; a plain one only the
    outliers'."""
    version = VERSION_RE.search(text)
    report = _TextReport(file, version.group(1) if version else None)
    for lineno, line in enumerate(text.splitlines(), 1):
        report.line(lineno, line)
    return report.result()


def parse_ras_json(obj: dict, file: str) -> list[RasComm]:
    """Each communicator of the JSON answer (``communicators[]``): its ``size``, every rank's ``collective_counts``
    (grouped by operation and count as the text report groups them, every rank named), its ``missing_ranks`` and those
    of them RAS ``considered_dead``."""
    out: list[RasComm] = []
    version = str(obj["nccl_version"]) if obj.get("nccl_version") is not None else None
    for c in _list(obj.get("communicators")):
        if not isinstance(c, dict):
            continue
        counts: dict[int, dict[str, int]] = {}
        for r in _list(c.get("ranks")):
            if isinstance(r, dict) and isinstance(r.get("rank"), int) and not isinstance(r.get("rank"), bool):
                cc = r.get("collective_counts")
                cc = cc if isinstance(cc, dict) else {}
                counts[r["rank"]] = {str(k): int(v) for k, v in cc.items() if isinstance(v, int)}
        missing = [m for m in _list(c.get("missing_ranks")) if isinstance(m, dict) and isinstance(m.get("rank"), int)]
        dead = [m["rank"] for m in missing if isinstance(m.get("status"), dict) and m["status"].get("considered_dead") is True]
        launched = {r: max(v.values()) if v else 0 for r, v in counts.items()}
        size = c.get("size")
        rec = RasComm(file, 1, json.dumps(c)[:300], comm_id(str(c.get("hash", ""))), None, None, counts, launched,
                      [m["rank"] for m in missing], version,
                      size if isinstance(size, int) and not isinstance(size, bool) and 0 < size <= MAX_RANKS else None)
        rec.groups = _json_groups(counts)
        rec.dead_ranks, rec.dead_processes = sorted(dead), len(dead)
        out.append(rec)
    return out


def _json_groups(counts: dict[int, dict[str, int]]) -> list[tuple[str, int, int, tuple[int, ...]]]:
    """The ranks grouped by operation and count, as the text report's lines group them (only operations whose counts
    differ between the ranks)."""
    out = []
    for op in sorted({op for v in counts.values() for op in v}):
        by_value: dict[int, list[int]] = {}
        for r, v in sorted(counts.items()):
            by_value.setdefault(v.get(op, 0), []).append(r)
        if len(by_value) > 1:
            out += [(op, n, len(rs), tuple(rs)) for n, rs in sorted(by_value.items())]
    return out


def comm_id(hash_text: str) -> str:
    """A communicator's hash as NCCL's INFO lines write its commId (``0x`` and lowercase hex, no leading zeros); the
    text report pads it to 16 digits, the JSON does not. Text that is no hex number is kept, lowercased."""
    h = hash_text.strip().lower()
    h = h.removeprefix("0x")
    try:
        return hex(int(h, 16)) if 0 < len(h) <= 32 else hash_text.strip().lower()
    except ValueError:
        return hash_text.strip().lower()


def _list(v: object) -> list:
    """A JSON field that should be a list; anything else (a number, a dict) counts as empty."""
    return v if isinstance(v, list) else []


def looks_like_ras_json(obj: object) -> bool:
    return isinstance(obj, dict) and "communicators" in obj and ("nccl_version" in obj or "ras" in obj)


REPLY_RE = re.compile(r"^(?:(?P<ok>OK)|(?P<word>ERROR|BUSY): (?P<what>.{1,400}))$")
# what an ERROR / BUSY answer is about, by its words (client_support.cc): the command it answers
REPLY_ABOUT = (("profiler mask", "CONTROL PROFILER_MASK"), ("CONTROL subcommand", "CONTROL"),
               ("diagnostics", "DIAGNOSTICS"), ("timeout value", "TIMEOUT"), ("Invalid format", "SET FORMAT"),
               ("event group", "MONITOR"), ("Unknown command", "command"))


def parse_ras_replies(text: str, file: str) -> list[NcclDiag]:
    """A RAS client session's answers (``echo "CONTROL PROFILER_MASK all" | nc localhost 28028``, ``ncclras -D``):
    each ``NCCL DIAG`` line of a diagnostics report, and each ``OK`` / ``ERROR: ...`` / ``BUSY: ...`` answer line.
    Those answers carry no process: host "" and pid 0."""
    out: list[NcclDiag] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if DIAG_MARK in s:
            rec = parse_diag_line(line, file, lineno)
            if rec is not None:
                out.append(rec)
            continue
        m = REPLY_RE.match(s)
        if m is None:
            continue
        if m.group("ok"):
            res = DiagResult(DiagSource.RAS, DiagLevel.OK, DiagCheck.RAS_REPLY, DiagProblem.NONE, s)
        else:
            what = m.group("what")
            about = next((cmd for words, cmd in REPLY_ABOUT if words in what), None)
            busy = m.group("word") == "BUSY"
            res = DiagResult(DiagSource.RAS, DiagLevel.INFO if busy else DiagLevel.ERROR, DiagCheck.RAS_REPLY,
                             DiagProblem.BUSY if busy else DiagProblem.REFUSED, s, key=about,
                             value=_quoted(what))
        out.append(NcclDiag(file, lineno, line, "", 0, 0, None, replace(res, file=file, line=lineno, text=line.rstrip())))
    return out


def _quoted(what: str) -> str | None:
    """The value an ERROR answer quotes (``Invalid profiler mask value 'bogus'``)."""
    m = re.search(r"'([^']{0,200})'", what)
    return m.group(1) if m else None
