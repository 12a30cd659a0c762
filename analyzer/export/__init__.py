"""Exports to the tools people already use: ``perfetto`` (Chrome trace-event JSON, opened by
ui.perfetto.dev and chrome://tracing: the format of the PyTorch profiler and HTA) and ``prometheus``
(the text exposition format, for node_exporter's textfile collector). Pure functions from an analysis
to text; ``write_atomic`` is the one place that writes, and it never follows a link."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a fresh temporary file beside it, then rename: a reader (the
    textfile collector, a browser) never sees half a file; a link at either name is refused, not followed."""
    path = Path(path)
    if path.is_symlink():
        raise OSError(f"{path} is a symbolic link; refusing to write through it")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_alerts(path: Path, tail_bytes: int = 4 * 1024 * 1024) -> list[dict[str, Any]]:
    """The live monitor's alerts: the complete JSON lines in the last ``tail_bytes`` of ``alerts.jsonl``
    (a regular file only, never through a link)."""
    try:
        if path.is_symlink() or not path.is_file():
            return []
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - tail_bytes))
            chunk = f.read()
    except OSError:
        return []
    out = []
    for raw in chunk.split(b"\n"):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out
