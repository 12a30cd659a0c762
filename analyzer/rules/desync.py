"""Who is the odd one out of a mismatched collective."""
from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Side:
    """The ranks that made one call at the mismatched (pg, seq)."""

    ranks: tuple[int, ...]
    sig: Hashable  # (op, count, dtype) in the caller's own spelling
    where: str | None = None  # call site, when known


def call_of(side: Side, sides: list[Side]) -> Hashable:
    """What identifies a side's call: its call site when every side has one, else its signature."""
    return ("where", side.where) if all(s.where for s in sides) else ("sig", side.sig)


def odd_ranks(sides: list[Side], used_by: Mapping[Hashable, frozenset[int]]) -> tuple[tuple[int, ...], str | None]:
    """(culprits, how they were found: "majority" | "novel call" | None).

    ``used_by``: for each call (``call_of``), the ranks that made it at other sequence numbers of the
    run (or of the part of it still known)."""
    n = sum(len(s.ranks) for s in sides)
    big = sorted(sides, key=lambda s: -len(s.ranks))
    if n > 2 and len(big) > 1 and len(big[0].ranks) > n / 2:
        return tuple(sorted(r for s in big[1:] for r in s.ranks)), "majority"
    if len(sides) != 2:
        return (), None

    def made_by_others(s: Side) -> bool:
        return bool(used_by.get(call_of(s, sides), frozenset()) - frozenset(s.ranks))

    novel = [s for s in sides if not made_by_others(s)]
    if len(novel) == 1:
        return tuple(sorted(novel[0].ranks)), "novel call"
    return (), None
