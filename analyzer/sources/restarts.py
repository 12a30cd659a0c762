"""A launcher's word that the job starts again in the same console: torchrun's elastic agent restarting its worker
group (``Worker group FAILED. 3/3 attempts left; will restart worker group``, a rendezvous result with
``restart_count=1``). ``model_build.runs`` cuts a console at the last of them that a run follows (a job started anew
by hand is told by its processes claiming the ranks again)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .records import TorchRec

RESTART_RE = re.compile(r"will restart worker group|[Rr]estarting (?:the )?worker group|\brestart_count=(?P<n>\d{1,6})\b")
GATE = ("restart",)


@dataclass(slots=True)
class RunRestart(TorchRec):
    """A restart of the worker group."""


def restart_record(head: tuple[str, int, str, int | None, str | None, str | None, str | None],
                   body: str) -> RunRestart | None:
    if not any(w in body for w in GATE):
        return None
    m = RESTART_RE.search(body)
    if m is None or (m.group("n") is not None and int(m.group("n")) == 0):
        return None
    return RunRestart(head[0], head[1], head[2], None, head[4], head[5], None)
