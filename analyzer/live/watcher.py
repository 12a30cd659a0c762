"""Which files of a run folder changed: watchdog events plus a periodic rescan.

The event handler runs on the observer's thread and only enqueues paths. ``PollingObserver``
(``poll=True``) is for network filesystems (NFS, Lustre, GPFS, SMB) where inotify sees nothing
that other hosts write. Events can be missed (queue overflow, a folder created before it was
watched), so ``changed()`` also returns every matching file on a rescan every ``rescan_s``.
A folder that does not exist yet is waited for.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from .. import safe_io

MAX_DEPTH = 3  # run folder / node folder / rank folder
IGNORED_DIRS = {"ncclscope-control", "__pycache__", ".git"}


class _Enqueue(FileSystemEventHandler):
    def __init__(self, q: queue.SimpleQueue[str]) -> None:
        self.q = q

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory and event.event_type not in ("created", "moved"):
            return
        self.q.put(os.fsdecode(event.src_path))
        dest = getattr(event, "dest_path", "")
        if dest:
            self.q.put(os.fsdecode(dest))


def scan(root: Path, wanted: Callable[[str], bool], max_depth: int = MAX_DEPTH,
         skipped: dict[str, str] | None = None) -> list[str]:
    """Every regular file under ``root`` (to ``max_depth`` folders down) whose name ``wanted`` accepts;
    ``skipped`` gets path -> why for a wanted name that is a link (not followed), a FIFO or a device."""
    out: list[str] = []
    stack = [(str(root), 0)]
    while stack:
        d, depth = stack.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            if depth < max_depth and e.name not in IGNORED_DIRS:
                                stack.append((e.path, depth + 1))
                        elif e.is_file(follow_symlinks=False) and wanted(e.name):
                            out.append(e.path)
                        elif skipped is not None and wanted(e.name):
                            skipped[e.path] = safe_io.kind_of(e.stat(follow_symlinks=False).st_mode) + (
                                ", not followed" if e.is_symlink() else ", not a regular file")
                    except OSError:
                        continue
        except OSError:
            continue
    return out


class DirWatcher:
    def __init__(self, root: Path, wanted: Callable[[str], bool], poll: bool = False,
                 rescan_s: float = 2.0, poll_interval_s: float = 0.5) -> None:
        self.root = Path(root)
        self.wanted = wanted
        self.poll = poll
        self.rescan_s = rescan_s
        self.poll_interval_s = poll_interval_s
        self._q: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._observer: BaseObserver | None = None
        self._last_scan = 0.0
        self._lock = threading.Lock()
        self.started = False
        self.error: str | None = None
        self.skipped: dict[str, str] = {}  # path -> why a matching name was not read (links, FIFOs)

    def start(self) -> None:
        self.started = True
        self._try_schedule()

    def _try_schedule(self) -> None:
        if self._observer is not None or not self.started or not self.root.is_dir():
            return
        obs: BaseObserver = PollingObserver(timeout=self.poll_interval_s) if self.poll else Observer()
        obs.daemon = True
        try:
            obs.schedule(_Enqueue(self._q), str(self.root), recursive=True)
            obs.start()
        except Exception as e:  # noqa: BLE001 - inotify limits, permissions: fall back to rescans
            self.error = f"file events unavailable ({e}); rescanning every {self.rescan_s:g} s"
            try:
                obs.stop()
            except Exception:  # noqa: BLE001, S110
                pass
            self._observer = None
            self.started = False
            return
        self._observer = obs

    def stop(self) -> None:
        self.started = False
        obs, self._observer = self._observer, None
        if obs is not None:
            try:
                obs.stop()
                obs.join(timeout=5)
            except Exception:  # noqa: BLE001, S110
                pass

    def changed(self, force_scan: bool = False) -> set[str]:
        """Paths reported since the last call, plus every matching file when a rescan is due."""
        with self._lock:
            out: set[str] = set()
            while True:
                try:
                    p = self._q.get_nowait()
                except queue.Empty:
                    break
                name = p.rsplit("/", 1)[-1]
                if self.wanted(name):
                    out.add(p)
                elif os.path.isdir(p):
                    force_scan = True  # a new folder: its files may predate the watch
            now = time.monotonic()
            if force_scan or self._observer is None or now - self._last_scan >= self.rescan_s:
                self._last_scan = now
                self._try_schedule()
                out.update(scan(self.root, self.wanted, skipped=self.skipped))
            return out
