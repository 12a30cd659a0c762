"""One pass over the parsed files' records, sorting them into what each builder needs.

NCCL lines are tracked per process: Init / comm-info lines open a process's view of a
communicator (``CommLocal``) and make it the process's current one; ring, tree, channel and
connection lines that follow belong to it (NCCL prints them during that communicator's init).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from ..ingest import Parsed
from ..model import Connection, Evidence, GraphSearch, Origin, Setting
from ..sources import records as R
from ..sources.coll import NcclCollBatch
from ..sources.lines import nccl_head, prefix_rank
from ..sources.nccl_diag import NcclDiag
from .communicators import CommLocal
from .shown import TuningKey, count_tuning, note_graph, note_topology
from .values import ProcKey, ev


@dataclass
class Gathered:
    """The records of a run, by kind, and what the NCCL lines say per process."""

    comms: dict[tuple[ProcKey, str], CommLocal] = field(default_factory=dict)
    current: dict[ProcKey, CommLocal] = field(default_factory=dict)
    nccl_versions: dict[ProcKey, str] = field(default_factory=dict)
    version_lines: dict[str, Evidence] = field(default_factory=dict)  # NCCL version -> the first line printing it
    cuda_version: str | None = None
    proc_dev: dict[ProcKey, tuple[int | None, str | None]] = field(default_factory=dict)
    settings: dict[str, Setting] = field(default_factory=dict)
    coll_lines: list[R.NcclColl | NcclCollBatch] = field(default_factory=list)
    nccl_events: list[tuple[ProcKey, R.Rec]] = field(default_factory=list)
    torch_recs: list[R.TorchRec] = field(default_factory=list)
    launcher: list[R.LauncherExit] = field(default_factory=list)
    signals: list[R.LauncherSignal] = field(default_factory=list)
    frs: list[R.FrDump] = field(default_factory=list)
    completions: list[R.CompletionRec] = field(default_factory=list)
    hook: list[R.HookRec] = field(default_factory=list)
    ras: list[R.RasComm] = field(default_factory=list)
    tests: list[R.NcclTestsRow] = field(default_factory=list)
    unread: list[R.UnreadLines] = field(default_factory=list)
    file_ends: list[R.FileEnd] = field(default_factory=list)
    exit_code: int | None = None
    proc_first_seen: dict[ProcKey, Evidence] = field(default_factory=dict)  # each process's first NCCL line
    # file -> unprefixed "NCCL version" lines (<=2.21), given to the next process seen in that file
    bare_versions: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    # topology lines printed before their communicator's only Init line (NCCL 2.5 to 2.12 print just
    # "Init COMPLETE", at the end), by printing thread: the Init line of that thread takes them
    pending: dict[tuple[str, int, int], list[R.NcclRec]] = field(default_factory=lambda: defaultdict(list))
    # from "[rank3]:" / "[default3]:" / mpirun "[1,3]<stdout>:" prefixes
    wrapper_rank: dict[ProcKey, int] = field(default_factory=dict)
    wrapper_dev: dict[ProcKey, int | None] = field(default_factory=dict)  # the local device of the tagged line's head
    origins: dict[str, Origin] = field(default_factory=dict)  # file -> who wrote it, for those not Origin.INPUT
    # NCCL's Inspector profiler plugin: completed operations, dump markers, proxy records, Prometheus metrics
    inspector: list[R.InspectorOp] = field(default_factory=list)
    inspector_stats: list[R.InspectorDumpStats] = field(default_factory=list)
    inspector_proxy: list[R.InspectorProxy] = field(default_factory=list)
    inspector_metrics: list[R.InspectorMetric] = field(default_factory=list)
    tuning: dict[TuningKey, list] = field(default_factory=dict)  # NCCL's TUNING lines, counted (shown.count_tuning)
    graphs: dict[int, GraphSearch] = field(default_factory=dict)  # NCCL's topology search per pattern (shown.note_graph)
    diag: list[NcclDiag] = field(default_factory=list)  # NCCL DIAG lines and RAS answers (2.31+)


def gather(parsed: list[Parsed]) -> Gathered:
    g = Gathered()
    simple: dict[type, list] = {
        R.LauncherExit: g.launcher, R.LauncherSignal: g.signals, R.FrDump: g.frs, R.CompletionRec: g.completions,
        R.HookRec: g.hook, R.RasComm: g.ras, R.NcclTestsRow: g.tests, R.UnreadLines: g.unread,
        R.InspectorOp: g.inspector, R.InspectorDumpStats: g.inspector_stats, R.InspectorProxy: g.inspector_proxy,
        R.InspectorMetric: g.inspector_metrics,
    }
    for p in parsed:
        if p.origin is not Origin.INPUT:
            g.origins[p.file] = p.origin
        if p.end is not None:
            g.file_ends.append(p.end)
        for rec in p.records:
            if isinstance(rec, R.NcclRec):
                _nccl(rec, g)
            elif isinstance(rec, R.TorchRec):
                g.torch_recs.append(rec)
            elif type(rec) in simple:
                simple[type(rec)].append(rec)
            elif isinstance(rec, R.EnvSetting):
                g.settings.setdefault(rec.name, Setting(rec.name, rec.value, "env-file", ev(rec)))
            elif isinstance(rec, R.ExitCode):
                g.exit_code = rec.code
    _inspector_views(g)
    return g


def _inspector_views(g: Gathered) -> None:
    """Processes that only the Inspector's records show (no NCCL line of theirs): each record's process and its
    view of the communicator (its rank, size and nodes; initialised, since it ran operations) are taken as an Init
    line would give them, so that ranks, world size and communicators come out as from NCCL's own lines."""
    seen = set(g.proc_first_seen)
    for rec in (*g.inspector_stats, *g.inspector):
        key = (rec.host, rec.pid)
        if key in seen or (key, rec.comm) in g.comms:
            continue
        g.proc_first_seen.setdefault(key, ev(rec))
        cl = CommLocal(key, rec.comm, rec.rank, rec.nranks, comm_id=rec.comm, started=True, start_seen=True,
                       complete=True, nnodes=rec.nnodes, first_line=rec.line, init_line=ev(rec))
        g.comms[(key, rec.comm)] = cl


