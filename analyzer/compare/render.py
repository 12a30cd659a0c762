"""A comparison as ``diff --json``'s object (``schema/diff.schema.json``) or as text on a rich console: the two
verdicts, then one line per difference with where each run shows it, then what could not be compared."""
from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..model import Evidence
from ..text_fit import evidence_line
from ..text_safety import clean
from .model import Comparison, Difference, Direction, RunSide

TIER_STYLE = {"measured": "bold red", "transport": "bold magenta", "algorithm": "bold yellow", "setting": "yellow",
              "rest": "dim"}
VERDICT_STYLE = {"healthy": "bold green", "degraded": "bold yellow", "unknown": "bold"}
ARROW = {Direction.SLOWER: "B slower", Direction.FASTER: "B faster", Direction.CHANGED: ""}


def to_json(c: Comparison) -> dict[str, Any]:
    return {**c.to_json(), "ncclscope_version": __version__}


def json_text(c: Comparison) -> str:
    return json.dumps(to_json(c), allow_nan=False)


def where(e: Evidence | None) -> str:
    """``file:line`` of a side's evidence (the file alone for a dump, which has no lines; ``-`` for none)."""
    if e is None:
        return "-"
    return f"{e.file}:{e.line}" if e.line else e.file


def line_of(n: int, d: Difference) -> str:
    """One difference as one plain line: its rank, tier, message, and where A and B show it."""
    way = ARROW[d.direction]
    return (f"{n:>2}. {d.tier.word:<9} {d.message}" + (f" [{way}]" if way else "")
            + f"  (A {where(d.a.evidence)}; B {where(d.b.evidence)})")


def _run_line(tag: str, s: RunSide) -> Any:
    from rich.text import Text

    return Text.assemble((f"{tag}: ", "bold"), clean(s.label), "  ",
                         (s.verdict.value.upper(), VERDICT_STYLE.get(s.verdict.value, "bold red")), "  ",
                         clean(s.headline))


def render_text(c: Comparison, console: Any, evidence: bool = False) -> None:
    """Print the comparison: both runs' verdicts, each difference on one line (most likely to matter for speed
    first), with ``evidence`` the text of both lines under it; then what could not be compared. Text that came
    from the inputs is printed as ``rich.text.Text`` of ``text_safety.clean``, never parsed as markup."""
    from rich.text import Text

    console.print(_run_line("A", c.a))
    console.print(_run_line("B", c.b))
    console.print()
    if not c.differences:
        console.print(Text("No difference found in what both inputs show."))
    else:
        console.print(Text(f"{len(c.differences)} difference{'s' if len(c.differences) != 1 else ''}, most likely "
                           "to matter for speed first:", style="bold"))
    for n, d in enumerate(c.differences, 1):
        text = clean(line_of(n, d))
        head = len(f"{n:>2}. ")
        console.print(Text.assemble(text[:head], (text[head:head + 9], TIER_STYLE[d.tier.word]), text[head + 9:]))
        if evidence:
            for tag, side in (("A", d.a), ("B", d.b)):
                if side.evidence is not None:
                    console.print(Text(clean(f"      {tag} {where(side.evidence)}: "
                                             f"{evidence_line(side.evidence.text)}")))
    if c.not_compared:
        console.print()
        console.print(Text("Not compared:", style="bold"))
        for note in c.not_compared:
            console.print(Text(clean(f"  {note}")))
