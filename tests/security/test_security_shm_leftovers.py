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
from pathlib import Path

import pytest
from ncclscope.ingest import handover
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


# ``ncclscope`` run with no core file (SIGQUIT's default action dumps one), the limit set before an exec
_NO_CORE = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); "
            "os.execv(sys.executable, [sys.executable, '-m', 'ncclscope', *sys.argv[1:]])")


def _results_written(pid: int) -> bool:
    """Whether the process ``pid`` holds a result memory file (``memfd:ncclscope-result``) a worker wrote into."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            if handover.RESULT_NAME in os.readlink(fd) and fd.stat().st_size > 0:
                return True
        except OSError:
            pass
    return False


def _processes_naming(arg: str) -> list[int]:
    """Processes whose command line names ``arg`` (the analysis and its forked workers)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if arg.encode() in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def _ours_in_shm() -> set[str]:
    return {p.name for p in SHM.iterdir() if "ncclscope" in p.name}


def _kill_mid_parse(target: Path, sig: signal.Signals, tmp: Path, leaves_tmp: bool = False) -> None:
    """Start ``analyze target`` (its temporary folder ``tmp``), send ``sig`` once a worker has written a result,
    and check that it ended by that signal, its workers with it, leaving nothing in /dev/shm, nor in ``tmp``
    unless ``leaves_tmp``."""
    before = _ours_in_shm()
    proc = subprocess.Popen([sys.executable, "-c", _NO_CORE, "analyze", "--no-cache", "--json", "--no-progress",
                             str(target)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp,
                            env={**os.environ, "TMPDIR": str(tmp)})
    try:
        deadline = time.monotonic() + 300  # a safety net: the wait is on the event
        while proc.poll() is None and not _results_written(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the analysis ended before a worker wrote a result"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -sig, err[-2000:]
    gone = time.monotonic() + 30
    while _processes_naming(str(target)) and time.monotonic() < gone:
        time.sleep(0.05)
    assert not _processes_naming(str(target)), "a parse worker outlived the analysis"
    assert _ours_in_shm() <= before, _ours_in_shm() - before
    if not leaves_tmp:
        assert not list(tmp.iterdir()), list(tmp.iterdir())


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_a_signal_mid_parse_leaves_nothing_in_shared_memory_or_the_temporary_folder(big_run, tmp_path, sig):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    _kill_mid_parse(big_run, sig, tmp)


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
                          capture_output=True, text=True, env={**os.environ, "TMPDIR": str(tmp)}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not list(tmp.iterdir()), list(tmp.iterdir())
