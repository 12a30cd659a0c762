"""Error messages quoted alone: a small text in which no parser found a line it reads, but where a line is a message
the knowledge base knows: NCCL's own, naming NCCL (``Error : no algorithm/protocol available for function
ReduceScatter with datatype ncclBfloat16. NCCL_ALGO was set to NVLS.``, the text PyTorch prints after ``Last error:``,
pasted without its head), read as a WARN of no process; or torch's distributed set-up's or a launcher's (c10d's
``The server socket has failed to listen ...``, the source line of torch that raised, ``raise RuntimeError(
"Distributed package doesn't have NCCL " "built in")``, its literal halves joined), read as an error of no rank. The
input is judged on what it says instead of being refused as unreadable; text that is neither (a CUDA error alone, an
NCCL-like message that does not name NCCL) is still nothing readable."""
from __future__ import annotations

import re
from pathlib import Path

from ..nccl.failures import DIST_AREAS, Area, EntryKind, classify
from ..sources.records import DistError, NcclWarn, Rec
from .blocks import iter_lines

QUOTED_MAX_BYTES = 65536  # a quoted message or a short excerpt; a larger file no parser read is something else
MAX_QUOTED_LINES = 2000
NAMES_NCCL_RE = re.compile(r"\bNCCL(?:_[A-Z0-9_]{2,40})?\b|\bnccl[A-Z]\w{2,40}")  # NCCL, NCCL_ALGO, ncclSystemError
# Python's adjacent string literals in a quoted source line: "doesn't have NCCL " "built in" is one string
ADJACENT_LITERALS_RE = re.compile(r"""(["'])\s{0,8}\1""")
RAISE_RE = re.compile(r"^\s{0,40}raise (?P<type>[\w.]{1,80})\((?P<msg>.{1,2000})\)\s*$")
# the areas of NCCL's own messages (the others are torch's, CUDA's, the driver's, a launcher's)
NCCL_AREAS = frozenset({Area.INIT, Area.BOOTSTRAP, Area.SOCKET, Area.SHM, Area.IB, Area.P2P, Area.NVLS, Area.COLLNET,
                        Area.PROXY, Area.PLUGIN, Area.ENQUEUE, Area.TOPOLOGY, Area.MISMATCH, Area.NCCL_BUG})


def quoted_nccl_errors(path: Path, name: str) -> list[Rec]:
    """The lines of ``path`` that the knowledge base knows: a message of NCCL's own that names NCCL an ``NcclWarn`` with
    no head (host "", pid 0: no process, no rank); a failure of torch's distributed set-up or a launcher a ``DistError``
    of no rank."""
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
            if NAMES_NCCL_RE.search(said):  # (an NCCL-like message that does not name NCCL is someone else's)
                out.append(NcclWarn(name, lineno, text, "", 0, 0, None, None, None, said.strip()))
        elif entry.area in DIST_AREAS and entry.kind is not EntryKind.NOTE:
            raised = RAISE_RE.match(said)
            etype, msg = (raised.group("type"), raised.group("msg").strip("'\" ")) if raised else ("quoted", said.strip())
            out.append(DistError(name, lineno, text, None, None, None, None, etype, msg, None, []))
    return out


def _said(text: str) -> str:
    """The message a line states: a quoted source line's string literals joined (``"... NCCL " "built in"``)."""
    return ADJACENT_LITERALS_RE.sub("", text) if "raise " in text else text
