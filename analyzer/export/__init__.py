"""Exports to the tools people already use: ``perfetto`` (Chrome trace-event JSON, opened by
ui.perfetto.dev and chrome://tracing: the format of the PyTorch profiler and HTA) and ``prometheus``
(the text exposition format, for node_exporter's textfile collector). Pure functions from an analysis
to text; ``write_atomic`` is the one place that writes: to a regular file only (a device, a FIFO, a
folder or a link at the target is refused, never replaced or written through), atomically, through
``safe_io.write_replace`` (a fresh temporary of an unguessable name in the target's folder, renamed
over it within that folder's descriptor). ``target_problem`` says, before any work, why a target
cannot be written; ``write_problem`` says it of a write that failed."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .. import safe_io


def target_problem(path: Path) -> str | None:
    """Why ``path`` cannot take an export (None: it can, as far as can be told before writing)."""
    parent = Path(path).parent
    if not parent.is_dir():
        return f"its folder {parent} does not exist" if not os.path.lexists(parent) else f"{parent} is not a folder"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        return safe_io.describe(e)
    if st is not None and not stat.S_ISREG(st.st_mode):
        return f"it is {safe_io.kind_of(st.st_mode)}, not a regular file (exports replace regular files only)"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"no permission to create files in {parent}"
    return None


def write_problem(path: Path, e: OSError) -> str:
    """A failed ``write_atomic`` as one short reason."""
    if isinstance(e, safe_io.NotRegularFile):
        return f"it is {e.strerror} (exports replace regular files only)"
    if e.errno == errno.ENOENT and not Path(path).parent.is_dir():
        return f"its folder {Path(path).parent} does not exist"
    if e.errno in (errno.ENOENT, errno.EISDIR, errno.ENOTDIR):
        return f"cannot create a file in {Path(path).parent} ({safe_io.describe(e)})"
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"no permission to write in {Path(path).parent} ({safe_io.describe(e)})"
    return safe_io.describe(e)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a fresh temporary file beside it, then rename: a reader (the
    textfile collector, a browser) never sees half a file; a target that is a link, a device, a FIFO
    or a folder is refused (``safe_io.NotRegularFile``), never replaced or followed."""
    safe_io.write_replace(Path(path), text.encode("utf-8"), 0o644, regular_only=True)
