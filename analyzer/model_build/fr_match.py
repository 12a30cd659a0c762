"""The members' calls at one point of a process group, compared field by field.

Every field a Flight Recorder entry records is compared: the op, the input and output sizes and
dtypes, and each member of a coalesced group in turn. What legitimately differs between ranks is
left out: a gather's outputs (the root gathers, the others pass none), a scatter's inputs, the
sizes of all_to_all and of the ``_v`` (uneven) forms. Each call is also checked on its own against
its op and the group's size: an all_reduce, broadcast or reduce moves its input's shape to its
output; an all_gather's output holds the group size times its input's elements, a reduce_scatter's
input the group size times its output's; input and output dtypes agree. A call that breaks these
is wrong whatever the others did. An all_to_all's inputs and outputs, added over the members,
hold the same number of elements.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from ..fr_model import FrField, FrMismatch, FrSide
from .fr_entries import Call, Entry, GroupKey

SAME_SHAPE = frozenset({"all_reduce", "allreduce_coalesced", "all_reduce_barrier", "broadcast", "_broadcast_oop",
                        "reduce", "_reduce_oop"})
GATHERS = frozenset({"all_gather", "_all_gather_base", "all_gather_base", "all_gather_into_tensor",
                     "all_gather_into_tensor_coalesced", "all_gather_single"})
SCATTERS = frozenset({"reduce_scatter", "_reduce_scatter_base", "reduce_scatter_base", "reduce_scatter_tensor",
                      "reduce_scatter_tensor_coalesced", "reduce_scatter_single"})
ALL_TO_ALL = frozenset({"all_to_all", "all_to_all_single", "alltoall", "alltoall_base"})
UNEVEN = ALL_TO_ALL | frozenset({"all_to_all_v_single", "all_gather_v", "reduce_scatter_v"})
ROOTED_OUT = frozenset({"gather"})  # outputs only on the root
ROOTED_IN = frozenset({"scatter"})  # inputs only on the root

OpSig = tuple[str, tuple[tuple[int, ...], ...] | None, tuple[str, ...] | None,
              tuple[tuple[int, ...], ...] | None, tuple[str, ...] | None]


def op_sig(e: Entry) -> OpSig:
    """(op, input sizes, input dtypes, output sizes, output dtypes), None where ranks may differ."""
    if e.is_marker:
        return e.op, None, None, None, None
    ins = None if e.op in UNEVEN or e.op in ROOTED_IN else e.input_sizes
    in_dt = None if e.op in ROOTED_IN else e.input_dtypes
    outs = None if e.op in UNEVEN or e.op in ROOTED_OUT else e.output_sizes
    out_dt = None if e.op in ROOTED_OUT else e.output_dtypes
    return e.op, ins, in_dt, outs, out_dt


def call_sig(c: Call) -> tuple[str, tuple[OpSig, ...]]:
    return c.op, tuple(op_sig(e) for e in c.ops)


def numel(sizes: tuple[tuple[int, ...], ...]) -> int:
    """Elements of the tensors; -1 when a dim is no number (a damaged entry: then no size rule is checked)."""
    try:
        return int(sum(math.prod(s) for s in sizes))
    except (TypeError, ValueError, OverflowError):
        return -1


def malformed_op(e: Entry, group_size: int) -> str | None:
    """Why one op is wrong on its own, or None (also when its entry does not say enough)."""
    if e.is_marker or not e.input_sizes or not e.output_sizes:
        return None
    nin, nout = numel(e.input_sizes), numel(e.output_sizes)
    if nin < 0 or nout < 0:
        return None
    if e.op in SAME_SHAPE and e.input_sizes != e.output_sizes:
        return f"{e.op} with input {_fmt(e.input_sizes)} but output {_fmt(e.output_sizes)}"
    if e.op in GATHERS and nout != nin * group_size:
        return (f"{e.op} with output {_fmt(e.output_sizes)} ({nout} elements) where {group_size} ranks of input "
                f"{_fmt(e.input_sizes)} make {nin * group_size}")
    if e.op in SCATTERS and nin != nout * group_size:
        return (f"{e.op} with input {_fmt(e.input_sizes)} ({nin} elements) where {group_size} ranks of output "
                f"{_fmt(e.output_sizes)} take {nout * group_size}")
    if (e.op in SAME_SHAPE | GATHERS | SCATTERS and e.input_dtypes and e.output_dtypes
            and set(e.input_dtypes) != set(e.output_dtypes)):
        return f"{e.op} with input dtype {_fmt(e.input_dtypes)} but output dtype {_fmt(e.output_dtypes)}"
    return None


def malformed_call(c: Call, group_size: int) -> str | None:
    for i, e in enumerate(c.ops):
        why = malformed_op(e, group_size)
        if why is not None:
            return f"member {i} of its coalesced group: {why}" if c.members else why
    return None


def compare(group: GroupKey, desc: str, seq: int, calls: Mapping[int, Call],
            group_calls: Mapping[int, Mapping[int, Call]]) -> FrMismatch | None:
    """The mismatch at (group, seq) among the members' ``calls`` there, or None. ``group_calls``: every
    call of the group by rank and seq (what each side's call was made elsewhere is looked up there)."""
    n = len(group[1]) or len(calls)
    by_sig: dict[tuple[str, tuple[OpSig, ...]], list[int]] = {}
    for r in sorted(calls):
        by_sig.setdefault(call_sig(calls[r]), []).append(r)
    # a call's own check depends on its signature alone: once per distinct call
    own = {sig: malformed_call(calls[ranks[0]], n) for sig, ranks in by_sig.items()}
    bad = {r: own[sig] for sig, ranks in by_sig.items() for r in ranks}
    total = _all_to_all_total(calls, group[1])
    if len(by_sig) == 1 and not any(bad.values()) and total is None:
        return None
    sigs = list(by_sig)
    fields, member = _fields(sigs)
    if any(bad.values()):
        fields += (FrField.IN_OUT,)
    if total is not None:
        fields += (FrField.TOTAL,)
    k = member or 0
    sides = []
    for ranks in by_sig.values():
        c = calls[ranks[0]]
        e = c.ops[k] if k < len(c.ops) else c.entry
        sides.append(FrSide(
            ranks=tuple(ranks), op=c.op if not c.members else f"{c.op}[{k}] {e.op}",
            input_sizes=_fmt(e.input_sizes), input_dtypes=_fmt(e.input_dtypes),
            output_sizes=_fmt(e.output_sizes), output_dtypes=_fmt(e.output_dtypes),
            where=next((calls[r].entry.where or calls[r].ops[0].where for r in ranks
                        if calls[r].entry.where or calls[r].ops[0].where), None),
            malformed=next((bad[r] for r in ranks if bad[r]), None),
            made_elsewhere=_made_elsewhere(op_sig(e), seq, k, group_calls)))
    t = min((c.entry.t_created for c in calls.values() if c.entry.t_created is not None), default=None)
    any_call = calls[min(calls)]
    return FrMismatch(pg=group[0], desc=desc, seq=seq, op=any_call.op, fields=fields,
                      sides=tuple(sorted(sides, key=lambda s: (-len(s.ranks), s.ranks))),
                      member=member if any(c.members for c in calls.values()) else None, t_created=t)


def _fields(sigs: list[tuple[str, tuple[OpSig, ...]]]) -> tuple[tuple[FrField, ...], int | None]:
    """What differs between the sides' signatures, and the first differing member of a coalesced group."""
    if len(sigs) < 2:
        return (), None
    if len({op for op, _ in sigs}) > 1:
        return (FrField.OP,), None
    if len({len(ops) for _, ops in sigs}) > 1:
        return (FrField.MEMBERS,), None
    for k in range(len(sigs[0][1])):
        column = [ops[k] for _, ops in sigs]
        if len(set(column)) > 1:
            names = (FrField.OP, FrField.INPUT_SIZES, FrField.INPUT_DTYPES, FrField.OUTPUT_SIZES, FrField.OUTPUT_DTYPES)
            return tuple(f for i, f in enumerate(names) if len({c[i] for c in column}) > 1), k
    return (), None


def _all_to_all_total(calls: Mapping[int, Call], members: tuple[int, ...]) -> str | None:
    """An all_to_all whose members' inputs and outputs, added up, differ (every member's call known)."""
    if not calls or any(c.members or c.op not in ALL_TO_ALL for c in calls.values()):
        return None
    if members and set(members) - set(calls):
        return None
    if any(not c.entry.input_sizes or not c.entry.output_sizes for c in calls.values()):
        return None
    ins = [numel(c.entry.input_sizes) for c in calls.values()]
    outs = [numel(c.entry.output_sizes) for c in calls.values()]
    if min(ins + outs) < 0:
        return None
    nin, nout = sum(ins), sum(outs)
    return None if nin == nout else f"the members' inputs add up to {nin} elements, their outputs to {nout}"


def _made_elsewhere(sig: OpSig, seq: int, k: int, group_calls: Mapping[int, Mapping[int, Call]]) -> tuple[int, ...]:
    """Ranks that made a call of this signature at another point of the group (another seq, or another
    member of a coalesced group)."""
    out = set()
    for r, by_seq in group_calls.items():
        for s, c in by_seq.items():
            if any(op_sig(e) == sig for i, e in enumerate(c.ops) if (s, i) != (seq, k)):
                out.add(r)
                break
    return tuple(sorted(out))


def _fmt(v: Iterable[object]) -> str:
    """Sizes as the dump writes them ("[[4, 4]]"); dtypes as a list of names ("Float", "Float,Half", "-")."""
    items = list(v)
    if all(isinstance(x, str) for x in items):
        return ",".join(str(x) for x in items) or "-"
    return str([list(x) if isinstance(x, tuple) else x for x in items])
