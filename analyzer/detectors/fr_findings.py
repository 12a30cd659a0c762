"""Findings from the Flight Recorder judgement (``run.flight_recorder``, ``rules.fr_hang``,
``rules.fr_desync``); the hang and desync detectors take them where the dumps say more than the
process-group counts: a hang from dumps alone, the group that lost a rank first, a send/recv
chain's head, a rank scheduled where the others started, a mismatch in any field.
"""
from __future__ import annotations

from ..fr_model import FrField, FrJob, FrMismatch, FrOp, FrPart
from ..model import Evidence, Finding, FindingKind, Run, Severity, Stuck, Verdict
from ..nccl.ops import canonical_op
from ..rules import fr_desync, fr_hang
from ..rules.fr_hang import Block
from ..rules.states import fmt_ranks

HINT = {
    Block.NEVER_JOINED: (
        "Rank {r} stopped issuing collectives before this one: look at what it runs between its last collective "
        "and this one (a data-loader stall, a rank-conditional branch, an exception swallowed in a thread, a "
        "checkpoint only some ranks write). Its stack (py-spy dump --native) shows where it is."),
    Block.NOT_STARTED: (
        "Rank {r} enqueued the collective but its GPU stream never reached it while the others' kernels run: "
        "something before it on that rank's stream does not finish (a long or hung kernel, a wait on an event, "
        "another collective it is stuck in). Check that GPU (nvidia-smi, Xid errors in dmesg) and its stack."),
    Block.NO_DUMP: (
        "Rank {r} left no Flight Recorder dump while the others wait for it: a process stuck hard (in a CUDA "
        "call, holding the GIL, in destroy_process_group) cannot dump. Its own log and stack say where it is; "
        "if it did dump, add its file to the input."),
    Block.UNSEEN: "",
    Block.ALL_JOINED: (
        "Every rank entered the operation but it never finished: NCCL- or network-side. Check the NCCL WARN "
        "lines, the transports between the ranks (NCCL_P2P_DISABLE / NCCL_SHM_DISABLE / NCCL_IB_*), GPU health "
        "(nvidia-smi, Xid errors in dmesg), and run nccl-tests between those hosts."),
}
HINT_DESYNC = ("Ranks must call the same collectives in the same order with the same sizes and dtypes. Look for "
               "rank-dependent branches (if rank == 0: ...), data-dependent sizes (the last batch, variable-length "
               "tensors), a collective skipped on an exception path, or tensors of the wrong shape or dtype "
               "passed to it. The call sites below show where each side is.")


def _desc(op: FrOp | FrMismatch) -> str:
    return f" ({op.desc})" if op.desc and op.desc != "undefined" else ""


def _name(op: FrOp) -> str:
    """The operation as every output names it: its canonical op (``allreduce``, as ``stuck.op`` says), number, group."""
    name = canonical_op(op.op)
    if op.is_p2p:
        return f"{name} #{op.seq} ({op.src} -> {op.dst}) of process group {op.pg}{_desc(op)}"
    return f"{name} #{op.seq} of process group {op.pg}{_desc(op)}"


def _where(p: FrPart) -> str:
    bits = [f"state {p.state.value}"]
    if p.where:
        bits.append(f"called at {p.where}")
    return f"rank {p.rank}: " + ", ".join(bits)


def _message(h: fr_hang.FrHang, stacks: dict[int, str]) -> str:
    op, who = h.op, fmt_ranks(h.culprits)
    s = "s" if len(h.culprits) > 1 else ""
    waiting = f"rank{'s' if len(h.waiting) > 1 else ''} {fmt_ranks(h.waiting) or '-'}"
    if h.why is Block.NEVER_JOINED and op.is_p2p:
        if op.src in h.culprits:
            msg = (f"rank {op.src} never posted the send to rank {op.dst} that rank {op.dst}'s recv #{op.seq} of "
                   f"process group {op.pg}{_desc(op)} waits for")
        else:
            msg = (f"rank {op.dst} never posted the recv from rank {op.src} that rank {op.src}'s send #{op.seq} of "
                   f"process group {op.pg}{_desc(op)} waits in")
    elif h.why is Block.NEVER_JOINED:
        msg = f"rank{s} {who} never joined {_name(op)}; {waiting} wait{'s' if len(h.waiting) == 1 else ''} in it"
    elif h.why is Block.NOT_STARTED:
        msg = (f"rank{s} {who} never started {_name(op)} (scheduled on {'them' if s else 'it'}, started on "
               f"{waiting}): {'their' if s else 'its'} GPU stream did not reach it")
    elif h.why is Block.NO_DUMP:
        msg = (f"rank{s} {who} left no Flight Recorder dump and {'are' if s else 'is'} not seen in {_name(op)}, "
               f"which {waiting} wait{'s' if len(h.waiting) == 1 else ''} in")
    else:
        msg = f"every rank of {_name(op)} joined it ({waiting}) but it never completed"
    parts = [_where(p) for p in op.parts if p.rank in h.waiting][:3]
    if parts:
        msg += f" ({'; '.join(parts)})"
    for r in h.culprits:
        if r in stacks:
            msg += f"; rank {r} is at {stacks[r]}"
    if h.echoes:
        echoes = ", ".join(_name(e) for e in h.echoes[:3])
        more = f" and {len(h.echoes) - 3} more" if len(h.echoes) > 3 else ""
        msg += f"; held behind it: {echoes}{more}"
    return msg


