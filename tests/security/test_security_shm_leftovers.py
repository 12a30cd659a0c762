"""``analyze`` ended by a signal in the middle of its parse leaves nothing behind: not in /dev/shm, where the parse
workers' result folders were left by SIGHUP, SIGQUIT and SIGKILL (memory not freed until reboot), nor in the
temporary folder. The results are nameless memory files now (``memfd_create``), freed with the last process that
holds one; SIGHUP, SIGQUIT and SIGTERM first remove the folder an archive was extracted into. The test waits on
an event (a worker's result written into its memory file), never on a time."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from analysis_procs import processes_naming, results_written
from ncclscope.synth import generate_run

SHM = Path("/dev/shm")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not hasattr(os, "memfd_create") or not SHM.is_dir(),
                                                    reason="Linux only: /dev/shm and memfd_create")]


@pytest.fixture(scope="module")
def big_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run big enough for the worker pool (about 170 MB, 256 rank logs)."""
    run = tmp_path_factory.mktemp("shm") / "run"
    generate_run(run, nranks=256, steps=300, fault="hang", fault_step=290, seed=5)
    return run


# ``ncclscope`` run with no core file (SIGQUIT's default action dumps one), the limit set before an exec; and
# SIGHUP, SIGQUIT and SIGTERM at their default action, as in a process a terminal or a scheduler started. An
# ignored signal stays ignored across exec: a suite run under ``nohup`` (SIGHUP ignored) or as a background job
# of a script (SIGQUIT ignored) would hand that on, and ``analyze`` rightly keeps an ignored signal ignored.
_DEFAULT_SIGNALS = "(signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM)"
_NO_CORE = ("import os, resource, signal, sys; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); "
            f"[signal.signal(s, signal.SIG_DFL) for s in {_DEFAULT_SIGNALS}]; "
            "os.execv(sys.executable, [sys.executable, '-m', 'ncclscope', *sys.argv[1:]])")
# the same, started as ``nohup`` starts a command: SIGHUP ignored
_NOHUP = _NO_CORE.replace("os.execv(", "signal.signal(signal.SIGHUP, signal.SIG_IGN); os.execv(", 1)


def _ours_in_shm() -> set[str]:
    return {p.name for p in SHM.iterdir() if "ncclscope" in p.name}


