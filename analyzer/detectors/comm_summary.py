"""Slow collectives in a program's own communication summary (DeepSpeed's comms logger, ``sources.ds_comms``): in a
job of two or more nodes, a collective whose large messages reach less bus bandwidth than the slowest link between
training nodes (``rules.comm_floor``): degraded, possible, no rank singled out.

Inputs: ``comm_summary`` events (a row each), the job's node count."""
from __future__ import annotations

from ..model import EventKind, Finding, FindingKind, Run, Severity, Verdict
from ..rules.comm_floor import FLOOR_GBPS, slow_ops
from ..rules.facts import failures_of_run

HINT = ("Find the link between the nodes: rerun with NCCL_DEBUG=INFO and read which transport NCCL chose ('Using network "
        "IB' or Socket) and on which interface; run nccl-tests' all_gather_perf across the two nodes to measure it "
        "without the program; check each NIC's rate (ibstat, ethtool). A ZeRO-3 job across slow nodes can keep its "
        "weight gathers inside a node (ZeRO++ hierarchical partitioning, zero_hpz_partition_size).")


def detect(run: Run) -> list[Finding]:
    rows = [e for e in run.events if e.kind == EventKind.COMM_SUMMARY]
    if not rows or any(f.is_cause for f in failures_of_run(run)):
        return []
    nnodes = run.job.nnodes if run.job.nnodes is not None else (len(run.job.hosts) or None)
    slow = slow_ops(((str(e.data.get("op")), int(e.data.get("size") or 0), int(e.data.get("count") or 0),
                      float(e.data.get("busbw_gbps") or 0.0)) for e in rows), nnodes)
    if not slow:
        return []
    s = slow[0]
    ev = [e for e in rows if e.data.get("op") == s.op and int(e.data.get("size") or 0) in s.sizes]
    others = ", ".join(f"{o.op} {o.best_gbps:g}" for o in slow[1:4])
    return [Finding(
        kind=FindingKind.SLOW_LINK, severity=Severity.WARNING, verdict=Verdict.DEGRADED,
        message=f"the program's communication summary: {s.op} reached at most {s.best_gbps:g} Gb/s of bus bandwidth at "
        f"{s.sizes[0] >> 20} MiB and up ({s.calls} calls) in a job of {nnodes} nodes, under the {FLOOR_GBPS:g} Gb/s of the "
        f"slowest link between training nodes" + (f"; also {others} Gb/s" if others else ""),
        hint=HINT, evidence=tuple(e.evidence for e in ev[:3]),
        data={"culprits": [], "busbw": s.best_gbps, "floor_gbs": FLOOR_GBPS / 8, "nnodes": nnodes,
              "certainty": {"level": "possible", "why": "the program's own measurements, which include each call's "
                            "wait for its slowest member; the link's rate is not printed"}})]
