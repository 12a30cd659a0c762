"""The peer the others lost, from logs alone: a rank killed from outside (SIGKILL, the OOM killer, a node gone) prints
no end of its own; the ranks still alive say a peer went away ("Connection closed by remote peer", "Connection reset
by peer", "remote process exited", "Broken pipe"). ``cause.vanished`` reads this from the hook's heartbeats; here
the same story is read from what logs show.

The rule (pure): every failure on the time line is what a rank sees of a peer gone (no cause of its own: an
exception, an OOM, a CUDA error, a failure of its own link), and at least one such report is there. The candidates
are the ranks seen in the input whose lines stop with no end of their own (no exit record, no failure, no report
of a peer gone, no own end printed), and the ranks the reports name by rank ("Proxy Call to rank 3 failed"). Where
the reports name an address or a host (``... closed by remote peer 10.1.0.9<43117>``), the candidates on it are
kept, when any is. One candidate left: it is the lost peer, a crash of that rank (likely: its own end is not in
the input). Several, or none: nothing is named."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .cause import Failure
from .exits import FailureKind

# what a rank says of a peer that went away (not of its own link failing: an IB completion error is the link's)
PEER_GONE_RE = re.compile(r"(?i)closed by (?:remote )?peer|reset by peer|broken pipe|peer (?:closed|disconnected)|"
                          r"remote process exit|failed to recv, got 0 bytes")
LINK_ERROR_RE = re.compile(r"(?i)completion (?:from peer .{0,80})?with error|ibv_\w+|fatal (?:async )?event|"
                           r"QP|vendor err")
NAMED_RANK_RE = re.compile(r"\bProxy Call to rank (\d{1,7}) failed")
LOST_ORDER = ("", -2)  # the time-line place of a lost peer: before every line of the input, after torchrun's own word
ECHO_KINDS = frozenset({FailureKind.PEER, FailureKind.EXIT, FailureKind.KILLED, FailureKind.TIMEOUT,
                        FailureKind.ABORT})


@dataclass(frozen=True, slots=True)
class Report:
    """One line of a rank (None: not known) saying a peer went away."""

    rank: int | None
    text: str
    t: float | None = None


def says_peer_gone(text: str) -> bool:
    """The text is a rank's report of a peer gone, not of its own link failing."""
    return bool(PEER_GONE_RE.search(text)) and not LINK_ERROR_RE.search(text)


def lost_peer(seen: Iterable[int], failures: Iterable[Failure], reports: Iterable[Report], ended: Iterable[int],
              addresses: Mapping[int, Iterable[str]]) -> Failure | None:
    """``seen``: the ranks with lines of their own in the input; ``failures``: the run's explained time line;
    ``reports``: each line saying a peer went away (failures and NCCL WARNs alike); ``ended``: ranks whose end is in
    the input (an exit record, their own end printed); ``addresses``: rank -> the host names and addresses its lines
    show (its host, its bootstrap interface's address). The lost peer as a ``VANISHED`` failure, or None."""
    fs = list(failures)
    said = [r for r in reports if says_peer_gone(r.text)]
    speaking = {r.rank for r in said if r.rank is not None} | {f.rank for f in fs if f.rank is not None}
    reporting = {r.rank for r in said if r.rank is not None} | {f.rank for f in fs if f.rank is not None
                                                                and says_peer_gone(f.text)}
    own = [f for f in fs if f.is_cause and not says_peer_gone(f.text)
           and not (f.kind is FailureKind.EXIT and (f.rank is None or f.rank in reporting))]
    if not said or own or any(not f.is_cause and f.kind not in ECHO_KINDS for f in fs):
        return None
    named = {int(m.group(1)) for r in said for m in NAMED_RANK_RE.finditer(r.text)}
    candidates = (set(seen) | named) - speaking - set(ended)
    texts = " ".join(r.text for r in said)
    pointed = {c for c in candidates if any(a and _names(texts, a) for a in addresses.get(c, ()))}
    pointed |= candidates & named
    pick = pointed or candidates
    if len(pick) != 1:
        return None
    lost = next(iter(pick))
    who = ", ".join(map(str, sorted(r for r in speaking if r is not None))) or "the others"
    t = min((r.t for r in said if r.t is not None), default=None)
    how = " (the reports name its address)" if pointed else ""
    return Failure(lost, FailureKind.VANISHED, f"rank {lost}'s lines stop with no end of its own while rank(s) {who} "
                   f"say a peer went away{how}: it was killed or crashed (SIGKILL, the OOM killer, a lost node)",
                   t, LOST_ORDER)


def is_lost_peer(f: Failure | None) -> bool:
    """``f`` is this rule's inference (likely, not a record of the rank's own end)."""
    return f is not None and f.kind is FailureKind.VANISHED and f.order == LOST_ORDER


def _names(text: str, address: str) -> bool:
    """``address`` appears in ``text`` as a whole name or address (``10.1.0.9<43117>``, ``node-b.cluster``), not
    inside a longer one (``10.1.0.91``)."""
    return re.search(rf"(?<![\w.:-]){re.escape(address)}(?![\w:-]|\.\d)", text) is not None