def by_silence(f: Finding) -> bool:
    """A hang finding of the dumps whose culprits are named by their missing dumps only."""
    return f.data.get("class") == Block.NO_DUMP


def hang_finding(run: Run, stalled: bool, stall_ev: tuple[Evidence, ...] = ()) -> Finding | None:
    """The hang the dumps show, or None (no dumps, nothing pending, or an all-joined operation they do not
    prove hung)."""
    job: FrJob | None = run.flight_recorder
    if job is None:
        return None
    h = fr_hang.cause(job.pending)
    if h is None:
        return None
    sure = fr_hang.certainty(job, h, stalled)
    if not sure.stands:
        return None
    op = h.op
    files = {r.rank: r.file for r in job.ranks}
    evidence = [Evidence(files[p.rank], 0, f"rank {p.rank}: {op.op} #{op.seq} of process group {op.pg}: {p.state.value}")
                for p in op.parts if p.rank in files][:6]
    cls = "never_completed" if h.why is Block.ALL_JOINED else h.why.value
    return Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL, message=_message(h, run.stacks),
        ranks=h.culprits, hint=HINT[h.why].format(r=h.culprits[0] if h.culprits else "?"),
        evidence=tuple(evidence) + stall_ev[:3], stuck=Stuck(op.pg_key, op.seq, canonical_op(op.op)),
        verdict=Verdict.HANG,
        data={"class": cls, "source": "flight_recorder", "waiting": list(h.waiting),
              "where": {r: run.stacks[r] for r in (*h.culprits, *h.waiting) if r in run.stacks},
              "echoes": [{"pg": e.pg_key, "seq": e.seq, "op": canonical_op(e.op)} for e in h.echoes[:64]],
              "certainty": {"level": sure.level.value, "why": sure.why}})


def desync_finding(run: Run) -> Finding | None:
    """The first mismatched collective the dumps show, or None."""
    job = run.flight_recorder
    m = fr_desync.first(job.mismatches) if job is not None else None
    if job is None or m is None:
        return None
    culprits, how = fr_desync.culprits(m)
    sides = [{"ranks": list(s.ranks), "op": s.op, "count": None, "dtype": s.input_dtypes, "where": s.where,
              "input_sizes": s.input_sizes, "input_dtypes": s.input_dtypes, "output_sizes": s.output_sizes,
              "output_dtypes": s.output_dtypes, "malformed": s.malformed} for s in m.sides]
    desc = " vs ".join(
        f"rank{'s' if len(s.ranks) > 1 else ''} {fmt_ranks(s.ranks)}: {s.op}(in {s.input_sizes} {s.input_dtypes}, "
        f"out {s.output_sizes} {s.output_dtypes})" + (f" at {s.where}" if s.where else "")
        + (f" [{s.malformed}]" if s.malformed else "") for s in m.sides)
    member = f", member {m.member} of the coalesced group" if m.member is not None else ""
    files = {r.rank: r.file for r in job.ranks}
    evidence = [Evidence(files[r], 0, f"rank {r} pg {m.pg} #{m.seq}: {s.op} in {s.input_sizes} {s.input_dtypes} "
                         f"out {s.output_sizes} {s.output_dtypes}") for s in m.sides for r in s.ranks[:2] if r in files]
    return Finding(
        kind=FindingKind.DESYNC, severity=Severity.CRITICAL,
        message=(f"collective #{m.seq} of process group {m.pg}{_desc(m)} differs between ranks "
                 f"({'/'.join(f.value for f in m.fields)}{member}): {desc}")[:2000],
        ranks=culprits, hint=HINT_DESYNC, evidence=tuple(evidence[:6]),
        stuck=Stuck(m.pg, m.seq, canonical_op(m.op)), verdict=Verdict.DESYNC,
        data={"sides": sides, "mismatch": _kinds(m), "fields": [f.value for f in m.fields],
              "odd_ranks": list(culprits), "culprit_by": how, "t": m.t_created, "source": "flight_recorder"})


def _kinds(m: FrMismatch) -> list[str]:
    """The report's coarse words for what differs: op, size, dtype."""
    out = []
    if FrField.OP in m.fields or FrField.MEMBERS in m.fields:
        out.append("op")
    own = " ".join(s.malformed or "" for s in m.sides)
    if {FrField.INPUT_SIZES, FrField.OUTPUT_SIZES, FrField.TOTAL} & set(m.fields) or (
            FrField.IN_OUT in m.fields and "dtype" not in own):
        out.append("size")
    if {FrField.INPUT_DTYPES, FrField.OUTPUT_DTYPES} & set(m.fields) or "dtype" in own:
        out.append("dtype")
    return out
