"""A slower transport than the hardware offers (``rules.transport_fit``): sockets between nodes that have an RDMA
fabric, shared memory or no P2P between GPUs of one node that have NVLink. Degraded: the run works, slowly.

Inputs: the path facts of ``metrics.link_floor`` (nodes, the network in use, transports inside a node, GPU models),
the NCCL settings the run sets, NCCL's network lines (``NET/IB : No device found``, the bootstrap and socket
interfaces, the IB NICs it listed, NVLS set-up) and rows of ``nvidia-smi topo -m`` pasted in a log."""
from __future__ import annotations

import re

from ..metrics.link_floor import HGX_GPU_RE, link_facts
from ..model import Evidence, EventKind, Finding, FindingKind, LogEvent, Run, Severity, Verdict
from ..rules.transport_fit import PathFacts, slow_path

IB_IFACE_RE = re.compile(r"(?:^|\]|\s)(?P<i>ib[a-z]{0,3}\d[\w.]{0,20}):")  # IPoIB: ib0, ibp12s0, ibs85f0
RDMA_PLUGIN_RE = re.compile(r"(?i)Loaded (?:net|coll) plugin .{0,40}(?:RDMA|IB|SHARP)|IBext|rdma_sharp")
MOST_EVIDENCE = 4


def detect(run: Run) -> list[Finding]:
    lf = link_facts(run)
    settings = {k: s.value for k, s in run.job.settings.items()}
    ib, ib_ev = _ib_signs(run, settings)
    nv, sure, nv_ev = _nvlink_signs(run, lf.gpus)
    s = slow_path(PathFacts(lf.nnodes, lf.network, ib, lf.intra, nv, sure, settings))
    if s is None:
        return []
    where = "between the nodes" if s.used == "NET/Socket" else "between the GPUs of the node"
    behind = f"; the setting behind it: {s.setting}" if s.setting else ""
    ev = _path_lines(run, s.used) + ib_ev + nv_ev + _setting_lines(run, s.setting)
    return [Finding(
        kind=FindingKind.TRANSPORT, severity=Severity.WARNING, verdict=Verdict.DEGRADED,
        message=f"NCCL runs over {s.used} {where} where the hardware offers {s.instead} ({s.why}){behind}: the "
        "collectives run at a fraction of the fabric's rate", hint=s.fix, evidence=tuple(_dedupe(ev))[:MOST_EVIDENCE + 2],
        data={"transports": [s.used], "settings": [s.setting.split("=", 1)[0]] if s.setting else [],
              "certainty": {"level": s.level, "why": s.why[:300]}})]


def _ib_signs(run: Run, settings: dict[str, str]) -> tuple[tuple[str, ...], list[Evidence]]:
    signs: list[str] = []
    ev: list[Evidence] = []
    if "NCCL_IB_HCA" in settings:
        signs.append(f"NCCL_IB_HCA={settings['NCCL_IB_HCA']} is set")
        ev += _setting_lines(run, "NCCL_IB_HCA")
    if settings.get("NCCL_IB_DISABLE", "").strip() == "0":
        signs.append("NCCL_IB_DISABLE=0 is set")
    listed = next((e for e in run.events if e.kind == EventKind.NCCL_NET_IB), None)
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
