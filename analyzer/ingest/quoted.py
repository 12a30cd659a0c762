"""NCCL's own error messages quoted alone: a small text in which no parser found a line it reads, but where a line
names NCCL and is a message of NCCL's the knowledge base knows (``Error : no algorithm/protocol available for function
ReduceScatter with datatype ncclBfloat16. NCCL_ALGO was set to NVLS.``, the text PyTorch prints after ``Last error:``,
pasted without its head). Each such line is read as a WARN of no process, so the input is judged on what it says
instead of being refused as unreadable; text that names no NCCL is still nothing readable."""
from __future__ import annotations

import re
from pathlib import Path

from ..nccl.failures import Area, classify
from ..sources.records import NcclWarn, Rec
from .blocks import iter_lines

QUOTED_MAX_BYTES = 65536  # a quoted message or a short excerpt; a larger file no parser read is something else
MAX_QUOTED_LINES = 2000
NAMES_NCCL_RE = re.compile(r"\bNCCL(?:_[A-Z0-9_]{2,40})?\b|\bnccl[A-Z]\w{2,40}")  # NCCL, NCCL_ALGO, ncclSystemError
# the areas of NCCL's own messages (the others are torch's, CUDA's, the driver's, a launcher's)
NCCL_AREAS = frozenset({Area.INIT, Area.BOOTSTRAP, Area.SOCKET, Area.SHM, Area.IB, Area.P2P, Area.NVLS, Area.COLLNET,
                        Area.PROXY, Area.PLUGIN, Area.ENQUEUE, Area.TOPOLOGY, Area.MISMATCH, Area.NCCL_BUG})


def quoted_nccl_errors(path: Path, name: str) -> list[Rec]:
    """The lines of ``path`` that name NCCL and that the knowledge base knows as a message of NCCL's own, each an
    ``NcclWarn`` with no head (host "", pid 0: no process, no rank)."""
    out: list[Rec] = []
    for lineno, raw in iter_lines(path):
        if lineno > MAX_QUOTED_LINES:
            break
        text = raw.rstrip("\r\n")
        if not NAMES_NCCL_RE.search(text):
            continue
        entry = classify(text)
        if entry is not None and entry.area in NCCL_AREAS:
            out.append(NcclWarn(name, lineno, text, "", 0, 0, None, None, None, text.strip()))
    return out
