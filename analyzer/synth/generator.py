"""Write a run folder of NCCL 2.28-style logs, one ``<host>.<pid>.nccl.log`` per rank.

Layout: ``nranks`` ranks, ``gpus_per_host`` per host (``node000``, ``node001``, ...), one default
communicator (``ncclCommInitRankConfig``). Every rank prints its init lines, its ``Ring`` and
``Trees`` lines and, once its first collective runs (runtime connect, the 2.22+ default), its
connection lines: NVLink P2P inside a host, IB ``[send]`` / ``[receive]`` pairs between hosts.
Rank 0 also prints the ring order per channel, cut at 128 characters as ``dumpLine`` does.
Then the training loop: a parameter broadcast, and per step ``buckets`` DDP gradient all-reduces
of ``bucket_mb`` MB plus a one-element loss all-reduce.

Faults (``fault=``):
- ``hang``: ``fault_rank`` stops issuing collectives at step ``fault_step``; the others issue the
  next one and wait in it (watchdog timeout lines in stderr, then the launcher's summary).
- ``crash``: ``fault_rank`` raises at step ``fault_step`` and exits 1; the launcher stops the rest.
- ``desync``: at the first collective of step ``fault_step`` ``fault_rank`` calls AllGather with
  another count where the others call AllReduce; every rank then waits.
- ``straggler``: ``fault_rank`` issues every collective ``straggle_s`` later than the others.

Partial evidence, as other people's runs arrive: ``stderr=False, timestamps=False`` leaves NCCL
logs only (a job killed from outside: no watchdog line, no summary, no time); ``lag`` is how many
collectives the hung rank is behind the others (NCCL's calls are asynchronous: often more than
one); ``scatter`` cuts each rank's log up to that many collectives before its end (a healthy job
killed at a random moment: every rank somewhere in its last step); ``nccl_logs=False, old_watchdog=True`` leaves stderr only, with the watchdog timeout lines of
older PyTorch releases (no NumelIn / NumelOut, no PG status, no ``[rankN]:`` prefix) from the
ranks that waited, and torchrun's summary.

Performance knobs, for comparing two runs (``ncclscope diff``): ``algo`` (and ``proto``) makes rank 0 print
NCCL's TUNING line after each COLL line (``AllReduce: 26214400 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}=
{0..15}``; LL below 64 KiB, as NCCL picks it for small messages); ``busbw_gbs`` adds ncclscope's hook records
(``ncclscope-rank<N>.jsonl``: start, one ``coll`` and one ``done`` per collective, exit) whose durations make every
collective reach that bus bandwidth (the last rank to arrive waits for nobody; the others wait for it);
``env`` adds ``NAME set by environment to VALUE`` lines at init.

Speed: each rank's file is built from per-position templates in one list comprehension and
written with one ``write``; 10 M lines take seconds.
"""
from __future__ import annotations

import enum
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from ..nccl.busbw import busbw_factor
from ..nccl.ops import canonical_op



class FaultKind(enum.StrEnum):
    """The fault a synthetic run carries."""

    HANG = "hang"
    CRASH = "crash"
    DESYNC = "desync"
    STRAGGLER = "straggler"


FAULTS = (None, *FaultKind)
# what the user has, as keyword presets of generate_run: everything; NCCL logs only (the job killed from
# outside: no watchdog line, no launcher summary, no time; a fault-free one cut at a random moment); stderr
# only, with older PyTorch's watchdog lines (no sizes, no PG status, no rank prefix) and torchrun's summary
EVIDENCE: dict[str, dict[str, object]] = {
    "full": {},
    "nccl_only": {"stderr": False, "timestamps": False},
    "watchdog_only": {"nccl_logs": False, "old_watchdog": True},
}
# the faults each kind of evidence can show at all (a straggler needs times; a crash or a desync without
# stderr leaves NCCL logs that stop like a hang's)
EVIDENCE_FAULTS: dict[str, tuple[str | None, ...]] = {
    "full": FAULTS, "nccl_only": (None, "hang"), "watchdog_only": (None, "hang"),
}
BUS_IDS = ("18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000")
FLOAT32 = 7
DTYPE_BYTES = {FLOAT32: 4, 4: 8}  # ncclFloat32, ncclInt64: the two datatypes the plan uses
DTYPE_NAMES = {FLOAT32: "float32", 4: "int64"}
LL_BELOW = 65536  # bytes: NCCL's TUNING lines name protocol LL below this size (the generator's choice)
LATENCY_US = 12.0  # a collective's fixed cost in the hook records' durations
NCCL_VERSION = "2.28.9+cuda12.9"
T0_US = 1_795_980_000_000_000  # 2026-11-29 ~19:20 UTC, in microseconds since the epoch


