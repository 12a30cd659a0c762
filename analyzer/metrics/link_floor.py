"""What a benchmark's bus bandwidth should at least reach over the path its own log names.

A completed nccl-tests sweep is slow, not healthy, when even its best large-message busbw stays below
a conservative floor for the transport and hardware the same log shows. The facts come from the log
alone: the transport of the channels (``via NET/IB/0[/GDRDMA]``, ``P2P``, ``SHM``), ``Using network``,
the NICs NCCL lists (``NET/IB : Using [0]mlx5_0:1/IB ...``), ``NET/IB : GPU Direct RDMA Disabled for HCA`` where
no channel line says whether GDRDMA is used, the node count and the GPU of each rank's device line. No floor is given where the log does not say enough (sockets, plugins such as AWS OFI,
no transport printed, PCIe GPUs on one host).

Only rows from 32 MiB up, and from 1 MiB a rank up (a ring moves size/n a step), are judged: below that busbw
is bound by latency; of those, the three largest sizes (a sweep that collapses past some size is slow there). Where
no transport is printed at all (the table alone), nodes of HGX-class or V100 SXM2 GPUs are held, as ``possible``, to
one link of the slowest NIC such systems ship with (GB10 systems: one of the two HCAs of their QSFP port). Floors are 40% of a reference link rate, per NIC in use (``FLOOR_SHARE``). NCCL's maintainers count
about 24 GB/s busbw per 200 Gb/s NIC and 12 GB/s per 100 Gb/s NIC as the peak (NVIDIA/nccl-tests#119);
the reference rates are the slowest link each GPU class ships with:

- InfiniBand with an HGX-class GPU (A100/A800 SXM, H100/H800/H200/H20 SXM, B200/GB200): HDR 200 Gb/s,
  25 GB/s (DGX/HGX A100 and later carry HDR or faster NICs), so the floor is 10 GB/s per NIC;
- InfiniBand with a V100 SXM2: EDR 100 Gb/s, 12.5 GB/s (DGX-1V), floor 5 GB/s per NIC;
- InfiniBand with any other or unknown GPU: QDR 4x, 32 Gb/s of data, 4 GB/s, floor 1.6 GB/s per NIC;
- RoCE, or an IB-verbs network whose link layer is not printed: 10 GbE, 1.25 GB/s, floor 0.5 GB/s;
- RoCE between GB10 systems (DGX Spark class) with one HCA listed: the ConnectX-7 QSFP port of these systems shows as
  two RoCE HCAs (two PCIe x4 links), each reaching about half the port's 200 Gb/s; a run over one of them stays near
  12 GB/s busbw, over both (NCCL_IB_HCA naming both, NCCL_IB_MERGE_NICS=1) near 20 GB/s. The floor is 60% of the
  port (``GB10_PORT_SHARE``), above what one HCA can carry;
- NVLink on one host of SXM GPUs: 40 GB/s busbw for A100/A800 (40% of the 100 GB/s a pair of 4-GPU
  HGX A100 boards share), 60 GB/s for H100 and later. PCIe Gen4/Gen5 P2P and SHM stay below these.

A collective that rings through every NIC of a node (all-reduce, all-gather, reduce-scatter: the row's
busbw/algbw factor is not 1; all-to-all left out, its busbw is bound by the fabric's congestion) is held to
the NICs a node uses: the distinct NICs its channel lines name,
or the NICs NCCL lists when a node has at least as many GPUs; any other row is held to one NIC.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..model import EventKind, Evidence, GraphSearch, LogEvent, Run
from ..sources.nccl_tests import device_gpu

FLOOR_SHARE = 0.4
TOP_SIZES = 3  # the largest sizes of a test judged (busbw rises with size: a healthy sweep peaks there)
LARGE_BYTES = 32 << 20  # rows from 32 MiB up are bandwidth-bound on every fabric the floors cover ...
PER_RANK_BYTES = 1 << 20  # ... once each rank's share of the buffer is 1 MiB or more (a ring moves size/n a step)
HGX_GPU_RE = re.compile(r"A100-SXM|A800-SXM|H100 80GB HBM3|H100-SXM|H800(?! PCIe)|H200(?! NVL)|\bH20\b|B200|GB200|B300|GB300")
H_CLASS_RE = re.compile(r"H100|H800|H200|H20\b|B200|GB200|B300|GB300")
V100_SXM_RE = re.compile(r"V100-SXM")
GB10_RE = re.compile(r"\bGB10\b")
GB10_PORT_SHARE = 0.6  # of the 200 Gb/s port: one of its two HCAs carries about half
NIC_RE = re.compile(r"\[\d{1,3}\]")  # "[0]mlx5_0:1/IB": one listed NIC ("[RO]" is a flag)


@dataclass(frozen=True, slots=True)
class LinkFacts:
    """What one run's log says about the path its collectives take."""

    nnodes: int
    world: int
    gpus: tuple[str, ...]
    network: str | None  # "IB" (any IB-verbs transport: NET/IB, NET/IBext_v8), "Socket", another plugin's name
    link_layer: str | None  # "IB", "RoCE" or None (not printed)
    nics_listed: int
    nics_used: int
    gdr: bool | None  # a network channel with /GDRDMA: True; network channels, none with it: False
    intra: tuple[str, ...]  # transports of channels inside one node (P2P/..., SHM)
    evidence: tuple[Evidence, ...]
    network_inferred: bool = False  # network "IB" from the NIC list alone (no channel or "Using network" line)
    ring_graph: GraphSearch | None = None  # NCCL's own search of the rings (pattern 4), where the algorithm may be Ring


