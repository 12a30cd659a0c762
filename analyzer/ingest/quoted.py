"""Error messages quoted alone: a small text in which no parser found a line it reads, but where a line is a message
the knowledge base knows (``Error : no algorithm/protocol available for function ReduceScatter with datatype
ncclBfloat16. NCCL_ALGO was set to NVLS.``, the text PyTorch prints after ``Last error:``, pasted without its head;
NCCL's ``rank 27 and rank 19 both on CUDA device 4b000`` behind a blog's own ``Error:``; the source line of torch
that raised, ``raise RuntimeError("Distributed package doesn't have NCCL " "built in")``, its literal halves joined).
A message of NCCL's own is read as a WARN of no process, any other (torch's, CUDA's, a launcher's) as an error of no
rank, so the input is judged on what it says instead of being refused as unreadable; text the knowledge base does not
know is still nothing readable."""
from __future__ import annotations

import re
from pathlib import Path

from ..nccl.failures import Area, EntryKind, classify
from ..sources.records import DistError, NcclWarn, Rec
from .blocks import iter_lines

QUOTED_MAX_BYTES = 65536  # a quoted message or a short excerpt; a larger file no parser read is something else
MAX_QUOTED_LINES = 2000
# Python's adjacent string literals in a quoted source line: "doesn't have NCCL " "built in" is one string
ADJACENT_LITERALS_RE = re.compile(r"""(["'])\s{0,8}\1""")
RAISE_RE = re.compile(r"^\s{0,40}raise (?P<type>[\w.]{1,80})\((?P<msg>.{1,2000})\)\s*$")
# the areas of NCCL's own messages (the others are torch's, CUDA's, the driver's, a launcher's)
NCCL_AREAS = frozenset({Area.INIT, Area.BOOTSTRAP, Area.SOCKET, Area.SHM, Area.IB, Area.P2P, Area.NVLS, Area.COLLNET,
                        Area.PROXY, Area.PLUGIN, Area.ENQUEUE, Area.TOPOLOGY, Area.MISMATCH, Area.NCCL_BUG})


def quoted_nccl_errors(path: Path, name: str) -> list[Rec]:
    """The lines of ``path`` that the knowledge base knows as a failure: a message of NCCL's own an ``NcclWarn`` with no
    head (host "", pid 0: no process, no rank), any other a ``DistError`` of no rank (another's notes are no failure)."""
    out: list[Rec] = []
    for lineno, raw in iter_lines(path):
        if lineno > MAX_QUOTED_LINES:
            break
        text = raw.rstrip("\r\n")
        said = _said(text)
        entry = classify(said)
        if entry is None:
            continue
        if entry.area in NCCL_AREAS:
            out.append(NcclWarn(name, lineno, text, "", 0, 0, None, None, None, said.strip()))
        elif entry.kind is not EntryKind.NOTE:
            raised = RAISE_RE.match(said)
            etype, msg = (raised.group("type"), raised.group("msg").strip("'\" ")) if raised else ("quoted", said.strip())
            out.append(DistError(name, lineno, text, None, None, None, None, etype, msg, None, []))
    return out


def _said(text: str) -> str:
    """The message a line states: a quoted source line's string literals joined (``"... NCCL " "built in"``)."""
    return ADJACENT_LITERALS_RE.sub("", text) if "raise " in text else text
