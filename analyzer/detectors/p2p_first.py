"""A first collective that never completed on one host, with no error from NCCL: the GPUs' peer-to-peer path.

Every rank the input shows timed out (PyTorch's watchdog) in the same collective, one of the first two of its
process group, no collective is recorded as completed, NCCL printed no WARN, and nothing places the ranks on more
than one node: the GPUs of one host never exchanged data. NCCL's direct peer-to-peer path between GPUs under one
PCIe switch is the usual cause (ACS on the switch, an IOMMU / VT-d, a VM's passthrough: P2P writes that never
arrive). The note names the settings that tell (``NCCL_P2P_LEVEL``, ``NCCL_P2P_DISABLE``) and the host's fix; it
argues for no verdict (the hang detector says the hang)."""
from __future__ import annotations

from ..model import EventKind, Finding, FindingKind, LogEvent, Run, Severity

FIRST_SEQS = 2  # torch numbers a group's collectives from 1; a barrier or a broadcast of the weights may come first
HOST_GPUS = 8  # more ranks than one host's GPUs cannot all be on one host
NOT_P2P = ("NET", "SHM")  # transports that say the ranks did not use P2P between them

HINT = ("Run once with NCCL_P2P_LEVEL=NVL (P2P over NVLink only) or NCCL_P2P_DISABLE=1: if the job then runs, "
        "the GPUs' PCIe peer-to-peer path is broken on this host: turn ACS off on the PCIe switches (setpci) or "
        "the IOMMU / VT-d (iommu=pt or off), or keep the setting in a VM; CUDA's p2pBandwidthLatencyTest shows it. "
        "If it began after an NVIDIA driver update, the driver release is the suspect (some releases broke P2P "
        "between local GPUs): go back to the previous driver or on to a fixed one.")


def _one_host(run: Run, ranks: set[int]) -> bool:
    """Nothing in the input puts the ranks on more than one node."""
    if (run.job.nnodes or 1) != 1 or len(run.job.hosts) > 1 or len(ranks) > HOST_GPUS:
        return False
    return all((c.nnodes or 1) == 1 for c in run.communicators)


def _p2p_possible(run: Run) -> bool:
    """No communicator's connection lines show the ranks joined by a transport other than P2P."""
    for c in run.communicators:
        ts = c.transports
        if ts and all(t.upper().startswith(NOT_P2P) for t in ts):
            return False
    return True


def _completed_any(run: Run) -> bool:
    df = run.collectives
    return bool(len(df)) and "t_completed" in df and bool(df["t_completed"].notna().any())


def detect(run: Run) -> list[Finding]:
    timeouts: list[LogEvent] = [e for e in run.events if e.kind == EventKind.WATCHDOG_TIMEOUT and e.rank is not None]
    if not timeouts or any(e.kind == EventKind.NCCL_WARN for e in run.events):
        return []
    seqs = {e.data.get("seq") for e in timeouts}
    ranks = {e.rank for e in timeouts if e.rank is not None}
    seq = next(iter(seqs))
    if len(seqs) != 1 or not isinstance(seq, int) or not 1 <= seq <= FIRST_SEQS or len(ranks) < 2:
        return []
    if ranks != set(run.ranks()) or (run.job.world_size or len(ranks)) != len(ranks):
        return []
    if not _one_host(run, ranks) or not _p2p_possible(run) or _completed_any(run):
        return []
    op = timeouts[0].data.get("op") or "collective"
    return [Finding(
        kind=FindingKind.NOTE, severity=Severity.WARNING, ranks=tuple(sorted(ranks)), hint=HINT,
        message=(f"every rank ({len(ranks)}) timed out in {op} #{seq}, one of the first of its group, with no "
                 "collective completed and no NCCL error, on what the input shows as one host: the GPUs never "
                 "exchanged data, the signature of a PCIe peer-to-peer path that does not deliver (ACS on a PCIe "
                 "switch, an IOMMU / VT-d, a VM)"),
        evidence=tuple(e.evidence for e in timeouts[:4]))]
