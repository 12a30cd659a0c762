"""The `ncclscope run` wrapper: set up tracing for a training command, run it, tee its output,
forward signals, then analyse the run folder.

Pure parts (``tracing_env``, ``merge_env``, ``exit_status``) are separate from the process
handling (``ChildGroup``, ``Tee``) and the whole sequence (``run_job``). Nothing here prints on
its own: messages go through the ``note`` callable the CLI passes in.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from . import run_dashboard, safe_io
from .ports import DASHBOARD_PORT, port_taken  # noqa: F401 - port_taken: where callers found it before

HOOK_SITE = ".ncclscope-site"  # the old in-folder name; the site is now a private temporary folder
HOOK_PACKAGE = "_ncclscope_hook"
HOOK_FILES = ("__init__.py", "budget.py", "calls.py", "chaos.py", "poller.py", "records.py", "tracer.py",
              "writer.py")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
Note = Callable[[str], None]


@dataclass(frozen=True)
class RunOptions:
    command: tuple[str, ...]
    run_dir: Path
    coll: bool = False
    hook: bool = True
    stall_seconds: float | None = None
    webhook: str | None = None
    alert_command: str | None = None
    kill_on_hang: bool = False
    poll: bool = False
    dashboard: bool = False
    dashboard_port: int = DASHBOARD_PORT  # taken by another process: the next free one (run_dashboard.start)
    quiet: bool = False
    grace_s: float = 10.0
    extra_env: Mapping[str, str] = field(default_factory=dict)
    shared_dir: bool = False  # the run folder may be one others can write: accepted, nothing executable taken from it
    inspector: Path | None = None  # NCCL's Inspector profiler plugin (.so), writing into the run folder


class UnsafeRunDir(OSError):
    """A run folder ncclscope will not write into; the message says why and what to do."""


def claim_run_dir(run_dir: Path, shared: bool = False) -> tuple[Path, str | None]:
    """Create ``run_dir`` (0700 when new) or check an existing one; returns (resolved folder, note).

    A folder that exists already must be the user's own and writable by no one else: another user's
    folder could hold planted links (``exit.txt`` -> a file of the user's) or code. ``shared`` accepts
    it anyway, with a note: the hook's code then still comes from a private temporary folder (it always
    does) and every file is created without following links. Raises UnsafeRunDir.
    """
    created = False
    try:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        run_dir.mkdir(mode=0o700)
        created = True
    except FileExistsError:
        pass
    checked = run_dir
    if run_dir.is_symlink() and os.lstat(run_dir).st_uid == os.geteuid():
        checked = run_dir.resolve()  # the user's own link, named by the user: its target is judged
    why = safe_io.check_private_dir(checked)
    if why is not None and (created or not shared or why in ("it is a symbolic link", "it is not a folder")):
        raise UnsafeRunDir(f"refusing run folder {run_dir}: {why}. Give --run-dir a folder of your own "
                           "(or a new name), or pass --shared-run-dir to write into a shared folder anyway")
    resolved = run_dir.resolve()
    if why is not None:
        return resolved, (f"run folder {run_dir}: {why}; writing into it as a shared folder (--shared-run-dir): "
                          "no code is taken from it and no file is written through a link")
    return resolved, None


def default_run_dir(base: Path = Path("ncclscope-runs"), now: datetime | None = None) -> Path:
    """``./ncclscope-runs/<YYYYmmdd-HHMMSS>``, with a suffix when that folder exists already."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    path = base / stamp
    n = 1
    while path.exists():
        n += 1
        path = base / f"{stamp}-{n}"
    return path


# Flight Recorder's variables were renamed for all backends (pytorch/pytorch#152563, in 2.8; the
# boundary NVIDIA/nvidia-resiliency-ext#163 uses too): TORCH_FR_* is read first, and 2.13 prints a
# deprecation warning on every rank for TORCH_NCCL_TRACE_BUFFER_SIZE.
FR_RENAMED_IN = (2, 8)


def torch_version(dist: str = "torch") -> tuple[int, int] | None:
    """(major, minor) of the installed torch, from its package metadata (torch is not imported: seconds)."""
    from importlib import metadata

    try:
        v = metadata.version(dist)
    except (metadata.PackageNotFoundError, ValueError):
        return None
    m = re.match(r"(\d+)\.(\d+)", v)
    return (int(m.group(1)), int(m.group(2))) if m else None


