"""Ranks that should agree and do not: one rule for the ``diag`` detector and ``ncclscope doctor RUN_DIR``.

Every rank of a job should run the same NCCL with the same ``NCCL_*`` settings, on the same GPU model and count per
node, under the same drivers, with every NVLink up, healthy memory and working P2P paths. Two readers of that rule:

- ``from_diagnostics``: NCCL's own comparison (2.31+ ``NCCL DIAG`` lines, ``diag_model``): each inconsistency it
  names is a ``Problem`` with its lines: a value that differs (``mismatch across``; an ``NCCL_*`` variable's head and
  its value lines are one problem), uncorrected (or, past the threshold, corrected) volatile ECC errors, NVLinks
  inactive or of uneven speed, a GPU pair that failed the P2P check, a check that did not hear from every rank;
- ``differing``: ncclscope's own comparison of what each rank's files say (``Observation``: an aspect, who said it,
  the value, the line): where two of them give different values, a ``Problem`` naming the values and who has each.
  An ``NCCL_*`` setting missing from a rank whose other settings are known counts as ``(unset)`` there.

Pure: no I/O, no clock. ``SEVERITY`` says how grave each trouble is; readers map it to their own words.
"""
from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from ..diag_model import DiagCheck, DiagProblem, DiagResult, DiagSource
from ..model import Evidence, Severity
from .states import fmt_ranks

UNSET = "(unset)"  # NCCL's own word for a variable one rank lacks (diagnostics_env.cc)
MAX_EVIDENCE = 6  # lines kept per problem


class Aspect(enum.StrEnum):
    """What ranks are compared on."""

    NCCL_SETTING = "NCCL setting"  # key: the variable's name
    NCCL_VERSION = "NCCL version"
    CUDA_DRIVER = "CUDA driver version"  # the CUDA version the driver supports
    NVIDIA_DRIVER = "NVIDIA driver version"
    GPU_MODEL = "GPU model"
    GPU_COUNT = "GPU count per node"
    NVLINK_COUNT = "NVLink count per GPU"


class Trouble(enum.StrEnum):
    DIFFERS = "differs"  # ranks disagree on a value
    ECC_ERRORS = "ecc_errors"  # uncorrected volatile ECC errors
    ECC_CORRECTED = "ecc_corrected"  # corrected ones at or above the set threshold
    LINK_DOWN = "link_down"  # NVLinks not active
    LINK_SPEED = "link_speed"  # NVLinks of uneven speed
    P2P_FAILED = "p2p_failed"  # a GPU pair failed NCCL's P2P write / read check at init
    INCOMPLETE = "incomplete"  # a check that could not see every rank, or a value that could not be read
    DIAG_FAILED = "diag_failed"  # the diagnostics did not run or did not finish (refused, busy, failed)


class FoundBy(enum.StrEnum):
    NCCL = "NCCL's diagnostics"  # a DIAG line said it
    COMPARED = "ncclscope's comparison"  # the ranks' own files compared


ADVICE: dict[Trouble, str] = {
    Trouble.DIFFERS: "Give every rank the same environment, drivers and GPUs (the launcher's environment, the node "
                     "image); NCCL does not check that they agree unless asked (NCCL_RUN_RAS_DIAGNOSTICS=1).",
    Trouble.ECC_ERRORS: "Drain the node and have its GPU checked (nvidia-smi -q -d ECC, DCGM diagnostics): "
                        "uncorrected memory errors corrupt data or stop the GPU.",
    Trouble.ECC_CORRECTED: "Watch the GPU's corrected error count (nvidia-smi -q -d ECC): a rising count comes "
                           "before uncorrected errors.",
    Trouble.LINK_DOWN: "Check the node's NVLinks (nvidia-smi nvlink --status, nvidia-smi topo -m); traffic over the "
                       "missing links falls back to slower paths or fails.",
    Trouble.LINK_SPEED: "Check the node's NVLinks (nvidia-smi nvlink --status): a link trained at a lower speed slows "
                        "every ring through that GPU.",
    Trouble.P2P_FAILED: "NCCL's own advice follows each failed pair in its line; the pair's link or peer access is "
                        "broken (nvidia-smi topo -p2p, the IOMMU and PCIe ACS settings, the IMEX domain for MNNVL).",
    Trouble.INCOMPLETE: "Run the diagnostics again once every rank is up (ncclras -D); a rank that never answers is "
                        "itself worth a look.",
    Trouble.DIAG_FAILED: "Run the diagnostics again (ncclras -D, text output; one request at a time per process).",
}
SEVERITY: dict[Trouble, Severity] = {
    Trouble.DIFFERS: Severity.WARNING, Trouble.ECC_ERRORS: Severity.ERROR, Trouble.ECC_CORRECTED: Severity.WARNING,
    Trouble.LINK_DOWN: Severity.WARNING, Trouble.LINK_SPEED: Severity.WARNING, Trouble.P2P_FAILED: Severity.ERROR,
    Trouble.INCOMPLETE: Severity.INFO, Trouble.DIAG_FAILED: Severity.INFO,
}


