"""The text report of PyTorch's Flight Recorder analyser (``fr_trace`` / ``torchfrtrace``), pasted into a log.

For each collective whose ranks' Flight Recorder entries disagree it prints a block::

    Collective 39 at entry 38 errors      (2.5; "Not all ranks joining collective 5 at entry 4", later "... sequence
                                          number: 39", 2.4 one line: "... Missing ranks are {1}")
    group info: 0:default_pg
    collective: nccl:all_reduce
    missing ranks: {3}                                     (ranks with no entry for it: they never joined)
    input sizes: [[1025]]
    world size: 8
    expected ranks: {0, 1, 2, 3, 4, 5, 6, 7}
    collective state: scheduled
    error msg: Culprit rank 5; Error type: SIZE_OR_SYNTAX_MISMATCH, Expected input sizes: '[[1025]]' does not match
    found input sizes: '[[2048]]', Culprit rank 6; ...

``FrTraceReport`` is given for each ``missing ranks`` and ``error msg`` line, with what the block said before it
(its sequence number, group, collective and world size)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .records import TorchRec

HEAD_RE = re.compile(r"^(?:(?:Not all ranks joining c|C)ollective (?P<a>\d{1,12}) at entry \d{1,12}"
                     r"|.{0,120}?\bsequence number:? (?P<b>\d{1,12})\b)")
# 2.4's one-line form: "Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce Missing
# ranks are {1}"
ONE_LINE_RE = re.compile(r"^Not all ranks joining collective for group (?P<pg>[^:\s]{1,64})(?::\S{0,120})? collective "
                         r"(?:\w{1,16}:)?(?P<op>[\w.]{1,64}).{0,40}?Missing ranks are (?P<ranks>\{[\d, ]{0,4000}\})")
GROUP_RE = re.compile(r"^group info: (?P<pg>[^:\s]{1,64})(?::(?P<desc>\S{1,120}))?")
OP_RE = re.compile(r"^collective: (?:\w{1,16}:)?(?P<op>[\w.]{1,64})")
RANKS_RE = re.compile(r"\d{1,7}")
WORLD_RE = re.compile(r"^world size: (?P<n>\d{1,7})")
CULPRIT_RE = re.compile(r"Culprit rank (?P<r>\d{1,7}); Error type: (?:MatchState\.)?(?P<kind>[A-Z_]{3,40})")
# the line heads of a block: a line that starts with none of them is left to the other readers
HEADS = ("Collective ", "Not all ranks joining", "group info:", "collective:", "missing ranks:", "world size:",
         "error msg:")
SEQ_WORDS = ("sequence number",)


@dataclass(slots=True)
class FrTraceReport(TorchRec):
    """One finding of the Flight Recorder analyser's report: the ranks it names as culprits of a mismatch
    (``culprits``, each with its error type in ``kinds``) or the ranks missing from a collective (``missing``)."""

    seq: int | None
    op: str | None
    culprits: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
    world: int | None = None


@dataclass
class FrTraceText:
    """What the block being read has said so far."""

    seq: int | None = None
    pg: str | None = None
    op: str | None = None
    world: int | None = None
    told: FrTraceReport | None = None  # the block's report already given (its world size may follow it)

    @staticmethod
    def wants(body: str) -> bool:
        """The line may be one of a report block's."""
        return body.startswith(HEADS) or ("sequence number" in body and "collective" in body.lower())

    def read(self, head: tuple[str, int, str, int | None, str | None, str | None, str | None],
             body: str) -> FrTraceReport | None:
        one = ONE_LINE_RE.match(body) if body.startswith("Not all ranks joining collective for") else None
        if one is not None:
            self.seq, self.pg, self.op, self.world = None, one.group("pg"), one.group("op"), None
            missing = sorted({int(x) for x in RANKS_RE.findall(one.group("ranks"))})
            return self._report(head, missing=missing) if missing else None
        h = HEAD_RE.match(body)
        if h is not None and (h.group("a") or h.group("b")):
            self.seq, self.pg, self.op, self.world = int(h.group("a") or h.group("b")), None, None, None
            self.told = None
            return None
        if self.seq is None and self.op is None:
            return None
        if (g := GROUP_RE.match(body)) is not None:
            self.pg = g.group("pg")
        elif (o := OP_RE.match(body)) is not None:
            self.op = o.group("op")
        elif (w := WORLD_RE.match(body)) is not None:
            self.world = int(w.group("n"))
            if self.told is not None and self.told.world is None:  # the block's world size after its missing ranks
                self.told.world = self.world
        elif body.startswith("missing ranks:"):
            missing = sorted({int(x) for x in RANKS_RE.findall(body.split(":", 1)[1])})
            if missing:
                return self._report(head, missing=missing)
        elif body.startswith("error msg:"):
            named = [(int(m.group("r")), m.group("kind")) for m in CULPRIT_RE.finditer(body)]
            if named:
                return self._report(head, culprits=[r for r, _ in named], kinds=[k for _, k in named])
        return None

    def _report(self, head: tuple[str, int, str, int | None, str | None, str | None, str | None],
                culprits: list[int] | None = None, kinds: list[str] | None = None,
                missing: list[int] | None = None) -> FrTraceReport:
        self.told = FrTraceReport(head[0], head[1], head[2], None, head[4], head[5], self.pg, self.seq, self.op,
                                  culprits or [], kinds or [], missing or [], self.world)
        return self.told
