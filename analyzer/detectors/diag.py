"""NCCL's own diagnostics (2.31+): the inconsistencies its ``NCCL DIAG`` lines name, one finding each.

The rule is ``rules.consistency`` (``ncclscope doctor RUN_DIR`` shares it): a value that differs across a
communicator's ranks (an ``NCCL_*`` setting, the GPU model or count, a driver version, the NVLink count) is a
``config`` finding; NVLinks down or of uneven speed, or a GPU pair that failed NCCL's P2P check at init, a
``transport`` finding; volatile ECC errors, a check that could not see every rank or diagnostics that did not finish,
a ``note``. None of them decides a verdict by itself: they say what the set-up shows, with NCCL's lines.
"""
from __future__ import annotations

from ..model import Finding, FindingData, FindingKind, Run
from ..rules.consistency import ADVICE, Problem, Trouble, from_diagnostics

KIND = {Trouble.DIFFERS: FindingKind.CONFIG, Trouble.LINK_DOWN: FindingKind.TRANSPORT,
        Trouble.LINK_SPEED: FindingKind.TRANSPORT, Trouble.P2P_FAILED: FindingKind.TRANSPORT,
        Trouble.ECC_ERRORS: FindingKind.NOTE, Trouble.ECC_CORRECTED: FindingKind.NOTE,
        Trouble.INCOMPLETE: FindingKind.NOTE, Trouble.DIAG_FAILED: FindingKind.NOTE}


def detect(run: Run) -> list[Finding]:
    return [finding_of(p, global_ranks(run, p)) for p in from_diagnostics(run.diagnostics)]


def global_ranks(run: Run, p: Problem) -> tuple[int, ...]:
    """The job's ranks behind the communicator ranks NCCL names: through the communicator its Init lines show (the
    DIAG line's comm is their commId); a communicator of the whole world as they are; else none can be named."""
    if not p.ranks:
        return ()
    comm = next((c for c in run.communicators if p.comm and c.id.lower() == p.comm), None)
    if comm is not None:
        return tuple(sorted({comm.members.get(r, r) for r in p.ranks}))
    world = run.job.world_size
    return p.ranks if p.comm is None or (world is not None and p.nranks == world) else ()


def finding_of(p: Problem, ranks: tuple[int, ...]) -> Finding:
    data = FindingData(source=p.found_by.value)
    if p.key.startswith("NCCL_"):
        data["settings"] = [p.key]
    if p.groups:
        data["values"] = [[value, list(who)] for value, who in p.groups]
    if p.comm:
        data["reference"] = p.comm
    return Finding(kind=KIND[p.trouble], severity=p.severity, message=p.message, ranks=ranks,
                   hint=ADVICE[p.trouble], evidence=p.evidence, data=data)