@dataclass(frozen=True, slots=True)
class Observation:
    """One value one rank (or process, or host: ``who``) shows for an aspect, and the line that shows it."""

    aspect: Aspect
    who: str  # "rank 3", "node-a:4242", "node-a"
    value: str
    evidence: Evidence
    key: str = ""  # a setting's name
    rank: int | None = None
    listing: bool = False  # from a listing of the whole environment: a setting it lacks is unset there


@dataclass(frozen=True, slots=True)
class Problem:
    """One inconsistency: what, where (the communicator ranks concerned, when known), the values and who has each,
    who found it, the lines that show it."""

    trouble: Trouble
    message: str
    found_by: FoundBy
    evidence: tuple[Evidence, ...]
    aspect: Aspect | None = None
    key: str = ""
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (value, who has it), largest group first
    ranks: tuple[int, ...] = ()  # the ranks at odds (the smaller groups), or at fault: NCCL's communicator ranks
    comm: str | None = None  # the communicator NCCL's line names (its hash, as its Init lines print commId)
    nranks: int | None = None  # its size

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.trouble]


# --- ncclscope's comparison ------------------------------------------------------------------------------

def differing(observations: Iterable[Observation]) -> list[Problem]:
    """Per aspect (and setting), the values each ``who`` shows (its first); a problem where two differ. A setting
    absent from a ``who`` whose whole environment is listed is ``(unset)`` there (NCCL's own lines name only the
    variables it read, so their absence says nothing)."""
    first: dict[tuple[Aspect, str], dict[str, Observation]] = {}
    with_settings: dict[str, Observation] = {}
    for o in observations:
        first.setdefault((o.aspect, o.key), {}).setdefault(o.who, o)
        if o.aspect is Aspect.NCCL_SETTING and o.listing:
            with_settings.setdefault(o.who, o)
    out: list[Problem] = []
    for (aspect, key), by_who in first.items():
        values: dict[str, list[Observation]] = {}
        for o in by_who.values():
            values.setdefault(o.value.strip(), []).append(o)
        if aspect is Aspect.NCCL_SETTING:
            lacking = [o for who, o in with_settings.items() if who not in by_who]
            if lacking:
                values.setdefault(UNSET, []).extend(lacking)
        if len(values) < 2:
            continue
        groups = sorted(values.items(), key=lambda kv: (-len(kv[1]), kv[1][0].evidence.file, kv[1][0].evidence.line))
        odd = [o for _, obs in groups[1:] for o in obs]
        ev = [obs[0].evidence for _, obs in groups if obs[0].evidence.line or obs[0].value != UNSET]
        out.append(Problem(
            Trouble.DIFFERS, _differs_message(aspect, key, groups), FoundBy.COMPARED, tuple(ev[:MAX_EVIDENCE]),
            aspect, key, tuple((v, tuple(o.who for o in obs)) for v, obs in groups),
            tuple(sorted({o.rank for o in odd if o.rank is not None}))))
    return out


def _differs_message(aspect: Aspect, key: str, groups: list[tuple[str, list[Observation]]]) -> str:
    what = f"{key}" if aspect is Aspect.NCCL_SETTING else f"the {aspect.value}"
    parts = [f"{_shown(v)} on {_whos([o.who for o in obs])}" for v, obs in groups[:4]]
    more = f"; {len(groups) - 4} more values" if len(groups) > 4 else ""
    return f"{what} differs: {'; '.join(parts)}{more}"


def _shown(value: str) -> str:
    return value if value == UNSET else f"'{value[:120]}'"


def _whos(whos: list[str]) -> str:
    """``ranks 0-3`` when every ``who`` is a rank, else the first few names."""
    if all(w.startswith("rank ") and w[5:].isdigit() for w in whos):
        ranks = sorted(int(w[5:]) for w in whos)
        return f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}"
    return ", ".join(whos[:4]) + (f" and {len(whos) - 4} more" if len(whos) > 4 else "")


