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
from .records import RasComm, Rec, WorldSize
from .torch_log import NodeCount

COMM_HDR_RE = re.compile(r"^#(?P<g>\d+)-(?P<c>\d+) \((?P<hash>[0-9a-fA-F]+)\) (?P<err>[A-Z, ]+)$")
LAUNCHED_RE = re.compile(r"Rank (?P<rank>\d+) has launched up to operation (?P<n>\d+)")
RANKS_LAUNCHED_RE = re.compile(r"(?<!\d)(?P<k>\d+) ranks have launched up to operation (?P<n>\d+)")
MISSING_RE = re.compile(r"The missing ranks?: (?P<ranks>[\d, -]+)")
VERSION_RE = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
COUNTS_OP_RE = re.compile(r"different (?P<op>\w+) operation counts")


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


def parse_ras_text(text: str, file: str) -> list[RasComm]:
    version = VERSION_RE.search(text)
    comms: list[RasComm] = []
    cur: RasComm | None = None
    op = "collectives"
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        m = COMM_HDR_RE.match(s)
        if m:
            cur = RasComm(file, lineno, s, "0x" + m.group("hash").lower(), None, m.group("err").strip(), {}, {}, [],
                          version.group(1) if version else None)
            comms.append(cur)
            continue
        if cur is None:
            continue
        om = COUNTS_OP_RE.search(s)
        if om:
            op = om.group("op")
        lm = LAUNCHED_RE.search(s)
        if lm:
            r, n = int(lm.group("rank")), int(lm.group("n"))
            cur.launched_up_to[r] = n
            cur.counts.setdefault(r, {})[op] = n
            continue
        mm = MISSING_RE.search(s)
        if mm:
            for part in mm.group("ranks").replace(" ", "").split(","):
                if part.isdigit():
                    cur.missing_ranks.append(int(part))
    return comms


def parse_ras_json(obj: dict, file: str) -> list[RasComm]:
    out: list[RasComm] = []
    for c in _list(obj.get("communicators")):
        if not isinstance(c, dict):
            continue
        counts: dict[int, dict[str, int]] = {}
        for r in _list(c.get("ranks")):
            if isinstance(r, dict) and isinstance(r.get("rank"), int) and not isinstance(r.get("rank"), bool):
                cc = r.get("collective_counts")
                cc = cc if isinstance(cc, dict) else {}
                counts[r["rank"]] = {str(k): int(v) for k, v in cc.items() if isinstance(v, int)}
        missing = [m.get("rank") for m in _list(c.get("missing_ranks")) if isinstance(m, dict)]
        launched = {r: max(v.values()) if v else 0 for r, v in counts.items()}
        out.append(RasComm(file, 1, json.dumps(c)[:300], str(c.get("hash", "")).lower(), None, None, counts, launched,
                           [m for m in missing if isinstance(m, int)],
                           str(obj["nccl_version"]) if obj.get("nccl_version") is not None else None))
    return out


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
