"""What a training program's own start-up prints say of the job, beside what torch and the launchers print.

- The torch version a program prints of itself as ``name: value`` or ``name=value`` (RETURNN's ``PyTorch: 2.1.0+cu121``,
  a script's ``torch=2.13.0+cu130``): the release torch reports (``torch.__version__``), its local build suffix kept.
- RETURNN's line as each process joins the group (``Torch distributed initialized. Hostname cn-31, pid 71203, rank 0,
  local_rank 0, local_size 4, size 4``): the world's size, and one node where the processes of the printing node are
  the whole world (``local_size`` equal to ``size``).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from .records import NodeCount, Rec, TorchVersionLine, WorldSize

# "PyTorch: 2.1.0+cu121", "torch=2.13.0+cu130", "torch: 2.4.1" (not "torch.distributed: ..." nor a path)
TORCH_PRINT_RE = re.compile(r"(?<![\w./-])(?:PyTorch|torch)\s?[:=]\s?v?(?P<v>\d{1,2}\.\d{1,3}\.\d{1,3}(?:[a-z]\w{0,10})?"
                            r"(?:\+[\w.]{1,40})?)(?![\w.])")
RETURNN_DIST_RE = re.compile(r"Torch distributed initialized\. Hostname \S{1,255}, pid \d{1,10}, rank (?P<r>\d{1,7}), "
                             r"local_rank \d{1,7}, local_size (?P<ls>\d{1,7}), size (?P<s>\d{1,7})\b")
WORDS = ("orch:", "orch=", "orch: ", "orch =", "Torch distributed initialized")
MAX_WORLD = 1 << 20


def printed_torch(body: str) -> str | None:
    """The torch version a program's own print states, or None."""
    if not any(w in body for w in WORDS[:4]):
        return None
    m = TORCH_PRINT_RE.search(body[:2000])
    return m.group("v") if m else None


def returnn_world(body: str) -> tuple[int, int, bool] | None:
    """(rank, world size, the whole world on the printing node) of RETURNN's join line, or None."""
    if WORDS[4] not in body:
        return None
    m = RETURNN_DIST_RE.search(body)
    if m is None or not 0 < int(m.group("s")) <= MAX_WORLD:
        return None
    return int(m.group("r")), int(m.group("s")), int(m.group("ls")) == int(m.group("s"))


def facts_words(body: str) -> bool:
    """The line may hold one of these facts (a cheap gate before the regexes)."""
    return any(w in body for w in WORDS)


def program_facts(file: str, lineno: int, text: str, body: str) -> Iterator[Rec]:
    """The torch version, world size and node count the line states (none for any other line)."""
    if not facts_words(body):
        return
    v = printed_torch(body)
    if v is not None:
        yield TorchVersionLine(file, lineno, text, None, None, None, None, v, None)
    w = returnn_world(body)
    if w is not None:
        yield WorldSize(file, lineno, text, w[0], None, None, None, w[1])
        if w[2]:
            yield NodeCount(file, lineno, text, None, None, None, None, 1)