@dataclass(frozen=True)
class SynthTruth:
    """What the generated folder holds and what an analyser should conclude from it."""

    path: Path
    nranks: int
    nnodes: int
    nchannels: int
    fault: str | None
    verdict: str  # healthy | hang | crash | desync | degraded
    culprit_ranks: tuple[int, ...]
    stuck_seq: int | None  # 1-based NCCL call number on the default communicator
    comm_id: str
    lines: int  # lines in all files written
    nccl_lines: int  # lines that contain "NCCL INFO"
    bytes: int
    files: int
    steps: int
    per_step: int  # collectives per training step
    rings: dict[int, tuple[int, ...]] = field(default_factory=dict)


def ring_orders(nranks: int, gpus_per_host: int, nchannels: int) -> dict[int, tuple[int, ...]]:
    """Ring order per channel, starting at rank 0: hosts in order (reversed on odd channels),
    the GPUs of a host in an order rotated per channel pair, as NCCL's rail-aligned rings do."""
    hosts = _hosts_ranks(nranks, gpus_per_host)
    out = {}
    for c in range(nchannels):
        node_order = range(len(hosts)) if c % 2 == 0 else range(len(hosts) - 1, -1, -1)
        order: list[int] = []
        for n in node_order:
            local = hosts[n]
            k = (c // 2) % len(local)
            order.extend(local[k:] + local[:k])
        i = order.index(0)
        out[c] = tuple(order[i:] + order[:i])
    return out


def tree_parents(nranks: int, gpus_per_host: int, nchannels: int) -> dict[int, dict[int, tuple[list[int], int]]]:
    """Per channel, rank -> (children, parent): a chain inside each host, hosts in a binary tree
    (mirrored on odd channels: NCCL's double binary tree); -1 is no parent."""
    hosts = _hosts_ranks(nranks, gpus_per_host)
    nn = len(hosts)
    out: dict[int, dict[int, tuple[list[int], int]]] = {}
    for c in range(nchannels):
        k = (c // 2) % gpus_per_host
        chains = []
        for local in hosts:
            kk = k % len(local)
            chains.append(local[kk:] + local[:kk])
        # heap position -> node index; mirrored tree on odd channels
        node_at = list(range(nn)) if c % 2 == 0 else list(range(nn - 1, -1, -1))
        pos_of = {n: p for p, n in enumerate(node_at)}
        ch: dict[int, tuple[list[int], int]] = {}
        for n, chain in enumerate(chains):
            p = pos_of[n]
            parent_node = node_at[(p - 1) // 2] if p > 0 else None
            kids_nodes = [node_at[q] for q in (2 * p + 1, 2 * p + 2) if q < nn]
            for i, r in enumerate(chain):
                if i == 0:
                    up = chains[parent_node][0] if parent_node is not None else -1
                    downs = ([chain[1]] if len(chain) > 1 else []) + [chains[q][0] for q in kids_nodes]
                else:
                    up = chain[i - 1]
                    downs = [chain[i + 1]] if i + 1 < len(chain) else []
                ch[r] = (downs, up)
        out[c] = ch
    return out


def _hosts_ranks(nranks: int, g: int) -> list[list[int]]:
    return [list(range(s, min(s + g, nranks))) for s in range(0, nranks, g)]


def _dump_line(prefix: str, values: tuple[int, ...], nranks: int) -> str:
    """NCCL's ``dumpLine``: ``" %*d"`` per rank into a 128-byte buffer, ``...`` when cut."""
    width = len(str(nranks - 1))
    s = prefix
    for v in values:
        if len(s) >= 127:
            break
        s += " %*d" % (width, v)
    if len(s) >= 128:
        s = s[:124] + "..."
    return s


@dataclass(frozen=True)
class _Layout:
    """Where every rank is: hosts, pids, the communicator, its rings and trees."""

    nranks: int
    g: int  # GPUs per host
    nchannels: int
    hosts: list[list[int]]
    node_of: list[int]
    pids: list[int]
    hostname: list[str]
    comm_id: str
    rings: dict[int, tuple[int, ...]]
    nexts: dict[int, dict[int, int]]
    prevs: dict[int, dict[int, int]]
    trees: dict[int, dict[int, tuple[list[int], int]]]

    @property
    def nnodes(self) -> int:
        return len(self.hosts)


def _layout(nranks: int, g: int, nchannels: int, rng: random.Random) -> _Layout:
    hosts = _hosts_ranks(nranks, g)
    comm_id = f"0x{rng.getrandbits(64) | (1 << 60):x}"
    rings = ring_orders(nranks, g, nchannels)
    nexts = {c: {r: order[(i + 1) % nranks] for i, r in enumerate(order)} for c, order in rings.items()}
    prevs = {c: {r: order[i - 1] for i, r in enumerate(order)} for c, order in rings.items()}
    pids: list[int] = []
    for n in range(len(hosts)):
        base = rng.randrange(20_000, 3_000_000)
        pids.extend(base + i for i in range(len(hosts[n])))
    return _Layout(nranks, g, nchannels, hosts, [r // g for r in range(nranks)], pids,
                   [f"node{n:03d}" for n in range(len(hosts))], comm_id, rings, nexts, prevs,
                   tree_parents(nranks, g, nchannels))


@dataclass(frozen=True)
class _Plan:
    """The collectives every healthy rank issues, in order, and when (us after T0)."""

    pre_ops: list[tuple[str, int, int]]  # (nccl op name, count, datatype)
    step_ops: list[tuple[str, int, int]]
    steps: int
    t_plan: np.ndarray
    stuck_seq: int | None

    @property
    def per_step(self) -> int:
        return len(self.step_ops)

    @property
    def n_total(self) -> int:
        return len(self.pre_ops) + self.per_step * self.steps


def _plan(steps: int, buckets: int, bucket_mb: float, step_s: float, fault: str | None,
          fault_step: int | None) -> _Plan:
    numel = int(bucket_mb * 1024 * 1024) // 4
    total_params = numel * buckets - numel // 3  # last bucket is partial, as in DDP
    step_ops: list[tuple[str, int, int]] = []
    left = total_params
    for _ in range(buckets):
        step_ops.append(("AllReduce", min(numel, left), FLOAT32))
        left -= numel
    step_ops.append(("AllReduce", 1, FLOAT32))  # loss
    pre_ops = [("AllGather", 1, 4), ("Broadcast", min(total_params, 62_914_560), FLOAT32)]
    stuck_seq = None
    if fault in (FaultKind.HANG, FaultKind.CRASH, FaultKind.DESYNC):
        stuck_seq = len(pre_ops) + cast(int, fault_step) * len(step_ops) + 1
    # enqueue times (us since T0) of each position: init takes ~4 s, then steps
    init_us = 4_000_000
    t_pre = np.array([init_us + 200_000, init_us + 400_000], dtype=np.int64)
    within = np.array([int(step_s * 1e6 * 0.55 * (j + 1) / buckets) for j in range(buckets)] + [int(step_s * 0.95e6)],
                      dtype=np.int64)
    step_base = init_us + 1_000_000 + np.arange(steps, dtype=np.int64) * int(step_s * 1e6)
    t_plan = np.concatenate([t_pre, (step_base[:, None] + within[None, :]).ravel()])
    return _Plan(pre_ops, step_ops, steps, t_plan, stuck_seq)


@dataclass(frozen=True)
class _Fault:
    kind: FaultKind | None
    rank: int | None
    step: int | None
    straggle_s: float
    lag: int
    scatter: int


def generate_run(  # one writer, every knob a keyword
    dest: Path | str,
    nranks: int = 64,
    steps: int = 50,
    *,
    buckets: int = 10,
    bucket_mb: float = 25.0,
    nchannels: int = 16,
    gpus_per_host: int = 8,
    fault: str | None = None,
    fault_rank: int | None = None,
    fault_step: int | None = None,
    straggle_s: float = 0.25,
    step_s: float = 0.8,
    timestamps: bool = True,
    stderr: bool = True,
    watchdog_status: bool = False,
    seed: int = 0,
    lag: int = 1,
    scatter: int = 0,
    nccl_logs: bool = True,
    old_watchdog: bool = False,
    algo: str | None = None,
    proto: str = "SIMPLE",
    busbw_gbs: float | None = None,
    env: dict[str, str] | None = None,
) -> SynthTruth:
    """Write the folder ``dest`` (created) and return its ground truth.

    ``watchdog_status`` adds PyTorch's ``failure detected by watchdog ... PG status`` line per waiting
    rank (real jobs print it); without it stderr has only the ``Watchdog caught ...`` lines. ``algo``,
    ``proto``, ``busbw_gbs`` and ``env``: the performance knobs (module docstring); ``busbw_gbs`` is for runs
    that complete (no fault, or a straggler).
    """
    if fault not in FAULTS:
        raise ValueError(f"fault must be one of {FAULTS}")
    if nranks < 2:
        raise ValueError("nranks must be at least 2")
    if busbw_gbs is not None and (fault not in (None, FaultKind.STRAGGLER) or not busbw_gbs > 0):
        raise ValueError("busbw_gbs: a positive bandwidth, for a run without a fault or with a straggler")
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if fault is not None:
        fault_rank = nranks // 2 + 3 if fault_rank is None else fault_rank
        fault_rank %= nranks
        fault_step = max(1, steps * 2 // 3) if fault_step is None else fault_step
        fault_step = min(max(fault_step, 0), steps - 1)
    lay = _layout(nranks, gpus_per_host, nchannels, rng)
    plan = _plan(steps, buckets, bucket_mb, step_s, fault, fault_step)
    flt = _Fault(None if fault is None else FaultKind(fault), fault_rank, fault_step, straggle_s, lag, scatter)
    total_lines = total_bytes = files = 0
    perf = _Perf(algo, proto, dict(env or {}))
    for r in range(nranks):
        body = _rank_log(lay, plan, flt, r, rng, nprng, timestamps, perf)
        if not nccl_logs:
            continue
        data = "".join(body).encode()
        (dest / f"{lay.hostname[lay.node_of[r]]}.{lay.pids[r]}.nccl.log").write_bytes(data)
        files += 1
        total_lines += len(body)
        total_bytes += len(data)
    nccl_lines = total_lines
    if busbw_gbs is not None:
        for r, text in enumerate(_hook_files(lay, plan, flt, busbw_gbs, perf.env)):
            data = text.encode()
            (dest / f"ncclscope-rank{r}.jsonl").write_bytes(data)
            files += 1
            total_lines += text.count("\n")
            total_bytes += len(data)
    if stderr:
        text = _stderr(fault, fault_rank, nranks, lay.pids, lay.hostname, lay.node_of, gpus_per_host, plan.stuck_seq,
                       plan.per_step, watchdog_status, plan.step_ops, old_watchdog)
        if text:
            data = text.encode()
            (dest / "stderr.log").write_bytes(data)
            files += 1
            total_lines += text.count("\n")
            total_bytes += len(data)

    verdict = {None: "healthy", "hang": "hang", "crash": "crash", "desync": "desync", "straggler": "degraded"}[fault]
    return SynthTruth(dest, nranks, lay.nnodes, nchannels, fault, verdict,
                      (cast(int, fault_rank),) if fault is not None else (), plan.stuck_seq, lay.comm_id, total_lines,
                      nccl_lines, total_bytes, files, steps, plan.per_step, lay.rings)


def _issued(plan: _Plan, flt: _Fault, r: int, rng: random.Random) -> int:
    """How many of the planned collectives rank ``r`` issues."""
    n_issue = plan.n_total
    if flt.kind == FaultKind.HANG:
        n_issue = cast(int, plan.stuck_seq) - max(1, flt.lag) if r == flt.rank else cast(int, plan.stuck_seq)
    elif flt.kind == FaultKind.CRASH:
        n_issue = cast(int, plan.stuck_seq) - 1 if r == flt.rank else cast(int, plan.stuck_seq)
    elif flt.kind == FaultKind.DESYNC:
        n_issue = cast(int, plan.stuck_seq)
    if flt.scatter and flt.kind is None:
        n_issue -= rng.randrange(0, flt.scatter + 1)
    return n_issue


@dataclass(frozen=True)
class _Perf:
    """What NCCL prints of its choices and settings (``algo`` None: no TUNING lines)."""

    algo: str | None
    proto: str
    env: dict[str, str]


def _rank_log(lay: _Layout, plan: _Plan, flt: _Fault, r: int, rng: random.Random, nprng: np.random.Generator,
              timestamps: bool, perf: _Perf = _Perf(None, "SIMPLE", {})) -> list[str]:
    """The lines of rank ``r``'s NCCL log: init, its first collective, its connections, the rest."""
    n = lay.node_of[r]
    local = r - lay.hosts[n][0]
    pid = lay.pids[r]
    pre = f"{lay.hostname[n]}:{pid}:{pid} [{local}] NCCL INFO "
    comm = f"0x{rng.randrange(0x55d0_0000_0000, 0x55ff_ffff_ffff):x}"
    stream = f"0x{rng.randrange(0x55d0_0000_0000, 0x55ff_ffff_ffff):x}"
    bufbase = 0x7F00_0000_0000 + rng.randrange(0, 0xF0) * 0x1_0000_0000
    n_issue = _issued(plan, flt, r, rng)
    jitter = nprng.integers(0, 2_000, size=n_issue, dtype=np.int64)
    t_rank = plan.t_plan[:n_issue] + jitter + r * 3
    if flt.kind == FaultKind.STRAGGLER and r == flt.rank:
        t_rank[len(plan.pre_ops):] += int(flt.straggle_s * 1e6)
    init_t = T0_US + local * 40 + np.arange(0, 400, dtype=np.int64) * 900
    it = iter(_ts_strings(init_t) if timestamps else [""] * 400)
    lines = [f"{next(it)}{pre}{msg}\n" for msg in _init_messages(lay, r, comm, perf.env)]
    ts = _ts_strings(T0_US + t_rank) if timestamps else [""] * n_issue
    coll = _coll_lines(lay, plan, flt, r, pre, comm, stream, bufbase, ts, n_issue)
    if perf.algo is not None and r == 0:  # NCCL prints its TUNING line on rank 0, after the COLL line
        coll = [x for pair in zip(coll, _tuning_lines(lay, plan, pre, ts, n_issue, perf), strict=True) for x in pair]
    cut = min(1, n_issue)
    return lines + coll[:cut] + [f"{ts[0] if ts else ''}{pre}{x}\n" for x in _conn_lines(lay, r)] + coll[cut:]


def _init_messages(lay: _Layout, r: int, comm: str, env: dict[str, str] | None = None) -> list[str]:
    n = lay.node_of[r]
    local = r - lay.hosts[n][0]
    nranks, nchannels = lay.nranks, lay.nchannels
    dev = f"cudaDev {local} nvmlDev {local} busId {BUS_IDS[local % 8]} commId {lay.comm_id}"
    out = ["cudaDriverVersion 12090", f"Bootstrap: Using ib0:10.{n // 250}.{n % 250}.{10 + local}<0>",
           f"NCCL version {NCCL_VERSION}", "Comm config Blocking set to 1", "NCCL_SOCKET_IFNAME set by environment to ib0",
           "NCCL_IB_HCA set by environment to mlx5", "NCCL_IB_TIMEOUT set by environment to 22.",
           *(f"{k} set by environment to {v}" for k, v in sorted((env or {}).items())),
           "NET/Plugin: Could not find: libnccl-net.so",
           "NET/IB : Using " + " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(lay.g))
           + f" [RO]; OOB ib0:10.{n // 250}.{n % 250}.{10 + local}<0>",
           "Initialized NET plugin IB", "Assigned NET plugin IB to comm", "Using network IB",
           f"ncclCommInitRankConfig comm {comm} rank {r} nranks {nranks} {dev} - Init START",
           "NCCL_NVLS_ENABLE set by environment to 0.",
           f"Pattern 4, crossNic 0, nChannels {nchannels}, bw 40.000000/40.000000, type NVL/PIX, sameChannels 1",
           f"Pattern 1, crossNic 0, nChannels {nchannels}, bw 80.000000/40.000000, type NVL/PIX, sameChannels 0",
           f"comm {comm} rank {r} nRanks {nranks} nNodes {lay.nnodes} localRanks {len(lay.hosts[n])} "
           f"localRank {local} MNNVL 0"]
    if r == 0:
        out += [_dump_line(f"Channel {c:02d}/{nchannels:02d} :", lay.rings[c], nranks) for c in range(nchannels)]
    out += [f"Ring {c:02d} : {lay.prevs[c][r]} -> {r} -> {lay.nexts[c][r]}" for c in range(nchannels)]
    parts = []
    for c in range(nchannels):
        downs, up = lay.trees[c][r]
        d = (downs + [-1, -1, -1])[:3]
        parts.append(f"[{c}] {d[0]}/{d[1]}/{d[2]}->{r}->{up}")
    out += ["Trees " + " ".join(parts), "P2P Chunksize set to 524288", "PROFILER/Plugin: Could not find: libnccl-profiler.so",
            "Check P2P Type isAllDirectP2p 0 directMode 0 isAllCudaP2p 1", "threadThresholds 8/8/64 | 1024/8/64 | 512 | 512",
            f"{nchannels} coll channels, {nchannels} collnet channels, 0 nvls channels, 32 p2p channels, "
            "32 p2p channels per peer", "CC Off, workFifoBytes 1048576",
            f"ncclCommInitRankConfig comm {comm} rank {r} nranks {nranks} {dev} - Init COMPLETE",
            f"Init timings - ncclCommInitRankConfig: rank {r} nranks {nranks} total 3.21 (kernels 0.41, alloc 0.02, "
            "bootstrap 1.62, allgathers 0.21, topo 0.55, graphs 0.03, connections 0.33, rest 0.04)"]
    return out


def _conn_lines(lay: _Layout, r: int) -> list[str]:
    """Ring connections, printed with the first collective (runtime connect): NVLink P2P inside a host,
    IB [send] / [receive] between hosts."""
    n, g = lay.node_of[r], lay.g
    local = r - lay.hosts[n][0]
    out: list[str] = []
    for c in range(lay.nchannels):
        nx, pv = lay.nexts[c][r], lay.prevs[c][r]
        if lay.node_of[nx] == n:
            out.append(f"Channel {c:02d}/0 : {r}[{local}] -> {nx}[{nx % g}] via P2P/CUMEM/read")
        else:
            out.append(f"Channel {c:02d}/0 : {r}[{local}] -> {nx}[{nx % g}] [send] via NET/IB/{local}/GDRDMA")
        if lay.node_of[pv] != n:
            out.append(f"Channel {c:02d}/0 : {pv}[{pv % g}] -> {r}[{local}] [receive] via NET/IB/{local}/GDRDMA")
    return out + ["Connected all rings, use ring PXN 0 GDR 1", "Connected all trees"]


def _coll_lines(lay: _Layout, plan: _Plan, flt: _Fault, r: int, pre: str, comm: str, stream: str, bufbase: int,
                ts: list[str], n_issue: int) -> list[str]:
    nranks, step_ops, pre_ops = lay.nranks, plan.step_ops, plan.pre_ops
    bufs = [f"0x{bufbase + j * 0x6400000:x}" for j in range(plan.per_step)]
    tails_step = [f" sendbuff {bufs[j]} recvbuff {bufs[j]} count {cnt} datatype {dt} op 0 root 0 comm {comm} "
                  f"[nranks={nranks}] stream {stream}\n" for j, (_op, cnt, dt) in enumerate(step_ops)]
    heads_step = [f"{pre}{op}: opCount " for op, _c, _d in step_ops]
    heads = [f"{pre}{op}: opCount " for op, _c, _d in pre_ops] + heads_step * plan.steps
    tails = [(f" sendbuff 0x{bufbase - 0x1000:x} recvbuff 0x{bufbase - 0x800:x} count 1 datatype 4 op 0 "
             f"root 0 comm {comm} [nranks={nranks}] stream {stream}\n"),
             (f" sendbuff 0x{bufbase - 0x400000000:x} recvbuff 0x{bufbase - 0x400000000:x} count "
             f"{pre_ops[1][1]} datatype 7 op 0 root 0 comm {comm} [nranks={nranks}] stream {stream}\n")]
    tails += tails_step * plan.steps
    if flt.kind == FaultKind.DESYNC and r == flt.rank:
        k = cast(int, plan.stuck_seq) - 1
        heads[k] = f"{pre}AllGather: opCount "
        tails[k] = tails[k].replace(f" count {step_ops[0][1]} ", f" count {step_ops[0][1] // nranks + 7} ")
    return [f"{ts[i]}{heads[i]}{i:x}{tails[i]}" for i in range(n_issue)]


def _op_sizes(plan: _Plan) -> list[tuple[str, int, int]]:
    """(NCCL op name, bytes, datatype) of every planned collective, in order."""
    ops = plan.pre_ops + plan.step_ops * plan.steps
    return [(op, cnt * DTYPE_BYTES[dt], dt) for op, cnt, dt in ops]


def _tuning_lines(lay: _Layout, plan: _Plan, pre: str, ts: list[str], n_issue: int, perf: _Perf) -> list[str]:
    """NCCL's TUNING line of each collective rank 0 issues (2.19+ form), LL below ``LL_BELOW`` bytes."""
    hi = lay.nchannels - 1
    out = []
    for i, (op, nbytes, _dt) in enumerate(_op_sizes(plan)[:n_issue]):
        p = "LL" if nbytes < LL_BELOW else perf.proto
        out.append(f"{ts[i]}{pre}{op}: {nbytes} Bytes -> Algo {perf.algo} proto {p} channel{{Lo..Hi}}={{0..{hi}}}\n")
    return out


def _hook_files(lay: _Layout, plan: _Plan, flt: _Fault, busbw_gbs: float, env: dict[str, str]) -> list[str]:
    """Each rank's hook records (``analyzer/hook/records.py``'s layout): every collective of the plan reaches
    ``busbw_gbs`` on the rank that arrived last (time = bytes x busbw factor / busbw, plus ``LATENCY_US``); the
    others' durations include their wait for it. Arrival: the plan's time, 3 us apart per rank, the straggler's
    late by ``straggle_s`` after the set-up collectives."""
    n = lay.nranks
    sizes = _op_sizes(plan)
    ops = [canonical_op(op) for op, _b, _d in sizes]
    transfer_us = np.array([b * busbw_factor(op, n) / (busbw_gbs * 1e3) + LATENCY_US
                            for op, (_o, b, _d) in zip(ops, sizes, strict=True)])
    arrive = plan.t_plan[None, :] + np.arange(n, dtype=np.int64)[:, None] * 3
    if flt.kind == FaultKind.STRAGGLER:
        arrive[cast(int, flt.rank), len(plan.pre_ops):] += int(flt.straggle_s * 1e6)
    end = arrive.max(axis=0) + transfer_us
    out = []
    for r in range(n):
        t = (T0_US + arrive[r]) / 1e6
        t_end = (T0_US + end) / 1e6
        dur_ms = (end - arrive[r]) / 1e3
        lines = [json.dumps({"type": "start", "t": T0_US / 1e6 + 3.9, "rank": r, "world": n, "local_rank": r % lay.g,
                             "host": lay.hostname[lay.node_of[r]], "pid": lay.pids[r], "backend": "nccl",
                             "torch": "2.9.1", "nccl": NCCL_VERSION.split("+")[0], "cuda": "12.9", "env": env},
                            separators=(",", ":")) + "\n"]
        for i, (op, (_o, nbytes, dt)) in enumerate(zip(ops, sizes, strict=True)):
            lines.append(f'{{"type":"coll","t":{t[i]:.6f},"rank":{r},"pg":"0","seq":{i + 1},"op":"{op}",'
                         f'"numel":{nbytes // DTYPE_BYTES[dt]},"dtype":"{DTYPE_NAMES[dt]}","bytes":{nbytes},'
                         f'"where":"train.py:{120 + i % plan.per_step} in train_step"}}\n')
            lines.append(f'{{"type":"done","t":{t_end[i]:.6f},"rank":{r},"pg":"0","seq":{i + 1},'
                         f'"dur_ms":{dur_ms[i]:.3f},"how":"event"}}\n')
        lines.append(f'{{"type":"exit","t":{t_end[-1] + 0.5:.6f},"rank":{r},"code":0}}\n')
        out.append("".join(lines))
    return out


def _ts_strings(us: np.ndarray) -> list[str]:
    """``[%F %T.%6f] `` prefixes for microsecond timestamps, vectorised."""
    s = np.datetime_as_string(us.astype("datetime64[us]"), unit="us")
    return ["[" + x[:10] + " " + x[11:] + "] " for x in s.tolist()]


def _stderr(fault: str | None, culprit: int | None, nranks: int, pids: list[int], hostname: list[str],
            node_of: list[int], g: int, stuck_seq: int | None, per_step: int, watchdog_status: bool,
            step_ops: list[tuple[str, int, int]], old_watchdog: bool = False) -> str:
    out = ["*****************************************\n",
           ("Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
           "system being overloaded, please further tune the variable for optimal performance in your "
           "application as needed. \n"), "*****************************************\n"]
    if fault is None or fault == FaultKind.STRAGGLER:
        return "".join(out)
    numel = step_ops[0][1]
    if fault in (FaultKind.HANG, FaultKind.DESYNC):
        waiting = [r for r in range(nranks) if fault == "desync" or r != culprit]
        for r in waiting:
            if old_watchdog:  # PyTorch 1.13 / 2.0: no rank prefix, no sizes, no PG status
                out.append(f"[E ProcessGroupNCCL.cpp:828] [Rank {r}] Watchdog caught collective operation timeout: "
                           f"WorkNCCL(SeqNum={stuck_seq}, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for "
                           f"{1800000 + 37 * r + 11} milliseconds before timing out.\n")
                continue
            out.append(f"[rank{r}]:[E1129 19:37:35.{564976 + r:06d}045 ProcessGroupNCCL.cpp:689] [Rank {r}] Watchdog "
                       f"caught collective operation timeout: WorkNCCL(SeqNum={stuck_seq}, OpType=ALLREDUCE, "
                       f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for 600035 milliseconds before "
                       "timing out.\n")
            if watchdog_status:
                out.append(f"[rank{r}]:[E1129 19:37:35.{565207 + r:06d}099 ProcessGroupNCCL.cpp:2303] [PG ID 0 PG GUID "
                           f"0(default_pg) Rank {r}]  failure detected by watchdog at work sequence id: {stuck_seq} "
                           f"PG status: last enqueued work: {stuck_seq}, last completed work: {stuck_seq - 1}\n")  # type: ignore[operator]
        root = waiting[0]
        root_code, root_tb = -6, f"Signal 6 (SIGABRT) received by PID {pids[root]}"
    else:  # crash
        out.append(f"[rank{culprit}]: Traceback (most recent call last):\n")
        out.append(f'[rank{culprit}]:   File "/workspace/train.py", line 88, in <module>\n')
        out.append(f"[rank{culprit}]:     loss = step(model, batch)\n")
        out.append(f"[rank{culprit}]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
        root = culprit  # type: ignore[assignment]
        root_code, root_tb = 1, "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    for r in range(nranks):
        if r != root and node_of[r] == node_of[root]:
            out.append(f"W1129 19:38:16.491000 2499 torch/distributed/elastic/multiprocessing/api.py:1012] Sending "
                       f"process {pids[r]} closing signal SIGTERM\n")
    out.append("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n")
    out.append("============================================================\n/workspace/train.py FAILED\n")
    out.append("------------------------------------------------------------\nFailures:\n")
    others = [r for r in range(nranks) if r != root]
    for i, r in enumerate(others, 1):
        out.append(f"[{i}]:\n  time      : 2026-11-29_19:38:16\n  host      : {hostname[node_of[r]]}\n"
                   f"  rank      : {r} (local_rank: {r % g})\n  exitcode  : -15 (pid: {pids[r]})\n"
                   f"  error_file: <N/A>\n  traceback : Signal 15 (SIGTERM) received by PID {pids[r]}\n")
    out.append("------------------------------------------------------------\nRoot Cause (first observed failure):\n")
    out.append(f"[0]:\n  time      : 2026-11-29_19:38:16\n  host      : {hostname[node_of[root]]}\n"
               f"  rank      : {root} (local_rank: {root % g})\n  exitcode  : {root_code} (pid: {pids[root]})\n"
               f"  error_file: <N/A>\n  traceback : {root_tb}\n")
    out.append("============================================================\n")
    return "".join(out)
