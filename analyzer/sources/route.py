"""One router for a text log's lines, shared by ``analyze`` (``ingest.assemble``) and the live monitor
(``live.monitor``), so that a line means the same whether the folder is finished or still growing.

Hard-wrapped lines are joined back first (``lines.rejoin_wrapped``, accepting a join when the parsers read more
of it: ``wrapped_join_known``); a line that may be NCCL's goes to the NCCL parser (``NCCL`` word or 2.0-2.2's
heads without it); an NCCL INFO / WARN / CALL / TRACE line no parser took stays NCCL's (it is never passed to the
PyTorch parser); every other line goes on to the PyTorch / launcher parser, which its caller runs.
"""
from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator

from .lines import maybe_nccl, nccl_only, rejoin_wrapped
from .nccl_log import join_adds, parse_nccl_line
from .records import NcclRec
from .torch_log import torch_line_facts


class Route(enum.Enum):
    NCCL = "nccl"  # an NCCL record (the line's parsed form rides along)
    NCCL_UNREAD = "nccl_unread"  # NCCL's line, no NCCL parser took it
    TEXT = "text"  # for the PyTorch / launcher parser


Routed = tuple[Route, int, str, NcclRec | None]  # (route, line number, text, the NCCL record if any)


def wrapped_join_known(first: str, joined: str) -> bool:
    """Whether the pieces of a hard-wrapped line, joined, are a line the parsers know: an NCCL line that
    reads more than its first piece alone (cut at the wrap, that lost the rest of its message), or a
    PyTorch line that reads at least the facts its first piece alone does (a watchdog's exception whose
    quoted timeout was cut at the wrap)."""
    if join_adds(first, joined):  # a complete NCCL line and the short line after it are no wrap
        return True
    facts = torch_line_facts(joined)
    return facts > 0 and facts >= torch_line_facts(first)


def route_lines(lines: Iterable[tuple[int, str]], name: str) -> Iterator[Routed]:
    """Each (line number, text) of a log, wrapped lines joined, with where it goes. Plain tuples: this runs
    once per line that is not a COLL row, millions of times on a large job."""
    nccl, unread, text_ = Route.NCCL, Route.NCCL_UNREAD, Route.TEXT
    for lineno, text in rejoin_wrapped(lines, wrapped_join_known):
        if maybe_nccl(text):  # 2.2 printed no "NCCL" word
            rec = parse_nccl_line(text, name, lineno)
            if rec is not None:
                yield nccl, lineno, text, rec
                continue
            if nccl_only(text):
                yield unread, lineno, text, None
                continue
        yield text_, lineno, text, None
