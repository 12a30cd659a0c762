"""What the Flight Recorder analyser's own report (``fr_trace``'s text, pasted into a log) states, as a verdict.

It compares every rank's entry of one collective with a reference rank's and names the others as "Culprit rank N"
with the error type: ranks that called another collective (``COLLECTIVE_TYPE_MISMATCH``), another size
(``SIZE_OR_SYNTAX_MISMATCH``) or another dtype (``COLLECTIVE_DTYPE_MISMATCH``) at that sequence number are a desync,
not a hang, whatever timed out after it. The named ranks are the odd side when they are fewer than the rest of the
world it prints (the reference rank's side is the majority); when they are as many or more, the reference rank is
the odd one and which rank that is the report does not say: no culprit. Without a world size, the report's word is
taken. A state mismatch (one rank's entry completed, another's scheduled) is no desync. Ranks it lists as
``missing ranks`` never joined the collective: a hang, they are its culprits. Two collectives it reports, each
missing the ranks the other is not missing (ranks 0 and 1 absent from the default group's all-gather, ranks 2 to 7
from a sub-group's all-to-all): each side stands in a collective the other never called, a desync (``apart``)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MISMATCH_KINDS = {"SIZE_OR_SYNTAX_MISMATCH": "size", "COLLECTIVE_TYPE_MISMATCH": "op",
                  "COLLECTIVE_DTYPE_MISMATCH": "dtype"}


@dataclass(frozen=True, slots=True)
class Stated:
    verdict: str  # "desync" | "hang" (model.Verdict's value)
    culprits: tuple[int, ...]
    what: tuple[str, ...]  # "size", "op", "dtype" for a desync; () for a hang
    why: str


def stated(culprits: Iterable[tuple[int, str]], missing: Iterable[int], world: int | None) -> Stated | None:
    """``culprits``: (rank, error type) the report names; ``missing``: the ranks it lists as missing; ``world``: its
    world size, when printed."""
    named = sorted({(r, k) for r, k in culprits if k in MISMATCH_KINDS})
    if named:
        ranks = tuple(sorted({r for r, _ in named}))
        what = tuple(sorted({MISMATCH_KINDS[k] for _, k in named}))
        rest = world - len(ranks) if world else None
        if rest is not None and len(ranks) >= rest:
            return Stated("desync", (), what, f"the Flight Recorder analyser found ranks {_fmt(ranks)} unlike its "
                          f"reference rank ({', '.join(what)}), as many as the rest of the {world} ranks: the odd "
                          "rank is its reference, which the report does not name")
        return Stated("desync", ranks, what, f"the Flight Recorder analyser names rank{'s' if len(ranks) > 1 else ''} "
                      f"{_fmt(ranks)} as calling a different collective ({', '.join(what)}) from the others")
    gone = tuple(sorted(set(missing)))
    if gone:
        return Stated("hang", gone, (), f"the Flight Recorder analyser finds rank{'s' if len(gone) > 1 else ''} "
                      f"{_fmt(gone)} missing from the collective: {'they' if len(gone) > 1 else 'it'} never joined it")
    return None


def apart(reports: Iterable[tuple[str, Iterable[int]]], world: int | None) -> Stated | None:
    """``reports``: (the collective as the report names it: its group and op, the ranks missing from it); ``world``: the
    world size it prints. Two different collectives with missing ranks, none missing from both and every rank of the
    world missing from one of them: the ranks split between them, a desync. Its culprits are the smaller side when it
    is under half of the ranks, else none. Without a world size: None (two stalls of their own are not told apart)."""
    if not world:
        return None
    seen: dict[str, set[int]] = {}
    for what, ranks in reports:
        seen.setdefault(what, set()).update(ranks)
    items = [(w, rs) for w, rs in seen.items() if rs]
    for i, (wa, a) in enumerate(items):
        for wb, b in items[i + 1:]:
            if a & b or a | b != set(range(world)):
                continue
            small, big = sorted((a, b), key=len)
            culprits = tuple(sorted(small)) if len(small) < len(big) else ()
            return Stated("desync", culprits, ("op",),
                          f"the Flight Recorder analyser finds ranks {_fmt(tuple(sorted(a)))} missing from {wa} and "
                          f"ranks {_fmt(tuple(sorted(b)))} missing from {wb}: each side stands in a collective the other "
                          "never called")
    return None


def _fmt(ranks: tuple[int, ...]) -> str:
    return ", ".join(map(str, ranks[:16])) + (f" and {len(ranks) - 16} more" if len(ranks) > 16 else "")
