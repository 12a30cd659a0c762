"""The live monitor's alerts file in a run folder (``DIR/alerts.jsonl``, docs/interfaces.md): its one name and its
one reader.

The monitor appends one JSON object a line (``live.alerts.FileSink``); the analysis (a hang alert still open at the
end stays the verdict: ``verdict.live_hang``), the exports (alerts by kind) and the dashboard (the newest as a
banner) read it here, all the same way: a regular file only, opened without blocking or following a link
(``safe_io.open_regular``: a FIFO or a link planted under the name is never opened), its last bytes only.
"""
from __future__ import annotations

import enum
import json
import os
from pathlib import Path
from typing import Any

from . import safe_io

ALERTS_FILE = "alerts.jsonl"


class AlertKind(enum.StrEnum):
    """An alert's ``kind``: an incident (its verdict's word), its later detail, or the end of one."""

    HANG = "hang"
    HANG_DETAIL = "hang_detail"  # the stacks and dumps asked for when the hang alert was raised
    DESYNC = "desync"
    DESYNC_DETAIL = "desync_detail"  # every rank's record of the mismatched collective is in
    CRASH = "crash"
    CONFIG_ERROR = "config_error"
    CLEARED = "cleared"  # an incident alerted before is over (``incident`` names it)

ALERTS_MAX_BYTES = 4 << 20  # the newest alerts read: thousands of alerts; a run raises a few
NEWEST_MAX_BYTES = 64 << 10  # enough for the last alert (a hang alert with every rank's stack is the largest)


def read_alerts(path: Path, limit: int = ALERTS_MAX_BYTES) -> list[dict[str, Any]]:
    """The alerts in the last ``limit`` bytes of the alerts file ``path``, oldest first: each line that is a JSON
    object with a ``kind``. A line cut by the start of those bytes, one still being written and any other line are
    skipped; [] when ``path`` is absent, unreadable or not a regular file."""
    try:
        with safe_io.open_regular(path) as f:
            size = f.seek(0, os.SEEK_END)
            start = max(0, size - limit - 1)  # one byte before: whether the first line read begins there
            f.seek(start)
            data = f.read(limit + 1)
    except OSError:
        return []
    lines = data.decode("utf-8", "replace").split("\n")
    if start:
        lines = lines[1:]  # the end of a line that began before the bytes read (empty if one ended right there)
    out: list[dict[str, Any]] = []
    for line in lines:
        try:
            a = json.loads(line)
        except ValueError:
            continue
        if isinstance(a, dict) and isinstance(a.get("kind"), str):
            out.append(a)
    return out


def newest_alert(path: Path, limit: int = NEWEST_MAX_BYTES) -> dict[str, Any] | None:
    """The last alert of the alerts file ``path`` (``read_alerts`` over its last ``limit`` bytes), or None."""
    alerts = read_alerts(path, limit)
    return alerts[-1] if alerts else None


def folder_alerts(folders: list[Path]) -> list[dict[str, Any]]:
    """The alerts of each folder's alerts file, folder by folder."""
    return [a for d in folders for a in read_alerts(Path(d) / ALERTS_FILE)]
