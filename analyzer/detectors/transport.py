"""Transport and network notes: what each communicator uses, and NCCL's own guesses.

Inputs: connection lines per communicator, ``Using network``, ``Defaulting to 10 Gbps``.

"Over the network between GPUs of one host" is said only of a communicator known to sit on one host: NCCL's
nNodes is 1, or no node count is printed and the input shows as many ranks as the communicator has (Init lines,
or nccl-tests' device lines) on its only host. A pasted
excerpt of one node of a multi-node job (rank 0 of 16, ``8[0] -> 0[0] via NET/IB/0``) shows one host but not a
one-host communicator.
"""
from __future__ import annotations

from ..model import Communicator, EventKind, Evidence, Finding, FindingKind, Run, Severity


def _one_host(c: Communicator, run: Run) -> bool:
    if c.nnodes is not None:
        return c.nnodes == 1
    if len(run.job.hosts) > 1 or (run.job.nnodes or 1) != 1:
        return False
    seen = {p.rank for p in run.job.processes if p.rank is not None}
    return max(len(c.members), len(seen)) >= c.nranks


def _network_lines(c: Communicator, run: Run) -> tuple[Evidence, ...]:
    """The Init line of ``c``'s lowest rank (its size, its one node where NCCL says so) and the first line saying
    which network NCCL uses."""
    init = [c.init_lines[min(c.init_lines)]] if c.init_lines else []
    using = next((e.evidence for e in run.events if e.kind == EventKind.NCCL_NET_NETWORK), None)
    return tuple(init + ([using] if using is not None else []))


def detect(run: Run) -> list[Finding]:
    findings: list[Finding] = []
    for c in run.communicators:
        ts = c.transports
        if not ts:
            continue
        if _one_host(c, run) and any(t.startswith("NET/") for t in ts) and not any(t.startswith("P2P") for t in ts):
            findings.append(Finding(
                kind=FindingKind.TRANSPORT, severity=Severity.WARNING,
                message=f"communicator {c.id} runs over the network ({', '.join(ts)}) between GPUs of one host",
                ranks=tuple(sorted(c.members.values())),
                hint="Ranks on one host should talk over P2P/NVLink or SHM: check NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, "
                "container IPC settings (--ipc=host) and CUDA_VISIBLE_DEVICES.", evidence=_network_lines(c, run),
                data={"transports": ts}))
    guesses = [e for e in run.events if e.kind == EventKind.NCCL_NET_SPEED_GUESS]
    uses_net = any(t.startswith("NET/") for c in run.communicators for t in c.transports) or len(run.job.hosts) > 1
    if guesses and uses_net:
        findings.append(Finding(
            kind=FindingKind.TRANSPORT, severity=Severity.INFO,
            message="NCCL could not read a NIC's speed and assumed 10 Gbps", hint="Harmless on one host; across hosts it can skew NCCL's tuning: check the NIC driver / sysfs speed.",
            evidence=(guesses[0].evidence,)))
    return findings