@dataclass(frozen=True, slots=True)
class Floor:
    path: str  # "InfiniBand", "RoCE", "NVLink"
    link_gbs: float  # reference rate of one link, GB/s
    links: int
    gbs: float  # the floor itself
    reference: str
    certainty: str | None = None  # "possible": no transport printed, the GPU class's least; "likely": the network
    # is the IB transport NCCL listed its NICs for, no channel line shows it in use; None: the log names the path


def link_facts(run: Run) -> LinkFacts:
    """The facts of ``run`` the floors are judged from (pure; events and communicators only)."""
    hosts_of = {p.rank: p.host for p in run.job.processes if p.rank is not None}
    gpus: dict[str, Evidence] = {}
    gdr_vias: list[LogEvent] = []
    hca: dict[bool, LogEvent] = {}  # "NET/IB : GPU Direct RDMA Disabled / Enabled for HCA 0 'mlx5_0'"
    listed, network = 0, None
    layers: set[str] = set()
    ev: list[Evidence] = []
    for e in run.events:
        if e.kind == "RankTagged" and (gpu := device_gpu(e.text)) is not None:
            gpus.setdefault(gpu, e.evidence)
        elif e.kind == EventKind.NCCL_NET_GDR:
            gdr_vias.append(e)
        elif e.kind in (EventKind.NCCL_NET_GDR_DISABLED, EventKind.NCCL_NET_GDR_ENABLED) and "NET/IB" in e.evidence.text:
            hca.setdefault(e.kind.endswith("enabled"), e)
        elif e.kind == EventKind.NCCL_NET_IB:
            listed = max(listed, len(NIC_RE.findall(e.text.split(";", 1)[0])))
            layers |= {x for x in ("IB", "RoCE") if f"/{x}" in e.text}
            ev[:] = ev or [e.evidence]  # one NIC list as evidence, whatever the number of ranks printing it
        elif e.kind == EventKind.NCCL_NET_NETWORK and network is None:
            network = e.text.strip()
    transports = sorted({t for c in run.communicators for t in c.transports})
    net = next((t[4:] for t in transports if t.startswith("NET/")), network)
    inferred = net is None and listed > 0  # "NET/IB : Using [0]mlx5_0:1/IB ...": IB initialised, the network NCCL takes first
    net = "IB" if inferred else net
    used: dict[str | None, set[str]] = defaultdict(set)
    for e in gdr_vias:
        parts = e.text.split("/")
        if len(parts) > 2:
            used[hosts_of.get(e.rank) if e.rank is not None else None].add(parts[2])
    net_seen = net_gdr = False
    for c in run.communicators:
        for x in c.connections:
            if x.transport.startswith("NET/"):
                net_seen, net_gdr = True, net_gdr or x.gdr
    if net_seen or gdr_vias:  # the channels say what is in use (rank logs and nccl-tests'); the HCA lines what is possible
        gdr: bool | None = net_gdr or any(e.text.endswith("/GDRDMA") for e in gdr_vias)
    else:
        gdr = True if True in hca else (False if False in hca else None)
    ev += [e.evidence for e in gdr_vias[:2]] + [e.evidence for e in hca.values()][:1] + list(gpus.values())[:1]
    nnodes = max([run.job.nnodes or 0, len(run.job.hosts)] + [c.nnodes or 0 for c in run.communicators]) or 1
    world = run.job.world_size or len(hosts_of) or 1
    return LinkFacts(nnodes, world, tuple(sorted(gpus)), _network_kind(net), "RoCE" if "RoCE" in layers else (
        "IB" if layers else None), listed, max((len(v) for v in used.values()), default=0), gdr,
        tuple(t for t in transports if not t.startswith("NET/")), tuple(ev), inferred, _ring_graph(run))