# --- NCCL's own comparison ----------------------------------------------------------------------------

ASPECT_OF = {(DiagCheck.GPU_INVENTORY, "count"): Aspect.GPU_COUNT, (DiagCheck.GPU_INVENTORY, "model"): Aspect.GPU_MODEL,
             (DiagCheck.CUDA_DRIVER, None): Aspect.CUDA_DRIVER, (DiagCheck.NVIDIA_DRIVER, None): Aspect.NVIDIA_DRIVER,
             (DiagCheck.NVLINK, "link-count"): Aspect.NVLINK_COUNT}
TROUBLE_OF = {DiagProblem.ECC_UNCORRECTED: Trouble.ECC_ERRORS, DiagProblem.ECC_CORRECTED: Trouble.ECC_CORRECTED,
              DiagProblem.LINK_INACTIVE: Trouble.LINK_DOWN, DiagProblem.LINK_SPEED: Trouble.LINK_SPEED,
              DiagProblem.INCOMPLETE: Trouble.INCOMPLETE, DiagProblem.UNAVAILABLE: Trouble.INCOMPLETE,
              DiagProblem.FAILED: Trouble.DIAG_FAILED, DiagProblem.BUSY: Trouble.DIAG_FAILED,
              DiagProblem.REFUSED: Trouble.DIAG_FAILED}
WHOSE = {DiagSource.RAS: "NCCL's RAS diagnostics", DiagSource.ACTIVE: "NCCL's active diagnostics",
         DiagSource.UNKNOWN: "NCCL's diagnostics"}


def from_diagnostics(results: Iterable[DiagResult]) -> list[Problem]:
    """The inconsistencies NCCL's diagnostics name, each with its lines, in the order the reports print them.
    ``results`` in file and line order (``sources.nccl_diag.results_of``)."""
    out: list[Problem] = []
    env: list[DiagResult] = []  # one NCCL_* variable's lines: its head, then one line per value
    p2p: dict[str, list[DiagResult]] = {}  # file -> its P2P failures (the count line and each pair that failed)
    for r in results:
        if env and not (r.check is DiagCheck.NCCL_ENV and r.problem is DiagProblem.DIFFERS and r.key == env[0].key
                        and r.value is not None and r.file == env[0].file):
            out.append(_env_problem(env))
            env = []
        if r.check is DiagCheck.NCCL_ENV and r.problem is DiagProblem.DIFFERS:
            if r.key is not None and r.value is None:
                env = [r]  # "mismatch across 8 ranks in comm 0x.. for NCCL_DEBUG"
            elif r.key is not None and env:
                env.append(r)
            continue  # the count of variables that differ, or a value line without its head: said by the heads
        if r.problem is DiagProblem.P2P_FAILED or (r.check is DiagCheck.P2P and r.problem is DiagProblem.FAILED):
            p2p.setdefault(r.file, []).append(r)
            continue
        p = _problem(r)
        if p is not None:
            out.append(p)
    if env:
        out.append(_env_problem(env))
    out.extend(_p2p_problem(rs) for rs in p2p.values())
    return out


def _problem(r: DiagResult) -> Problem | None:
    whose = WHOSE[r.source]
    comm = f" of communicator {r.comm}" if r.comm else ""
    across = f"the {r.nranks} ranks{comm}" if r.nranks else f"the ranks{comm}"
    named = _named(r)
    if r.problem is DiagProblem.DIFFERS:
        aspect = ASPECT_OF.get((r.check, r.key))
        what = aspect.value if aspect is not None else f"{r.check.value} {r.key or ''}".strip()
        groups = ((r.value or "?", (f"rank {r.reference_rank}",)), ("another value", tuple(f"rank {x}" for x in r.ranks)))
        verb = "differs" if len(r.ranks) == 1 and not (r.ranks_total or 0) > 1 else "differ"
        return Problem(Trouble.DIFFERS, f"{whose}: the {what} differs across {across}: {named} {verb} from rank "
                       f"{r.reference_rank} ({r.value})", FoundBy.NCCL, (_ev(r),), aspect, r.key or "", groups,
                       r.ranks, r.comm, r.nranks)
    trouble = TROUBLE_OF.get(r.problem)
    if trouble is None:
        return None
    words = {Trouble.ECC_ERRORS: f"uncorrected volatile ECC errors on the GPU of {named} (worst {r.value})",
             Trouble.ECC_CORRECTED: f"corrected volatile ECC errors at or above the threshold on the GPU of {named} "
                                    f"(worst {r.value})",
             Trouble.LINK_DOWN: f"NVLink(s) not active on the GPU of {named}",
             Trouble.LINK_SPEED: f"NVLinks of uneven speed on the GPU of {named}"}
    if trouble in words:
        return Problem(trouble, f"{whose}: {words[trouble]}, among {across}", FoundBy.NCCL, (_ev(r),),
                       ranks=r.ranks, comm=r.comm, nranks=r.nranks)
    if trouble is Trouble.INCOMPLETE:
        return Problem(trouble, f"{whose}: {r.check.value}: {r.message.split(': ', 1)[-1]}", FoundBy.NCCL, (_ev(r),),
                       comm=r.comm)
    if r.check is DiagCheck.RAS_REPLY:
        said = "refused the request" if r.problem is DiagProblem.REFUSED else "was busy"
        return Problem(trouble, f"the RAS client's request{f' ({r.key})' if r.key else ''}: RAS {said}: {r.message}",
                       FoundBy.NCCL, (_ev(r),))
    return Problem(trouble, f"{whose} did not finish: {r.message}", FoundBy.NCCL, (_ev(r),), ranks=r.ranks)


