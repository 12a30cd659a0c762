"""A slower transport than the hardware offers (``rules.transport_fit``): sockets between nodes that have an RDMA
fabric, shared memory or no P2P between GPUs of one node that have NVLink. Degraded: the run works, slowly.

Inputs: the path facts of ``metrics.link_floor`` (nodes, the network in use, transports inside a node, GPU models),
the NCCL settings the run sets, NCCL's network lines (``NET/IB : No device found``, the bootstrap and socket
interfaces, the IB NICs it listed, NVLS set-up) and rows of ``nvidia-smi topo -m`` pasted in a log."""
from __future__ import annotations

import re

from ..metrics.link_floor import HGX_GPU_RE, LinkFacts, link_facts, sweep_meets_floor
from ..model import EventKind, Evidence, Finding, FindingKind, LogEvent, Run, Severity, Verdict
from ..rules.transport_fit import PathFacts, slow_path

IB_IFACE_RE = re.compile(r"(?:^|\]|\s)(?P<i>ib[a-z]{0,3}\d[\w.]{0,20}):")  # IPoIB: ib0, ibp12s0, ibs85f0
RDMA_PLUGIN_RE = re.compile(r"(?i)Loaded (?:net|coll) plugin .{0,40}(?:RDMA|IB|SHARP)|IBext|rdma_sharp")
NIC_LISTED_RE = re.compile(r"\[\d{1,3}\]")
MOST_EVIDENCE = 4


def detect(run: Run) -> list[Finding]:
    lf = link_facts(run)
    settings = {k: s.value for k, s in run.job.settings.items()}
    ib, ib_ev = _ib_signs(run, settings)
    nv, sure, nv_ev = _nvlink_signs(run, lf.gpus)
    absent, absent_ev = _rdma_absent(run)
    gdr_signs, gdr_ev = _gdr_signs(run, lf)
    nnodes = lf.nnodes if lf.nnodes >= 2 else _net_to_unseen(run, lf)
    per_node = lf.world // nnodes if lf.world >= nnodes >= 2 and run.job.world_size else 0
    s = slow_path(PathFacts(nnodes, lf.network, ib, lf.intra, nv, sure, settings, absent, per_node, lf.gdr,
                            gdr_signs, _own_gpu_only(run)))
    if s is None or (s.used.startswith("NET/IB") and run.nccl_tests and sweep_meets_floor(run.nccl_tests, lf)):
        return []  # InfiniBand without GPU Direct RDMA whose measured busbw reaches the path's floor: not slow
    where = "between the nodes" if s.used.startswith("NET/") else "between the GPUs of the node"
    path = s.used.split(" ", 1)[0]
    ib_ev = ib_ev + (absent_ev if s.used == "NET/Socket" else gdr_ev if s.used.startswith("NET/IB") else [])
    behind = f"; the setting behind it: {s.setting}" if s.setting else ""
    ev = _path_lines(run, path) + ib_ev + nv_ev + _setting_lines(run, s.setting)
    return [Finding(
        kind=FindingKind.TRANSPORT, severity=Severity.WARNING, verdict=Verdict.DEGRADED,
        message=f"NCCL runs over {s.used} {where} where the hardware offers {s.instead} ({s.why}){behind}: the "
        "collectives run at a fraction of the fabric's rate", hint=s.fix, evidence=tuple(_dedupe(ev))[:MOST_EVIDENCE + 2],
        data={"transports": [path], "settings": [s.setting.split("=", 1)[0]] if s.setting else [],
              "certainty": {"level": s.level, "why": s.why[:300]}})]


def _ib_signs(run: Run, settings: dict[str, str]) -> tuple[tuple[str, ...], list[Evidence]]:
    signs: list[str] = []
    ev: list[Evidence] = []
    if "NCCL_IB_HCA" in settings:
        signs.append(f"NCCL_IB_HCA={settings['NCCL_IB_HCA']} is set")
        ev += _setting_lines(run, "NCCL_IB_HCA")
    if settings.get("NCCL_IB_DISABLE", "").strip() == "0":
        signs.append("NCCL_IB_DISABLE=0 is set")
    # a list of NICs ("[0]mlx5_0:1/IB"), not NCCL 2.2's "Using interface eth0 for sideband communication", printed
    # before it looks for a device
    listed = next((e for e in run.events if e.kind == EventKind.NCCL_NET_IB and NIC_LISTED_RE.search(e.text)), None)
    if listed is not None:
        signs.append("NCCL listed InfiniBand NICs")
        ev.append(listed.evidence)
    plugin = next((e for e in run.events if e.kind == EventKind.NCCL_NET_PLUGIN and RDMA_PLUGIN_RE.search(e.text)), None)
    if plugin is not None:
        signs.append("an RDMA network plugin is loaded")
        ev.append(plugin.evidence)
    iface = next((e for e in run.events if e.kind in (EventKind.NCCL_NET_BOOTSTRAP, EventKind.NCCL_NET_SOCKET)
                  and IB_IFACE_RE.search(e.text)), None)
    if iface is not None and (m := IB_IFACE_RE.search(iface.text)) is not None:
        signs.append(f"the hosts talk over the IPoIB interface {m.group('i')}")
        ev.append(iface.evidence)
    none_found = next((e for e in run.events if e.kind == EventKind.NCCL_NET_NO_IB), None)
    if signs and none_found is not None:
        signs.append("NCCL found no IB device (NET/IB : No device found)")
        ev.append(none_found.evidence)
    return tuple(signs), ev


