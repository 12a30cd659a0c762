"""Who is to blame for a mismatched collective in Flight Recorder dumps (``FrJob.mismatches``).

The ranks whose own call is wrong (its input and output disagree for its op and the group's size,
``model_build.fr_match``) when the others' is right; every rank when every call is wrong; an
all_to_all whose totals do not add up names nobody (any member may be off). Otherwise the odd
ranks out (``desync.odd_ranks``): those outside a strict majority; with two sides of no majority,
the side whose call no rank outside it made at another point of the group. Never "whoever differs
from the first file": the order of the files says nothing. The first mismatch of the job is the
earliest one entered (its entries' creation time), then by group.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..fr_model import FrField, FrMismatch
from .desync import Side, call_of, odd_ranks

BY_OWN_CALL = "its own call is wrong"
BY_EVERY_CALL = "every rank's call is wrong"


def culprits(m: FrMismatch) -> tuple[tuple[int, ...], str | None]:
    """(culprit ranks, how they were found)."""
    bad = [s for s in m.sides if s.malformed]
    if bad and len(bad) < len(m.sides):
        return tuple(sorted(r for s in bad for r in s.ranks)), BY_OWN_CALL
    if bad:
        return tuple(sorted(r for s in bad for r in s.ranks)), BY_EVERY_CALL
    if FrField.TOTAL in m.fields or len(m.sides) < 2:
        return (), None
    sides = [Side(s.ranks, (s.op, s.input_sizes, s.input_dtypes, s.output_sizes, s.output_dtypes)) for s in m.sides]
    used = {call_of(side, sides): frozenset(s.made_elsewhere) for side, s in zip(sides, m.sides, strict=True)}
    return odd_ranks(sides, used)


def first(mismatches: Sequence[FrMismatch]) -> FrMismatch | None:
    def key(m: FrMismatch) -> tuple[float, tuple[int, int | str], int]:
        return (m.t_created if m.t_created is not None else float("inf"),
                (0, int(m.pg)) if m.pg.isdigit() else (1, m.pg), m.seq)

    return min(mismatches, key=key, default=None)