def flight_recorder_env(run_dir: Path, version: tuple[int, int] | None) -> dict[str, str]:
    """Flight Recorder's ring size and dump prefix under the names the job's torch reads: TORCH_FR_* from
    2.8 (the older TORCH_NCCL_* names print a deprecation warning on every rank there), TORCH_NCCL_* before.
    Unknown version (the job's python is not ours): both, which every release understands."""
    new = {"TORCH_FR_BUFFER_SIZE": "20000", "TORCH_FR_DUMP_TEMP_FILE": f"{run_dir}/fr_timeout_rank"}
    old = {"TORCH_NCCL_TRACE_BUFFER_SIZE": "20000", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": f"{run_dir}/fr_timeout_rank"}
    if version is None:
        return {**new, **old}
    return new if version >= FR_RENAMED_IN else old


FR_ALIASES = {"TORCH_FR_BUFFER_SIZE": "TORCH_NCCL_TRACE_BUFFER_SIZE",
              "TORCH_FR_DUMP_TEMP_FILE": "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"}
FR_ALIASES.update({v: k for k, v in FR_ALIASES.items()})


def tracing_env(run_dir: Path, coll: bool, hook_site: Path | None,
                torch: tuple[int, int] | None | str = "installed") -> dict[str, str]:
    """What ncclscope sets for the job (before the user's own settings take precedence).
    ``torch``: the job's torch (major, minor), None when unknown; by default the installed one."""
    d = str(run_dir)
    version = torch_version() if isinstance(torch, str) else torch
    env = {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT,ENV,NET,GRAPH" + (",COLL" if coll else ""),
        "NCCL_DEBUG_FILE": f"{d}/%h.%p.nccl.log",
        "NCCL_DEBUG_TIMESTAMP_LEVELS": "ALL",
        "NCCL_DEBUG_TIMESTAMP_FORMAT": "[%F %T.%6f] ",
        "NCCL_TOPO_DUMP_FILE": f"{d}/topo.xml",
        "NCCL_GRAPH_DUMP_FILE": f"{d}/graph.xml",
        **flight_recorder_env(run_dir, version),
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
        "TORCH_NCCL_ENABLE_TIMING": "1",
        "NCCLSCOPE_RUN_DIR": d,
    }
    if hook_site is not None:
        env["PYTHONPATH"] = str(hook_site)
    return env


# The Inspector's dump thread writes what completed every 0.2 s (its own default writes only at teardown, or
# nothing in releases after 2.30): the live monitor sees kernel times while the job runs.
INSPECTOR_DUMP_INTERVAL_US = 200_000


def inspector_env(plugin: Path, run_dir: Path) -> dict[str, str]:
    """What ``run --inspector PLUGIN`` sets for NCCL's Inspector profiler plugin (NCCL's repository,
    ``plugins/profiler/inspector``): NCCL loads ``plugin`` (``NCCL_PROFILER_PLUGIN``) and the plugin writes
    ``<host>-pid<pid>.log`` into the run folder. Verbose records carry each collective's and kernel's start
    time (the time line needs them); every size is tracked (the plugin skips collectives under 8 KB by
    default, which would leave holes in each communicator's sequence); ProxyOp summaries (per channel and
    peer: wait times and bandwidth, network transports only, plugins that have them) without the per-step
    records, which ``NCCL_INSPECTOR_DUMP_PROXY_STEPS=1`` of the user's adds. A variable the user set wins."""
    return {
        "NCCL_PROFILER_PLUGIN": str(plugin),
        "NCCL_INSPECTOR_ENABLE": "1",
        "NCCL_INSPECTOR_DUMP_DIR": str(run_dir),
        "NCCL_INSPECTOR_DUMP_THREAD_ENABLE": "1",
        "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS": str(INSPECTOR_DUMP_INTERVAL_US),
        "NCCL_INSPECTOR_DUMP_VERBOSE": "1",
        "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES": "0",
        "NCCL_INSPECTOR_ENABLE_PROXY": "1",
        "NCCL_INSPECTOR_DUMP_PROXY_STEPS": "0",
    }


def job_env(opts: RunOptions, hook_site: Path | None) -> dict[str, str]:
    """Everything ncclscope would set for the job: tracing, the Inspector's settings (its messages in NCCL's
    log: subsystem PROFILE), then the caller's extra variables."""
    env = tracing_env(opts.run_dir, opts.coll, hook_site)
    if opts.inspector is not None:
        env.update(inspector_env(opts.inspector, opts.run_dir))
        env["NCCL_DEBUG_SUBSYS"] += ",PROFILE"
    return {**env, **opts.extra_env}


def merge_env(base: Mapping[str, str], wanted: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(child env, what ncclscope set, what the user had set and was kept).

    A variable the user set wins; ``PYTHONPATH`` is the exception: ours goes first, theirs after.
    """
    env = dict(base)
    applied: dict[str, str] = {}
    kept: dict[str, str] = {}
    for k, v in wanted.items():
        alias = FR_ALIASES.get(k)
        if k == "PYTHONPATH":
            old = base.get(k, "")
            env[k] = v + (os.pathsep + old if old else "")
            applied[k] = env[k]
        elif k in base and k != "NCCLSCOPE_RUN_DIR":
            kept[k] = base[k]
        elif alias is not None and alias in base:  # the user's name for it wins over ours
            kept[alias] = base[alias]
        else:
            env[k] = v
            applied[k] = v
    return env, applied, kept


def exit_status(returncode: int) -> int:
    """A child's return code as a shell would report it: 128+N for death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def prepare_hook_site(run_dir: Path | None = None) -> Path:
    """A fresh private temporary folder (0700, ``mkdtemp``) holding only ``sitecustomize.py`` and the
    ``_ncclscope_hook`` package, so it can go first on ``PYTHONPATH`` without shadowing anything of the
    user's. Never inside the run folder: whoever else can write there could plant a module that every
    rank would import. The caller removes it (``shutil.rmtree``). ``run_dir`` is unused (kept for callers)."""
    src = Path(__file__).resolve().parent / "hook"
    site = Path(tempfile.mkdtemp(prefix="ncclscope-site-"))
    pkg = site / HOOK_PACKAGE
    pkg.mkdir(mode=0o700)
    for source, target in [(src / "sitecustomize.py", site / "sitecustomize.py"),
                           *((src / name, pkg / name) for name in HOOK_FILES)]:
        safe_io.write_replace(target, source.read_bytes())
    return site


class Tee(threading.Thread):
    """Copies a child's pipe line by line to a file and a terminal stream; a last half line is kept."""

    def __init__(self, pipe: IO[bytes], path: Path, echo: IO[bytes] | None) -> None:
        super().__init__(name=f"ncclscope-tee-{path.name}", daemon=True)
        self.pipe, self.path, self.echo = pipe, path, echo
        self.error: str | None = None

    def run(self) -> None:
        try:
            f = os.fdopen(safe_io.open_append(self.path), "ab")
        except OSError as e:  # a link or another user's file under the name: echo only, never write through it
            self.error = f"not writing {self.path}: {e.strerror or e}"
            f = open(os.devnull, "ab")  # noqa: SIM115
        with f:
            for line in iter(self.pipe.readline, b""):
                f.write(line)
                f.flush()
                if self.echo is not None:
                    try:
                        self.echo.write(line)
                        self.echo.flush()
                    except (OSError, ValueError):
                        self.echo = None
        try:
            self.pipe.close()
        except OSError:
            pass


class ChildGroup:
    """The command in its own session / process group; signals go to the whole group."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str], grace_s: float) -> None:
        self.proc = subprocess.Popen(list(command), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self.pgid = self.proc.pid
        self.grace_s = grace_s
        self.kill_at: float | None = None
        self.signals = 0

    def send(self, sig: int) -> None:
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def terminate(self) -> None:
        """SIGTERM now, SIGKILL after the grace period (checked by ``wait``)."""
        self.send(signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        self.kill_at = deadline if self.kill_at is None else min(self.kill_at, deadline)

    def on_signal(self, signum: int) -> None:
        """First signal: forwarded. Second: SIGTERM, SIGKILL after the grace period. Third: SIGKILL."""
        self.signals += 1
        if self.signals == 1:
            self.send(signum)
        elif self.signals == 2:
            self.terminate()
        else:
            self.send(signal.SIGKILL)

    def wait(self) -> int:
        while True:
            try:
                return self.proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                if self.kill_at is not None and time.monotonic() >= self.kill_at:
                    self.send(signal.SIGKILL)
                    self.kill_at = None

    def alive(self) -> bool:
        try:
            os.killpg(self.pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def reap_group(self, grace_s: float = 3.0) -> bool:
        """After the leader exits: end what is left of its group. True when something was left."""
        if not self.alive():
            return False
        self.send(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and self.alive():
            time.sleep(0.05)
        if self.alive():
            self.send(signal.SIGKILL)
        return True


def _start_monitor(opts: RunOptions, on_kill: Callable[[], None], note: Note) -> Any:
    try:
        from .live.monitor import LiveConfig, LiveMonitor
    except Exception as e:  # noqa: BLE001 - the monitor is optional
        note(f"live monitor not available ({type(e).__name__}: {e}); running without live alerts")
        return None
    try:
        cfg = LiveConfig(stall_seconds=opts.stall_seconds, webhook=opts.webhook, command=opts.alert_command,
                         poll=opts.poll, kill_on_hang=opts.kill_on_hang, kill_grace_s=opts.grace_s,
                         console=not opts.quiet)
        mon = LiveMonitor(opts.run_dir, cfg, on_kill=on_kill)
        mon.start()
        return mon
    except Exception as e:  # noqa: BLE001
        note(f"live monitor failed to start ({type(e).__name__}: {e}); running without live alerts")
        return None


def write_env_record(opts: RunOptions, applied: Mapping[str, str], kept: Mapping[str, str]) -> None:
    from . import __version__

    data = {"ncclscope": __version__, "command": list(opts.command), "hook": opts.hook,
            "set_by_ncclscope": dict(applied), "set_by_user": dict(kept), "started": time.time()}
    safe_io.write_replace(opts.run_dir / "ncclscope-env.json", json.dumps(data, indent=1) + "\n")


def analyse_run(run_dir: Path, render: Callable[[Any], None] | None, note: Note) -> None:
    """``DIR/report.json`` and the text report; any failure is one note, never an exception."""
    try:
        from .analysis import analyze_paths
        from .report import to_json

        result = analyze_paths([run_dir])
        safe_io.write_replace(run_dir / "report.json", json.dumps(to_json(result), indent=1, default=str) + "\n")
        if render is not None:
            render(result)
    except KeyboardInterrupt:
        note("analysis interrupted; run `ncclscope analyze` on the folder later")
    except Exception as e:  # noqa: BLE001
        note(f"could not analyse the run ({type(e).__name__}: {e})")


def start_failed(run_dir: Path, command: Sequence[str], err: OSError, note: Note) -> int:
    """The command could not be executed (not found, not executable): said as a shell says it, also in
    ``stderr.log`` so that ``analyze`` of the folder tells the same story; returns 127 or 126 as a shell would."""
    code = 127 if isinstance(err, FileNotFoundError) else 126
    why = "command not found" if code == 127 else (err.strerror or str(err)).lower()
    line = f"ncclscope: {command[0]}: {why}"
    note(f"the command failed to start: {command[0]}: {why} (exit {code})")
    try:
        with os.fdopen(safe_io.open_append(run_dir / "stderr.log"), "ab") as f:
            f.write((line + "\n").encode("utf-8", "replace"))
        safe_io.write_replace(run_dir / "exit.txt", f"exit={code}\n")
    except OSError as e:
        note(f"could not write into {run_dir}: {e.strerror or e}")
    return code


def _folder_gone(run_dir: Path, identity: tuple[int, int]) -> str | None:
    """'was deleted' / 'was replaced' when ``run_dir`` is no longer the folder made at the start."""
    try:
        st = os.stat(run_dir)
    except FileNotFoundError:
        return "was deleted"
    return None if (st.st_dev, st.st_ino) == identity else "was replaced by another folder"


def _preload_analysis() -> None:
    """Import the analyser while the job runs (pandas & co. take seconds on a cold disk)."""
    try:
        from . import analysis, report  # noqa: F401
    except Exception:  # noqa: BLE001, S110 - analyse_run reports it later
        pass


def run_job(opts: RunOptions, note: Note, render: Callable[[Any], None] | None = None,
            stdout: IO[bytes] | None = None, stderr: IO[bytes] | None = None,
            base_env: Mapping[str, str] | None = None, hold: run_dashboard.Hold | None = None) -> int:
    """Run the command traced; returns its exit status (128+N for signal N). ``hold``: with ``--dashboard``,
    called once the run is analysed; the dashboard stops when it returns (``run_dashboard.until_interrupted``
    keeps it until Ctrl-C); without it the dashboard stops with the job."""
    run_dir, shared_note = claim_run_dir(opts.run_dir, opts.shared_dir)
    if shared_note:
        note(shared_note)
    opts = RunOptions(**{**opts.__dict__, "run_dir": run_dir})
    st = os.stat(run_dir)
    identity = (st.st_dev, st.st_ino)
    site = prepare_hook_site() if opts.hook else None
    env, applied, kept = merge_env(base_env if base_env is not None else os.environ,
                                   job_env(opts, site))
    write_env_record(opts, applied, kept)
    if kept:
        note("kept your settings: " + ", ".join(f"{k}={v}" for k, v in sorted(kept.items())))
    holder: dict[str, ChildGroup] = {}

    def on_kill() -> None:
        child = holder.get("child")
        if child is not None:
            child.terminate()

    monitor = _start_monitor(opts, on_kill, note)
    dashboard = run_dashboard.start(run_dir, opts.dashboard_port, note, held=hold is not None) if opts.dashboard else None
    try:
        code = _run_and_analyse(opts, env, identity, site, monitor, holder, render, note, stdout, stderr)
    except BaseException:
        run_dashboard.finish(dashboard, None, note)
        raise
    run_dashboard.finish(dashboard, hold, note)
    return code


def _run_and_analyse(opts: RunOptions, env: dict[str, str], identity: tuple[int, int], site: Path | None,
                     monitor: Any, holder: dict[str, ChildGroup], render: Callable[[Any], None] | None, note: Note,
                     stdout: IO[bytes] | None, stderr: IO[bytes] | None) -> int:
    """The command from start to exit (signals forwarded, output teed, ``exit.txt``), then the analysis."""
    run_dir = opts.run_dir
    previous: dict[int, Any] = {}
    code = 127
    try:
        try:
            child = ChildGroup(opts.command, env, opts.grace_s)
        except OSError as e:
            code = start_failed(run_dir, opts.command, e, note)
            analyse_run(run_dir, render, note)
            return code
        holder["child"] = child
        if threading.current_thread() is threading.main_thread():
            for sig in FORWARDED:
                previous[sig] = signal.signal(sig, lambda s, _f: child.on_signal(s))
        tees = [Tee(child.proc.stdout, run_dir / "stdout.log", stdout),  # type: ignore[arg-type]
                Tee(child.proc.stderr, run_dir / "stderr.log", stderr)]  # type: ignore[arg-type]
        for t in tees:
            t.start()
        threading.Thread(target=_preload_analysis, name="ncclscope-preload", daemon=True).start()
        code = exit_status(child.wait())
        if child.reap_group():
            note("ended processes the command left behind in its process group")
        for t in tees:
            t.join(timeout=5.0)
            if t.error:
                note(t.error)
        try:
            gone = _folder_gone(run_dir, identity)
            if gone:
                note(f"warning: the run folder {run_dir} {gone} while the job ran; what the job wrote there "
                     "is lost, and the analysis sees only what was written after")
                claim_run_dir(run_dir)
            safe_io.write_replace(run_dir / "exit.txt", f"exit={code}\n")
        except OSError as e:
            note(f"could not write {run_dir / 'exit.txt'}: {e.strerror or e}")
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if monitor is not None:
            try:
                monitor.stop()
            except Exception as e:  # noqa: BLE001
                note(f"live monitor did not stop cleanly ({type(e).__name__}: {e})")
        if site is not None:
            shutil.rmtree(site, ignore_errors=True)
    analyse_run(run_dir, render, note)
    return code