def _net_to_unseen(run: Run, lf: LinkFacts) -> int:
    """2 where the log shows one host whose ranks reach others over the network (``via NET/Socket/0`` channels) in
    a world larger than the ranks it shows, or, before any channel (an init that never completed), one host that
    shows ranks 0 to k-1 of a world of two or more such hosts and the network NCCL chose: the peers are on another
    node (one machine's log of a multi-node job); else the node count of ``lf``."""
    net = any(t.startswith("NET/") for c in run.communicators for t in c.transports)
    seen = {p.rank for p in run.job.processes if p.rank is not None}
    if net and len(run.job.hosts) <= 1 and seen and lf.world > len(seen):
        return 2
    # no channel yet (an init that never completed): the host's ranks are 0..k-1 of a world of whole hosts of k
    k = len(seen)
    whole = k >= 2 and seen == set(range(k)) and lf.world >= 2 * k and lf.world % k == 0
    return 2 if whole and lf.network is not None and len(run.job.hosts) == 1 else lf.nnodes


def _rdma_absent(run: Run) -> tuple[tuple[str, ...], list[Evidence]]:
    """NCCL could not even look for an RDMA device: libibverbs not loadable (an image without rdma-core). NCCL's
    ``NET/IB : No device found`` alone is no sign: hosts without any RDMA NIC print it too."""
    verbs = next((e for e in run.events if "libibverbs" in e.text and "Failed to open" in e.text), None)
    if verbs is None:
        return (), []
    return ("libibverbs could not be opened (Failed to open libibverbs.so), so NCCL could not look for RDMA NICs",), \
        [verbs.evidence]


def _gdr_signs(run: Run, lf: LinkFacts) -> tuple[tuple[str, ...], list[Evidence]]:
    """Why the nodes are built for GPUDirect RDMA: HGX-class GPUs, or as many RDMA NICs as GPUs on a node."""
    signs: list[str] = []
    ev: list[Evidence] = []
    if lf.gpus and all(HGX_GPU_RE.search(g) for g in lf.gpus):
        signs.append(f"the GPUs are {lf.gpus[0]}, whose nodes are built for GPUDirect RDMA")
    per_node = lf.world // lf.nnodes if lf.nnodes else 0
    if lf.nics_listed >= 2 and per_node >= 2 and lf.nics_listed >= per_node:
        signs.append(f"NCCL lists {lf.nics_listed} RDMA NICs for the {per_node} GPUs of a node, one a GPU (a GPUDirect "
                     "RDMA design)")
    off = next((e for e in run.events if e.kind == EventKind.NCCL_NET_GDR_DISABLED), None)
    if signs and off is not None:
        signs.append("NCCL says GPU Direct RDMA is disabled for the NICs")
        ev.append(off.evidence)
    ev += list(lf.evidence[:1])
    return tuple(signs), ev


def _own_gpu_only(run: Run) -> bool:
    """Two or more ranks on one host, every one on cudaDev 0 with bus ids of its own: each sees only its GPU."""
    procs = [p for p in run.job.processes if p.rank is not None and p.cuda_dev is not None and p.bus_id]
    hosts = {p.host for p in procs}
    return (len(procs) >= 2 and len(hosts) == 1 and all(p.cuda_dev == 0 for p in procs)
            and len({p.bus_id for p in procs}) == len(procs))


def _nvlink_signs(run: Run, gpus: tuple[str, ...]) -> tuple[tuple[str, ...], bool, list[Evidence]]:
    rows = [e for e in run.events if e.kind == EventKind.GPU_LINKS]
    nv_rows = [e for e in rows if int(e.data.get("nvlink_peers") or 0) > 0]
    if nv_rows:
        e = nv_rows[0]
        return ((f"nvidia-smi topo -m shows NVLink from GPU{e.data.get('gpu')} to {e.data.get('nvlink_peers')} of its "
                 f"{e.data.get('peers')} peers",), True, [e.evidence])
    if rows:
        return (), False, []  # the matrix is there and shows no NVLink: PCIe GPUs, SHM is their path
    nvls = next((e for e in run.events if e.kind == EventKind.NCCL_NET_NVLS and _nvls_on(e)), None)
    if nvls is not None:
        return ("NCCL set up NVLink SHARP (NVLS) on these GPUs",), True, [nvls.evidence]
    if gpus and all(HGX_GPU_RE.search(g) for g in gpus):
        return (f"the GPUs are {gpus[0]}, an SXM part of NVLink boards",), False, []
    return (), False, []


def _nvls_on(e: LogEvent) -> bool:
    return "not available" not in e.text and "disabled" not in e.text.lower()


def _path_lines(run: Run, used: str) -> list[Evidence]:
    """The first line that shows the slow transport in use: a channel line, else "Using network Socket"."""
    for c in run.communicators:
        for t, line in c.transport_lines.items():
            if t.startswith(used.split("/", 1)[0] if used != "NET/Socket" else "NET/Socket"):
                return [line]
    using = next((e for e in run.events if e.kind == EventKind.NCCL_NET_NETWORK and e.text.strip().startswith(used[4:] or used)),
                 None)
    return [using.evidence] if using is not None else []


def _setting_lines(run: Run, setting: str | None) -> list[Evidence]:
    name = setting.split("=", 1)[0] if setting else None
    s = run.job.settings.get(name) if name else None
    return [s.evidence] if s is not None and s.evidence is not None else []


def _dedupe(evs: list[Evidence]) -> list[Evidence]:
    seen: set[tuple[str, int]] = set()
    out = []
    for e in evs:
        if (e.file, e.line) not in seen:
            seen.add((e.file, e.line))
            out.append(e)
    return out
