"""Slow links: a sweep below what its own path should reach, and collectives below the sweep.

A completed nccl-tests / ``ncclscope perf`` sweep whose best large-message busbw stays under the floor
of the transport and hardware its log names (``metrics.link_floor``: InfiniBand per NIC by GPU class,
RoCE, NVLink on one host of SXM GPUs) is degraded, with the measured busbw per size and the floor as
evidence and the fix the path suggests (GPU Direct RDMA off: nvidia-peermem, ACS, NCCL_NET_GDR_LEVEL).

busbw per collective comes from ``metrics.busbw`` (nccl-tests' factors, each collective timed by
its shortest rank: the numbers the dashboard plots). Compared with nccl-tests / ``ncclscope perf`` rows of the same size class when the run
holds them; large messages far below the sweep are flagged.
"""
from __future__ import annotations

import math

import pandas as pd

from ..metrics.busbw import busbw_table
from ..metrics.link_floor import LinkFacts, SlowSweep, link_facts, per_size, slow_sweeps
from ..metrics.share import run_busbw
from ..model import Certainty, Evidence, Finding, FindingKind, Run, Severity, Verdict
from .common import human_bytes, record_evidence

__all__ = ["busbw_table", "detect"]

MIN_BYTES = 1 << 20
FAR_BELOW = 0.5


GDR_OFF_HINT = (
    "The network channels carry no /GDRDMA: GPU Direct RDMA is not in use, so every transfer is staged through "
    "host memory. Load nvidia-peermem (or use a DMA-BUF capable driver and kernel), turn PCIe ACS off on bare "
    "metal, and where NCCL keeps GDR off for the GPU-NIC distance try NCCL_NET_GDR_LEVEL=SYS (or PHB).")
NET_HINT = ("Check each NIC's link rate and width (ibstat, ib_write_bw between the hosts), that NCCL_IB_HCA names "
            "the NICs next to the GPUs, and that the channel lines show /GDRDMA (GPU Direct RDMA in use).")
GB10_HINT = ("NCCL lists one RoCE HCA on each node, and a GB10 system's QSFP port is two HCAs (two PCIe x4 links, "
             "e.g. rocep1s0f1 and roceP2p1s0f1), each about half the port: name both in NCCL_IB_HCA (with "
             "NCCL_IB_MERGE_NICS=1 so NCCL uses them as one port), check `ibdev2netdev` and that both carry an address.")
GB10_PORT_HINT = ("A GB10 system's QSFP port is two RoCE HCAs (two PCIe x4 links, e.g. rocep1s0f1 and roceP2p1s0f1), "
                  "each about half the port; NCCL_SOCKET_IFNAME only picks the bootstrap's interface: name both HCAs in "
                  "NCCL_IB_HCA (with NCCL_IB_MERGE_NICS=1), set MTU 9000 on the port, and check `ibdev2netdev`.")
NVLINK_HINT = ("These SXM GPUs are joined by NVLink, yet the sweep stays at PCIe speed: check NCCL_P2P_DISABLE and "
               "NCCL_P2P_LEVEL, that nvidia-fabricmanager runs on NVSwitch systems, `nvidia-smi nvlink -s`, and the "
               "channel lines (SHM means P2P between the GPUs is off).")
UNKNOWN_NET_HINT = ("The output prints no NCCL line, so the transport between the nodes is not known: rerun with "
                    "NCCL_DEBUG=INFO and look for 'Using network IB' (or Socket: no RDMA NIC in use). ")
MANY_NICS_HINT = (" With several NICs a node, one slow node, NIC or cable slows every ring through it: run the test "
                  "on pairs of nodes and with NCCL_IB_HCA naming one NIC at a time to find it.")
CERTAINTY_WHY = {
    "possible": "the table alone: the transport between the nodes is not printed, the floor is the GPU class's",
    "likely": "the NICs NCCL's IB transport listed on a node; no channel line shows the path in use"}
GRAPH_WHY = "the floor is NCCL's own estimate of its rings from the link types it detected, not a measurement"
GRAPH_HINT = ("NCCL's topology search expected far more of these rings than the sweep reached: compare the search "
              "lines (Pattern 4) of every node (NCCL_DEBUG_SUBSYS=INIT,GRAPH; nodes that find different patterns, e.g. "
              "crossNic 0 on one and 1 on another, build rings that share NICs), look for congestion (PFC pause "
              "frames, ECN marks on the switches) and test the links pairwise (ib_write_bw). ")
SETTINGS = ("NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ", "NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
            "NCCL_SHM_DISABLE", "NCCL_IB_HCA", "NCCL_ALGO", "NCCL_MAX_NCHANNELS")


def detect(run: Run) -> list[Finding]:
    findings = sweep_findings(run)
    tab = run_busbw(run)
    if not len(tab) or not run.nccl_tests:
        return findings
    sweep = pd.DataFrame(run.nccl_tests)
    sweep = sweep[sweep["size"] > 0]
    if not len(sweep):
        return []
    sweep["bucket"] = [int(math.log2(s)) for s in sweep["size"]]
    ref = sweep.groupby("bucket")["busbw"].max()
    big = tab[tab["bytes"] >= MIN_BYTES]
    med = big.groupby("bucket")["busbw"].median()
    findings = []
    for bucket, bw in med.items():
        if bucket in ref.index and ref[bucket] > 0 and bw < FAR_BELOW * ref[bucket]:
            findings.append(Finding(
                kind=FindingKind.SLOW_LINK, severity=Severity.WARNING,
                message=f"collectives of ~{human_bytes(2 ** bucket)} reach {bw:.1f} GB/s bus bandwidth, "
                f"{bw / ref[bucket]:.0%} of the {ref[bucket]:.1f} GB/s this fabric reached in its sweep",
                hint="Compare transports (NCCL_P2P_DISABLE / SHM / IB settings), look for other traffic on the links, "
                "and for stragglers inflating collective time.", evidence=_bucket_lines(run, big, sweep, int(bucket)),
                verdict=Verdict.DEGRADED,
                data={"bucket_bytes": 2 ** bucket, "busbw": bw, "sweep_busbw": float(ref[bucket])}))
    return findings