def _env_problem(lines: list[DiagResult]) -> Problem:
    """One ``NCCL_*`` variable NCCL found set differently: its head, then each value and the ranks that have it."""
    head = lines[0]
    values = [r for r in lines[1:] if r.value is not None]
    groups = tuple(sorted(((r.value or "", tuple(f"rank {x}" for x in r.ranks)) for r in values),
                          key=lambda g: -len(g[1])))
    odd = tuple(sorted({x for r in values if (r.value or "", tuple(f"rank {x}" for x in r.ranks)) != groups[0]
                        for x in r.ranks})) if groups else ()
    parts = "; ".join(f"{_shown(v)} on {_whos(list(w)) or 'no rank named'}" for v, w in groups[:4])
    comm = f" of communicator {head.comm}" if head.comm else ""
    across = f"the {head.nranks} ranks" if head.nranks else "the ranks"
    return Problem(Trouble.DIFFERS, f"{WHOSE[head.source]}: {head.key} differs across {across}{comm}: "
                   f"{parts or 'values not listed'}", FoundBy.NCCL,
                   tuple(_ev(r) for r in lines[:MAX_EVIDENCE]), Aspect.NCCL_SETTING, head.key or "", groups, odd,
                   head.comm, head.nranks)


def _p2p_problem(rs: list[DiagResult]) -> Problem:
    """A report's P2P failures: the pairs that failed (source rank -> destination rank, the path, what failed), the
    count line, a set-up that failed on a rank."""
    pairs = [r for r in rs if r.peer is not None]
    count = next((r for r in rs if r.value and "/" in r.value and r.peer is None), None)
    said = [f"rank {r.ranks[0]} -> {r.peer} over {r.value or '?'} ({r.key})" for r in pairs if r.ranks]
    setup = [r for r in rs if r.problem is DiagProblem.FAILED]
    head = f"{count.value} directed GPU P2P pairs verified" if count is not None else "GPU P2P pairs failed"
    body = "; ".join(said[:4]) + (f"; {len(said) - 4} more" if len(said) > 4 else "")
    body = "; ".join(([body] if body else []) + [f"set-up failed: {r.message}" for r in setup[:2]])
    ranks = tuple(sorted({x for r in pairs for x in (*r.ranks, r.peer) if x is not None}
                         | {x for r in setup for x in r.ranks}))
    ev = [*([count] if count is not None else []), *pairs, *setup]
    return Problem(Trouble.P2P_FAILED, f"NCCL's active diagnostics at init: {head}" + (f": {body}" if body else ""),
                   FoundBy.NCCL, tuple(_ev(r) for r in ev[:MAX_EVIDENCE]), ranks=ranks)


def _named(r: DiagResult) -> str:
    """``ranks 4-7``, ``ranks 8-15 (9 in all)``."""
    if not r.ranks:
        return "some ranks"
    text = f"rank{'s' if len(r.ranks) > 1 or (r.ranks_total or 0) > 1 else ''} {fmt_ranks(list(r.ranks))}"
    return text + (f" ({r.ranks_total} in all)" if r.ranks_total and r.ranks_total > len(r.ranks) else "")


def _ev(r: DiagResult) -> Evidence:
    return Evidence(r.file, r.line, r.text or r.message)
