"""Settings the job pinned that its own lines show to be wrong: a config error naming the setting, no culprit rank.

- A queue pair that could not be connected because the GID at the index NCCL used is empty (NCCL 2.26+'s
  ``Call to ibv_modify_qp failed with 61 No data available, on dev roceP2p1s0f1:1, ..., local GID index 3, local GID
  ::, remote GID ...``): NCCL only uses an index it found a GID at, unless ``NCCL_IB_GID_INDEX`` pins one, so an empty
  local GID is a pinned index that points at an empty slot of that HCA's table (the RoCE v2 address moved to another
  index on one HCA, a table that differs between the HCAs of a host).
- A job of one host, run with ``NCCL_SHM_DISABLE=1``, that stalled in a collective without any error: with the
  shared-memory transport off, the ranks of one host exchange data through peer-to-peer or the network transport,
  and the stall is that path's (``detect_shm_stall``).
"""
from __future__ import annotations

import re

from ..model import EventKind, Finding, FindingKind, Run, Severity, Verdict
from ..rules.cause import CauseVerdict, root_cause
from ..rules.facts import failures_of_run, stall_time

# NCCL 2.26+: "..., on dev mlx5_2:1, curr state INIT, next state RTR, local GID index 3, local GID ::, remote GID ..."
MODIFY_QP_GID_RE = re.compile(r"Call to ibv_modify_qp failed with .{0,200}?"
                              r"local GID index (?P<index>\d{1,4}), local GID (?P<gid>[0-9A-Fa-f:.]{2,45})")
DEV_RE = re.compile(r"\bon dev (?P<dev>[\w.:-]{1,64}),")
SHM_OFF = "NCCL_SHM_DISABLE"


def empty_gid(text: str) -> tuple[str, str | None] | None:
    """(GID index, device) of a modify-QP failure whose local GID is empty (all zeros), else None."""
    m = MODIFY_QP_GID_RE.search(text)
    if m is None or m.group("gid").strip(":0.") != "":
        return None
    dev = DEV_RE.search(text)
    return m.group("index"), dev.group("dev") if dev else None


def detect(run: Run) -> list[Finding]:
    return detect_empty_gid(run) or detect_shm_stall(run)


def detect_empty_gid(run: Run) -> list[Finding]:
    """A modify-QP failure whose local GID at the index NCCL used is empty: the pinned NCCL_IB_GID_INDEX is wrong for
    that HCA. Every WARN of that shape, every rank that printed one."""
    hits = [(e, g) for e in run.events if e.kind == EventKind.NCCL_WARN and (g := empty_gid(e.text)) is not None]
    if not hits:
        return []
    (first, (index, dev)) = hits[0]
    pinned = run.job.settings.get("NCCL_IB_GID_INDEX")
    said = f"NCCL_IB_GID_INDEX={pinned.value}" if pinned is not None else f"NCCL_IB_GID_INDEX (index {index})"
    where = f" of {dev}" if dev else ""
    evidence = [e.evidence for e, _ in hits[:3]] + ([pinned.evidence] if pinned is not None and pinned.evidence else [])
    return [Finding(
        kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR,
        ranks=tuple(sorted({e.rank for e, _ in hits if e.rank is not None})),
        message=f"the GID at index {index}{where} is empty (local GID all zeros) and NCCL could not connect a queue pair "
        f"with it: NCCL only uses an index it found a GID at unless {said} pins one, so the pinned GID index does not "
        f"hold a RoCE GID on that HCA (its RoCE v2 address sits at another index there): \"{first.text.strip()[:200]}\"",
        hint="Leave NCCL_IB_GID_INDEX unset (not empty) so that NCCL picks the RoCE v2 GID of each HCA itself (2.21+), "
             "or set it to an index that holds the RoCE v2 IPv4 GID on every HCA of every node (`show_gids`); GID "
             "tables can differ between the HCAs of one host and change after interface events.",
        evidence=tuple(evidence), data={"culprits": [], "settings": ["NCCL_IB_GID_INDEX"], "certainty": {
            "level": "likely", "why": "an empty local GID at the index NCCL used, which only a pinned index gives"}})]


def detect_shm_stall(run: Run) -> list[Finding]:
    """A job whose ranks all run on one host, with NCCL_SHM_DISABLE=1 set, that launched collectives and then stalled
    (a watchdog timeout, a stall record, or the job stopped from outside with nothing failing first) with no NCCL
    warning and no error of its own: the setting took away the transport the ranks of one host use and the path left
    (peer-to-peer, the network transport over the loopback) did not deliver."""
    shm = run.job.settings.get(SHM_OFF)
    if shm is None or shm.value.strip() != "1" or not (len(run.collectives) or run.pg_status):
        return []
    if len(run.job.hosts) > 1 or (run.job.nnodes or 1) > 1:
        return []
    if any(e.kind == EventKind.NCCL_WARN for e in run.events):
        return []
    stalled, t = stall_time(run)
    cause = root_cause(failures_of_run(run), t, stalled)
    if cause is None or cause.verdict not in (CauseVerdict.HANG, CauseVerdict.STOPPED):
        return []
    return [Finding(
        kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=(),
        message=f"{SHM_OFF}={shm.value} on a job of one host that then stalled in a collective with no error: with the "
        "shared-memory transport off, the ranks of one host exchange data over peer-to-peer or the network transport, "
        "and the collective never completed on that path",
        hint=f"Unset {SHM_OFF} (set it only where SHM itself is broken, e.g. a container's tiny /dev/shm: give the "
             "container a larger /dev/shm instead); if the stall stays, check P2P between the GPUs (NCCL_P2P_LEVEL, "
             "nvidia-smi topo -p2p r). CUDA_LAUNCH_BLOCKING=1 with several communicators makes such stalls likelier.",
        evidence=(shm.evidence,) if shm.evidence else (), data={"culprits": [], "settings": [SHM_OFF], "certainty": {
            "level": "likely", "why": f"{SHM_OFF}=1 set and a stall with no error on one host"}})]
