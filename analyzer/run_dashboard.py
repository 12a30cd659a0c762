"""The dashboard ``ncclscope run --dashboard`` serves beside the job: started on a free port, said when it stops.

``start`` runs ``ncclscope serve --live DIR --port P`` in its own session (a Ctrl-C in the terminal reaches
``run``, not the dashboard), its output into ``DIR/.dashboard.log``; P is the port asked for or, when another
process holds it, the next free one (``ports.free_port``), and the URL is said either way, with the
dashboard's token (made here, handed over in the environment, never on the command line where every user of
the node could read it; every request to the dashboard must carry it). ``finish`` ends
it once the job is over and analysed, after ``hold`` returns when one is given (``until_interrupted``: the
finished run stays served until Ctrl-C), and says that it stopped, or that it had stopped by itself before.
Nothing here prints: every message goes through ``note``.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import safe_io
from .ports import free_port, url

Note = Callable[[str], None]
LOG_NAME = ".dashboard.log"
HOST = "127.0.0.1"
TOKEN_ENV = "NCCLSCOPE_DASHBOARD_TOKEN"  # read by `serve --token` (dashboard.access.TOKEN_ENV)
HOLD_POLL_S = 0.25  # how often the hold looks whether the dashboard ended by itself


@dataclass(frozen=True)
class Dashboard:
    proc: subprocess.Popen[bytes]
    url: str
    run_dir: Path
    token: str = ""

    @property
    def log(self) -> Path:
        return self.run_dir / LOG_NAME

    @property
    def link(self) -> str:
        """The URL to open: ``url`` with the token, which sets the dashboard's cookie."""
        return f"{self.url}?token={self.token}" if self.token else self.url


Hold = Callable[[Dashboard, Callable[[], None]], None]  # (the dashboard, the line that says how to stop it)


def start(run_dir: Path, port: int, note: Note, held: bool) -> Dashboard | None:
    """The live dashboard of ``run_dir`` on ``port`` or a free one; None (said why) when it cannot start.
    ``held``: it will stay up after the job until Ctrl-C (the first line says how long it stays)."""
    chosen, why = free_port(port, HOST)
    if why is not None:
        note(f"dashboard: port {port} on {HOST} is taken ({why}); using port {chosen} instead")
    try:  # the dashboard's log holds its URL, token included: for the run's owner only
        log = os.fdopen(safe_io.open_append(run_dir / LOG_NAME, 0o600), "ab")
        try:
            os.fchmod(log.fileno(), 0o600)
        except OSError:
            log.close()
            raise
    except OSError as e:
        note(f"could not start the dashboard: {run_dir / LOG_NAME}: {e.strerror or e}")
        return None
    token = secrets.token_urlsafe(24)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "ncclscope", "serve", "--live", str(run_dir), "--host", HOST,
                                 "--port", str(chosen)], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, TOKEN_ENV: token}, start_new_session=True)
    except OSError as e:
        note(f"could not start the dashboard: {e}")
        return None
    finally:
        log.close()
    d = Dashboard(proc, url(HOST, chosen), run_dir, token)
    how_long = "it stays up after the job until Ctrl-C" if held else "it stops when the job ends"
    note(f"dashboard: {d.link} (live; {how_long}; its log: {d.log})")
    return d


def finish(d: Dashboard | None, hold: Hold | None, note: Note) -> None:
    """End the dashboard (after ``hold``, if given, returns) and say so; an early end of its own is said too."""
    if d is None:
        return
    code = d.proc.poll()
    try:
        if code is None and hold is not None:
            try:
                hold(d, lambda: note(f"dashboard: still serving the finished run at {d.link}; press Ctrl-C to stop it"))
            except KeyboardInterrupt:
                pass
            code = d.proc.poll()
    finally:  # whatever ends the wait, the dashboard does not outlive `run`
        if code is None:
            stop_group(d.proc)
    if code is not None:
        note(f"dashboard stopped by itself (exit {code}) before the end; its log: {d.log}")
        return
    note(f"dashboard stopped ({d.url}); to look again: ncclscope serve {d.run_dir}")


def until_interrupted(d: Dashboard, announce: Callable[[], None]) -> None:
    """Say how to stop it (``announce``), then wait until Ctrl-C or until the dashboard ends by itself. In the main
    thread Ctrl-C is taken by a handler set before the line is said, so that one pressed as soon as the line shows
    is never lost between the line and the wait; the previous handler is put back after."""
    if threading.current_thread() is not threading.main_thread():
        announce()
        d.proc.wait()  # (a Ctrl-C is the main thread's KeyboardInterrupt, caught by ``finish``)
        return
    interrupted = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda _s, _f: interrupted.set())
    try:
        announce()
        while d.proc.poll() is None and not interrupted.wait(HOLD_POLL_S):
            pass
    finally:
        signal.signal(signal.SIGINT, previous)


def stop_group(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM to the process group, a wait, then SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, PermissionError):
        pass
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
            pass