RING_PATTERN = 4  # NCCL_TOPO_PATTERN_RING


def _ring_graph(run: Run) -> GraphSearch | None:
    """NCCL's search of the rings, unless ``NCCL_ALGO`` keeps the collectives off Ring (a sweep of trees or NVLS is
    not held to the rings' bandwidth)."""
    algo = run.job.settings.get("NCCL_ALGO")
    if algo is not None and "ring" not in algo.value.lower():
        return None
    return next((g for g in run.graphs if g.pattern == RING_PATTERN), None)


def _network_kind(net: str | None) -> str | None:
    if net is None:
        return None
    if net.upper().startswith("IB"):  # IB, IBext, IBext_v8: NCCL's and the HPC-X plugin's verbs transport
        return "IB"
    return net.split("/", 1)[0]


def expected_floor(f: LinkFacts, ring: bool) -> Floor | None:
    """The floor for one row of the sweep (``ring``: its collective rings through every NIC of a node),
    or None where the log does not say enough to hold it to any: the higher of the hardware's (``_net_floor``,
    ``_nvlink_floor``) and, for a ring row, that of the rings NCCL's own search built (``_graph_floor``)."""
    if f.nnodes >= 2:
        hw = _net_floor(f, ring) if f.network is not None else _unknown_net_floor(f)
    else:
        hw = _nvlink_floor(f)
    graph = _graph_floor(f) if ring else None
    if graph is not None and (hw is None or graph.gbs > hw.gbs):
        return graph
    return hw


def _graph_floor(f: LinkFacts) -> Floor | None:
    """NCCL's topology search prints the rings it built: their channels and the bandwidth of each (``Pattern 4,
    crossNic 0, nChannels 2, bw 40.000000/40.000000``); its tuning model expects a ring collective's busbw near
    channels x bandwidth (on the H200 pair of the bundled runs, 12 x 30 = 360 GB/s expected, 314 reached at
    512 MiB). A sweep below ``FLOOR_SHARE`` of it is slow by NCCL's own measure of the hardware it found, whatever the
    fabric: likely (the search's bandwidths are NCCL's estimates from the link types, not a measurement)."""
    g = f.ring_graph
    if g is None or g.capacity <= 0:
        return None
    bw = min(g.bw_intra, g.bw_inter)
    return Floor("the rings NCCL built", bw, g.nchannels, round(FLOOR_SHARE * g.capacity, 2),
                 f"NCCL's own search of the rings: {g.nchannels} channels of {bw:g} GB/s ({g.capacity:g} GB/s)",
                 certainty="likely")


def _unknown_net_floor(f: LinkFacts) -> Floor | None:
    """Nodes of HGX-class or V100 SXM2 GPUs whose log prints no transport (the table alone, no NCCL debug lines):
    one link of the slowest NIC such systems ship with, whatever the number of NICs; the rows of every collective
    are held to it, uncertain (the network could be a slower one NCCL was left to fall back on)."""
    if not f.gpus or f.intra:
        return None  # no GPU named, or channel lines that print no network: not a table alone
    if all(HGX_GPU_RE.search(g) for g in f.gpus):
        rate, why = 25.0, "one HDR 200 Gb/s link, the slowest NIC of HGX-class systems; the transport is not printed"
    elif all(V100_SXM_RE.search(g) for g in f.gpus):
        rate, why = 12.5, "one EDR 100 Gb/s link, the NIC of V100 SXM2 systems; the transport is not printed"
    elif all(GB10_RE.search(g) for g in f.gpus):
        rate, why = 12.5, ("one of the two RoCE HCAs (about half the port each) of the 200 Gb/s QSFP port of GB10 "
                           "systems; the transport is not printed")
    else:
        return None
    return Floor("an unknown inter-node transport", rate, 1, round(FLOOR_SHARE * rate, 2), why, certainty="possible")


