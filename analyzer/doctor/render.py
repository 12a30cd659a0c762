"""Rich renderables for a doctor report (the CLI prints them)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.markup import escape
from rich.table import Table

from . import DoctorReport
from .checks import Status

STYLE = {Status.OK: "green", Status.WARN: "yellow", Status.FAIL: "bold red", Status.SKIPPED: "dim"}


def render_report(r: DoctorReport) -> Iterator[Any]:
    t = Table(title=f"ncclscope doctor: {escape(r.host)}", show_lines=False, expand=False)
    t.add_column("check", no_wrap=True)
    t.add_column("status", no_wrap=True)
    t.add_column("finding", overflow="fold")
    for c in r.checks:
        t.add_row(escape(c.title), f"[{STYLE[c.status]}]{c.status.value}[/]", escape(c.message))
    yield t
    if r.settings:
        s = Table(title="NCCL / TORCH_NCCL settings in the environment")
        for col in ("variable", "value", "default", "meaning / note"):
            s.add_column(col, overflow="fold")
        for row in r.settings:
            text = row.meaning or ""
            if row.note:
                text = (text + "; " if text else "") + f"[{STYLE[row.status]}]{escape(row.note)}[/]"
            s.add_row(escape(row.name), escape(row.value), escape(row.default or "?"), text)
        yield s
    if r.advice:
        yield "[bold]advice[/]"
        for a in r.advice:
            yield f"  - {escape(a)}"
    yield f"overall: [{STYLE[r.status]}]{r.status.value}[/]"