def _first_seen(rec: R.NcclRec, key: ProcKey, g: Gathered) -> None:
    g.proc_first_seen[key] = ev(rec)
    if g.bare_versions.get(rec.file):  # the bare version line printed just before by this process
        g.nccl_versions.setdefault(key, g.bare_versions[rec.file].pop(0))
    wrapped = prefix_rank(rec.text)  # "[rank3]:", mpirun's "[1,3]<stdout>:", srun's "3: " ... (lines.py)
    if wrapped is not None:
        g.wrapper_rank[key] = wrapped
        head = nccl_head(rec.text)
        g.wrapper_dev[key] = head[2] if head is not None else None


def _local(g: Gathered, key: ProcKey, comm: str, rank: int, nranks: int, line: int) -> CommLocal:
    cl = g.comms.get((key, comm))
    if cl is None:
        cl = CommLocal(key, comm, rank, nranks, first_line=line)
        g.comms[(key, comm)] = cl
    g.current[key] = cl
    return cl


# the branch of ``_nccl`` each record type takes, by exact type (isinstance depends on the type alone): one
# dict look-up instead of up to seven isinstance tests a record, most of them for the topology lines
_COLL_BATCH, _COLL, _INIT, _COMM_INFO, _TOPOLOGY, _VERSION, _ENV, _EVENT, _TUNING, _DIAG, _GRAPH, _OTHER = range(12)
_BRANCH: dict[type, int] = {}


def _branch(cls: type) -> int:
    for kinds, b in ((NcclCollBatch, _COLL_BATCH), (R.NcclColl, _COLL), (R.NcclInit, _INIT),
                     (R.NcclCommInfo, _COMM_INFO),
                     ((R.NcclConnection, R.NcclRingOrder, R.NcclRing, R.NcclTrees, R.NcclTree, R.NcclChannels,
                       R.NcclTopologyRun), _TOPOLOGY),
                     (R.NcclVersion, _VERSION), (R.NcclEnv, _ENV),
                     ((R.NcclWarn, R.NcclBacktrace, R.NcclRasLine, R.NcclNet), _EVENT), (R.NcclTuning, _TUNING),
                     (NcclDiag, _DIAG), (R.NcclPattern, _GRAPH)):
        if issubclass(cls, kinds):
            return b
    return _OTHER