def _bucket_lines(run: Run, big: pd.DataFrame, sweep: pd.DataFrame, bucket: int) -> tuple[Evidence, ...]:
    """The first collective of the size class and the sweep's best row of it."""
    out: list[Evidence] = []
    mine = big[(big["bucket"] == bucket).to_numpy()]
    if len(mine):
        c = mine.sort_values("seq").iloc[0]
        seen = record_evidence(run, str(c["pg"]), int(c["seq"]), f"pg {c['pg']} #{int(c['seq'])} {c['op']}: "
                               f"{int(c['bytes'])} B, busbw {float(c['busbw']):.2f} GB/s")
        out += [seen] if seen is not None else []
    rows = sweep[(sweep["bucket"] == bucket).to_numpy()]
    if len(rows):
        r = rows.loc[rows["busbw"].idxmax()]
        out.append(Evidence(str(r["file"]), int(r["line"]), f"size {int(r['size'])} B: busbw {float(r['busbw']):.2f} GB/s"))
    return tuple(out)


def sweep_findings(run: Run) -> list[Finding]:
    """A completed sweep below the floor of its path: one degraded finding per test."""
    if not run.nccl_tests:
        return []
    facts = link_facts(run)
    return [_sweep_finding(run, facts, s) for s in slow_sweeps(run.nccl_tests, facts)]


def _sweep_finding(run: Run, facts: LinkFacts, s: SlowSweep) -> Finding:
    f = s.floor
    sizes = per_size(s.rows)
    test = s.rows[-1].get("test") or "the benchmark"
    links = f"{f.links} {f.path} NIC{'s' if f.links > 1 else ''} a node" if f.path != "NVLink" else "NVLink"
    graph = facts.ring_graph is not None and f.reference.startswith("NCCL's own search")
    if graph:
        links = f"{f.links} ring channel{'s' if f.links > 1 else ''}"
    if f.certainty == Certainty.POSSIBLE:
        links = f"nodes of {', '.join(facts.gpus[:2])} over {f.path} (no NCCL line names it)"
    gdr = {True: "GDRDMA on", False: "no GDRDMA on the network channels", None: None}[facts.gdr]
    said = ", ".join(x for x in (f"{facts.nnodes} node{'s' if facts.nnodes > 1 else ''}",
                                  ", ".join(facts.gpus[:2]) or None, gdr) if x)
    per = ", ".join(f"{human_bytes(size)} {bw:.2f}" for size, bw in sizes[-4:])
    hint = NVLINK_HINT if f.path == "NVLink" else (GDR_OFF_HINT if facts.gdr is False else NET_HINT)
    if "two RoCE HCAs" in f.reference:
        hint = GB10_HINT if f.certainty != Certainty.POSSIBLE else GB10_PORT_HINT
    if graph:
        hint = GRAPH_HINT + hint
    elif f.links > 1 and f.path != "NVLink":
        hint += MANY_NICS_HINT
    if f.certainty == Certainty.POSSIBLE:
        hint = UNKNOWN_NET_HINT + hint
    set_ = [f"{k}={run.job.settings[k].value}" for k in SETTINGS if k in run.job.settings]
    if set_:
        hint += " Set in this run: " + ", ".join(set_) + "."
    best: dict[tuple[str, int], tuple[int, float]] = {}  # a table line: its size, its best of out- and in-place
    for r in s.rows:
        k = (str(r["file"]), int(r["line"]))
        best[k] = (int(r["size"]), max(best.get(k, (0, 0.0))[1], float(r["busbw"])))
    ev = [Evidence(file, line, f"size {size} B: busbw {bw:.2f} GB/s") for (file, line), (size, bw) in list(best.items())[-4:]]
    return Finding(
        kind=FindingKind.SLOW_LINK, severity=Severity.WARNING, verdict=Verdict.DEGRADED,
        message=f"{test} completed but reached at most {s.best:.2f} GB/s bus bandwidth from {human_bytes(sizes[0][0])} up "
        f"(busbw GB/s by size: {per}), under the {f.gbs:g} GB/s floor for {links} ({round(100 * f.gbs / (f.link_gbs * f.links))}% of {f.link_gbs:g} "
        f"GB/s{' each' if f.links > 1 else ''}: {f.reference}); {said}",
        hint=hint, evidence=tuple(ev) + ((facts.ring_graph.evidence,) if graph and facts.ring_graph else ()) + facts.evidence,
        data={"culprits": [], "floor_gbs": f.gbs, "best_busbw": s.best, "path": f.path, "links": f.links,
              "link_gbs": f.link_gbs, "reference": f.reference, "gdr": facts.gdr, "gpus": list(facts.gpus),
              "nnodes": facts.nnodes, "busbw_by_size": [[size, bw] for size, bw in sizes],
              **({"certainty": {"level": f.certainty, "why": GRAPH_WHY if graph else CERTAINTY_WHY[f.certainty]}}
                 if f.certainty else {})})