def _net_floor(f: LinkFacts, ring: bool) -> Floor | None:
    if f.network != "IB":
        return None
    if f.link_layer == "RoCE" and f.nics_listed == 1 and f.gpus and all(GB10_RE.search(g) for g in f.gpus):
        return Floor("RoCE", 25.0, 1, round(GB10_PORT_SHARE * 25.0, 2), "the 200 Gb/s QSFP port of GB10 systems, which "
                     "shows as two RoCE HCAs: one HCA listed carries about half of it", certainty=None)
    per_node = max(1, math.ceil(f.world / f.nnodes))
    links = max(f.nics_used, min(f.nics_listed, per_node), 1) if ring else 1
    if f.link_layer == "IB" and f.gpus and all(HGX_GPU_RE.search(g) for g in f.gpus):
        rate, path, why = 25.0, "InfiniBand", "HDR 200 Gb/s, the slowest NIC of HGX-class systems"
    elif f.link_layer == "IB" and f.gpus and all(V100_SXM_RE.search(g) for g in f.gpus):
        rate, path, why = 12.5, "InfiniBand", "EDR 100 Gb/s, the NIC of V100 SXM2 systems"
    elif f.link_layer == "IB":
        rate, path, why = 4.0, "InfiniBand", "QDR 4x (32 Gb/s of data), the slowest InfiniBand in use"
    else:
        rate, path, why = 1.25, "RoCE" if f.link_layer == "RoCE" else "an IB-verbs network", "10 GbE"
    return Floor(path, rate, links, round(FLOOR_SHARE * rate * links, 2), why,
                 certainty="likely" if f.network_inferred else None)


def _nvlink_floor(f: LinkFacts) -> Floor | None:
    if f.world < 2 or not f.gpus or not all(HGX_GPU_RE.search(g) for g in f.gpus):
        return None
    if any(t.startswith("NET/") for t in f.intra):
        return None  # the transport detector's finding: the network between GPUs of one host
    if all(H_CLASS_RE.search(g) for g in f.gpus):
        return Floor("NVLink", 150.0, 1, 60.0, "NVLink 4 or later between SXM GPUs of one host")
    return Floor("NVLink", 100.0, 1, 40.0, "NVLink 3 between A100/A800 SXM GPUs of one host")


def is_ring_row(row: dict[str, Any]) -> bool:
    """All-reduce, all-gather, reduce-scatter: nccl-tests' busbw factor (busbw / algbw) is not 1."""
    a, b = float(row.get("algbw") or 0), float(row.get("busbw") or 0)
    return a > 0 and abs(b / a - 1.0) > 0.05


@dataclass(frozen=True, slots=True)
class SlowSweep:
    """A sweep whose best large-message busbw stays under its floor."""

    floor: Floor
    best: float
    rows: tuple[dict[str, Any], ...]  # the large rows, largest last


def judged_sweeps(rows: Sequence[dict[str, Any]], facts: LinkFacts) -> list[SlowSweep]:
    """Each test of the sweep (by name; an unnamed table is one test) with large rows and a floor for its path, with
    its best large-message busbw; tests without rows of ``LARGE_BYTES`` and ``PER_RANK_BYTES`` a rank or more (at
    512 ranks: 512 MiB) are not judged, their busbw is still latency-bound."""
    least = max(LARGE_BYTES, PER_RANK_BYTES * facts.world)
    by_test: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if int(r.get("size") or 0) >= least:
            by_test[r.get("test")].append(r)
    out = []
    for test, large in by_test.items():
        # all-to-all: congestion-bound; an all-reduce of two ranks has a busbw factor of 1 (2(n-1)/n), as an unnamed
        # table of two ranks may be one
        ring = "alltoall" not in str(test or "") and (any(is_ring_row(r) for r in large) or (
            facts.world == 2 and (test is None or "all_reduce" in str(test))))
        floor = expected_floor(facts, ring)
        if floor is None:
            continue
        top = sorted({int(r["size"]) for r in large})[-TOP_SIZES:]  # a sweep that collapses past some size is judged there
        judged = sorted((r for r in large if int(r["size"]) >= top[0]), key=lambda r: int(r["size"]))
        out.append(SlowSweep(floor, max(float(r.get("busbw") or 0) for r in judged), tuple(judged)))
    return out


def slow_sweeps(rows: Sequence[dict[str, Any]], facts: LinkFacts) -> list[SlowSweep]:
    """The judged tests (``judged_sweeps``) whose best large-message busbw stays below the floor of their path."""
    return [s for s in judged_sweeps(rows, facts) if s.best < s.floor.gbs]


def sweep_meets_floor(rows: Sequence[dict[str, Any]], facts: LinkFacts) -> bool:
    """A sweep was judged against the floor of its path and every judged test reached it: the measured rate, which
    outranks a guess from the transport's name (``detectors.slow_transport``)."""
    judged = judged_sweeps(rows, facts)
    return bool(judged) and all(s.best >= s.floor.gbs for s in judged)


def per_size(rows: Iterable[dict[str, Any]]) -> list[tuple[int, float]]:
    """(size, best busbw of its out-of-place and in-place rows), by size."""
    best: dict[int, float] = {}
    for r in rows:
        s = int(r["size"])
        best[s] = max(best.get(s, 0.0), float(r.get("busbw") or 0))
    return sorted(best.items())