def _nccl(rec: R.NcclRec, g: Gathered) -> None:
    key = (rec.host, rec.pid)
    b = _BRANCH.get(type(rec))
    if b is None:
        b = _BRANCH[type(rec)] = _branch(type(rec))
    if b == _DIAG:  # printed by one process about a communicator's ranks: no line of the process's own run
        g.diag.append(cast(NcclDiag, rec))
        return
    if rec.pid and key not in g.proc_first_seen:
        _first_seen(rec, key, g)
    if b == _TOPOLOGY:
        cl = g.current.get(key)
        if cl is None or (cl.complete and not cl.start_seen):  # before this thread's Init line: held for it
            g.pending[(rec.host, rec.pid, rec.tid)].append(rec)
        else:
            _topology(rec, cl)
    elif b == _COLL_BATCH:
        batch = cast(NcclCollBatch, rec)
        g.coll_lines.append(batch)
        _batch_current(batch, g)
    elif b == _COLL:
        coll = cast(R.NcclColl, rec)
        g.coll_lines.append(coll)
        cl = g.comms.get((key, coll.comm))
        if cl is not None:
            g.current[key] = cl
    elif b == _INIT:
        _init(cast(R.NcclInit, rec), key, g)
    elif b == _COMM_INFO:
        info = cast(R.NcclCommInfo, rec)
        cl = _local(g, key, info.comm, info.rank, info.nranks, info.line)
        cl.nnodes, cl.init_line = info.nnodes, ev(info)
    elif b == _VERSION:
        ver = cast(R.NcclVersion, rec)
        if ver.version not in g.version_lines:
            g.version_lines[ver.version] = ev(ver)
        if ver.pid:
            g.nccl_versions[key] = ver.version
        else:
            g.nccl_versions.setdefault(("", 0), ver.version)
            g.bare_versions[ver.file].append(ver.version)
        g.cuda_version = g.cuda_version or ver.cuda
    elif b == _ENV:
        env = cast(R.NcclEnv, rec)
        # NCCL's own "set by environment" line is the proof that NCCL saw the setting
        if env.name not in g.settings or g.settings[env.name].source != "nccl-log":
            g.settings[env.name] = Setting(env.name, env.value, "nccl-log", ev(env))
    elif b == _EVENT:
        g.nccl_events.append((key, rec))
    elif b == _TUNING:
        count_tuning(g.tuning, cast(R.NcclTuning, rec))
    elif b == _GRAPH:
        note_graph(g.graphs, cast(R.NcclPattern, rec))


def _init(rec: R.NcclInit, key: ProcKey, g: Gathered) -> None:
    cl = _local(g, key, rec.comm, rec.rank, rec.nranks, rec.line)
    cl.init_line = ev(rec)
    cl.caller = cl.caller or rec.caller
    cl.comm_id = cl.comm_id or rec.comm_id
    if rec.parent and rec.parent != "(nil)":
        cl.parent_ptr = rec.parent
        cl.split_count = rec.split_count
        cl.color = rec.color
    if rec.phase == "START":
        cl.started = cl.start_seen = True
    elif rec.phase == "COMPLETE":
        cl.started = cl.complete = True
    held = g.pending.pop((rec.host, rec.pid, rec.tid), None)
    if held and not cl.start_seen:
        for t in held:
            _topology(t, cl)
    if rec.cuda_dev is not None:
        g.proc_dev.setdefault(key, (rec.cuda_dev, rec.bus_id))


def _topology(rec: R.NcclRec, cl: CommLocal) -> None:
    note_topology(cl, rec)
    if type(rec) is R.NcclTopologyRun:  # a run of ring and connection lines, folded by the parse (sources.fold)
        for ch, prev, rank, nxt in rec.rings:
            cl.ring_next[ch] = (prev, rank, nxt)
        cl.connections.extend(Connection(ch, src, dst, transport, ci, gdr)
                              for ch, ci, src, dst, _direction, transport, gdr in rec.conns)
    elif isinstance(rec, R.NcclConnection):
        cl.connections.append(Connection(rec.channel, rec.src, rec.dst, rec.transport, rec.conn_index, rec.gdr))
    elif isinstance(rec, R.NcclRingOrder):
        cl.nchannels = rec.nchannels or cl.nchannels  # 0: a release that prints no channel count (2.3, 2.4)
        cl.ring_order[rec.channel] = rec.ranks
        if rec.truncated:
            cl.ring_trunc.add(rec.channel)
    elif isinstance(rec, R.NcclRing):
        cl.ring_next[rec.channel] = (rec.prev, rec.rank, rec.next)
    elif isinstance(rec, R.NcclTrees):
        for ch, downs, up in rec.channels:
            cl.trees[ch] = up
            cl.tree_downs[ch] = downs
    elif isinstance(rec, R.NcclTree):
        cl.trees[rec.channel] = rec.up
        cl.tree_downs[rec.channel] = rec.downs
    elif isinstance(rec, R.NcclChannels):
        if cl.nchannels is None:
            cl.nchannels = rec.coll


def _batch_current(b: NcclCollBatch, g: Gathered) -> None:
    """What a run of COLL lines leaves behind: each process's current communicator is the one of its last line."""
    for code, proc in enumerate(b.procs):
        if len(b.procs) == 1:
            last, first = len(b) - 1, 0
        else:
            rows = np.flatnonzero(b.proc == code)
            if not len(rows):
                continue
            first, last = int(rows[0]), int(rows[-1])
        if proc[1] and proc not in g.proc_first_seen:  # a COLL row keeps no text: its first row's, or what it is
            line = int(b.lines[first])
            g.proc_first_seen[proc] = Evidence(b.file, line, b.text.strip() if line == b.line and b.text.strip()
                                               else f"NCCL COLL line of process {proc[0]}:{proc[1]}")
        cl = g.comms.get((proc, b.comms[int(b.comm[last])]))
        if cl is not None:
            g.current[proc] = cl