def _signal_mask(pid: int, field: str) -> int:
    """``SigIgn`` or ``SigCgt`` of ``/proc/<pid>/status``: the signals the process ignores or catches."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _has(mask: int, sig: signal.Signals) -> bool:
    return bool(mask >> (sig - 1) & 1)


def _kill_mid_parse(target: Path, sig: signal.Signals, tmp: Path, leaves_tmp: bool = False,
                    prelude: str = _NO_CORE, first: signal.Signals | None = None,
                    look: Callable[[int], None] = lambda pid: None) -> None:
    """Start ``analyze target`` (its temporary folder ``tmp``), send ``sig`` once a worker has written a result,
    and check that it ended by that signal, its workers with it, leaving nothing in /dev/shm, nor in ``tmp``
    unless ``leaves_tmp``. ``first``: a signal sent just before ``sig``, which must not be the one it ends by;
    ``look`` is called with the pid before the signals are sent."""
    before = _ours_in_shm()
    proc = subprocess.Popen([sys.executable, "-c", prelude, "analyze", "--no-cache", "--json", "--no-progress",
                             str(target)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp,
                            env={**os.environ, "TMPDIR": str(tmp)})
    try:
        deadline = time.monotonic() + 600  # a safety net: the wait is on the event
        while proc.poll() is None and not results_written(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the analysis ended before a worker wrote a result"
        look(proc.pid)
        if first is not None:
            proc.send_signal(first)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=600)  # a safety net for a stuck process, not a time goal
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -sig, err[-2000:]
    gone = time.monotonic() + 600  # a safety net: the workers end on their parent's end
    while processes_naming(str(target)) and time.monotonic() < gone:
        time.sleep(0.05)
    assert not processes_naming(str(target)), "a parse worker outlived the analysis"
    assert _ours_in_shm() <= before, _ours_in_shm() - before
    if not leaves_tmp:
        assert not list(tmp.iterdir()), list(tmp.iterdir())


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_a_signal_mid_parse_leaves_nothing_in_shared_memory_or_the_temporary_folder(big_run, tmp_path, sig):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    _kill_mid_parse(big_run, sig, tmp)


def test_the_prelude_gives_the_analysis_the_default_actions_whatever_the_suite_was_started_under():
    """The SIGHUP cases hold under ``nohup`` too: the prelude's child has SIGHUP, SIGQUIT and SIGTERM at their
    default action even when this process ignores them (they would be inherited across the exec)."""
    probe = f"import signal, sys; print(sum(signal.getsignal(s) == signal.SIG_IGN for s in {_DEFAULT_SIGNALS}))"
    script = _NO_CORE.replace("os.execv(sys.executable, [sys.executable, '-m', 'ncclscope', *sys.argv[1:]])",
                              f"os.execv(sys.executable, [sys.executable, '-c', {probe!r}])")
    assert script != _NO_CORE
    ignored_here = (f"import signal, subprocess, sys; [signal.signal(s, signal.SIG_IGN) for s in {_DEFAULT_SIGNALS}]; "
                    "sys.exit(subprocess.run([sys.executable, '-c', sys.argv[1]]).returncode)")
    out = subprocess.run([sys.executable, "-c", ignored_here, script], capture_output=True, text=True, timeout=600,
                         check=False)
    assert (out.returncode, out.stdout.strip()) == (0, "0"), (out.stdout, out.stderr[-2000:])


def test_analyze_started_under_nohup_keeps_sighup_ignored(big_run, tmp_path):
    """``nohup ncclscope analyze`` must outlive its terminal: an ignored SIGHUP stays ignored (SIGTERM and
    SIGQUIT still get their clean-up handler). Sent SIGHUP then SIGTERM, it ends by SIGTERM; had it caught
    SIGHUP, the handler (run first: the lower number) would have ended it by SIGHUP."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    seen: dict[str, int] = {}

    def look(pid: int) -> None:  # the handlers are installed before the parse starts: a result written says so
        seen.update(ign=_signal_mask(pid, "SigIgn"), cgt=_signal_mask(pid, "SigCgt"))

    _kill_mid_parse(big_run, signal.SIGTERM, tmp, prelude=_NOHUP, first=signal.SIGHUP, look=look)
    assert _has(seen["ign"], signal.SIGHUP) and not _has(seen["cgt"], signal.SIGHUP), seen
    assert _has(seen["cgt"], signal.SIGTERM) and _has(seen["cgt"], signal.SIGQUIT), seen


@pytest.fixture(scope="module")
def big_archive(big_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tar = tmp_path_factory.mktemp("shm_tar") / "run.tar"
    with tarfile.open(tar, "w") as t:
        t.add(big_run, arcname="run")
    return tar


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_caught_signal_removes_the_folder_an_archive_was_extracted_into(big_archive, tmp_path, sig):
    """The extracted files are on disk: SIGHUP, SIGQUIT and SIGTERM remove them before the process ends by the
    signal (SIGKILL cannot be caught: docs/when-things-go-wrong.md says so)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    _kill_mid_parse(big_archive, sig, tmp)


def test_the_next_analysis_removes_what_sigkill_left_of_an_archive(big_archive, tmp_path):
    """SIGKILL leaves the extraction folder (no handler runs); the next analysis of an archive removes it: its
    name says which process of which pid namespace made it, and that process is gone."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    _kill_mid_parse(big_archive, signal.SIGKILL, tmp, leaves_tmp=True)
    left = [p.name for p in tmp.iterdir()]
    assert len(left) == 1 and left[0].startswith("ncclscope-x"), left
    small = tmp_path / "small.tar"
    with tarfile.open(small, "w") as t:
        t.add(Path(__file__).parents[1] / "data" / "wild" / "alpaca207_ib_completion_oneline", arcname="run")
    done = subprocess.run([sys.executable, "-m", "ncclscope", "analyze", "--no-cache", "--json", str(small)],
                          capture_output=True, text=True, env={**os.environ, "TMPDIR": str(tmp)}, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not list(tmp.iterdir()), list(tmp.iterdir())
