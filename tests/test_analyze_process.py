"""`ncclscope analyze` as a whole process: the same report as in-process, without the modules a
verdict does not need, and the parse pool started before the slow imports gives what a serial parse does."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ncclscope import ingest
from ncclscope.analysis import analyze_paths
from ncclscope.report import json_text
from ncclscope.synth import generate_run

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


def _analyze_process(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *extra, "-m", "ncclscope", "analyze", "--no-cache", "--json", str(path)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, check=False, env=dict(os.environ))


@pytest.mark.parametrize("name", ["gpu_hang", "gpu_crash", "gpu_healthy"])
def test_process_prints_the_in_process_report_whole(name):
    """The process leaves through os._exit after its flush: every byte of the report is out, exit 0."""
    p = _analyze_process(SAMPLES / name)
    assert p.returncode == 0, p.stderr
    assert p.stdout == json_text(analyze_paths([SAMPLES / name], cache=False)) + "\n"


def test_process_loads_no_terminal_dashboard_or_jit_modules():
    """rich (only for a progress bar on a terminal or a note), plotly / dash and numba stay unloaded."""
    p = _analyze_process(SAMPLES / "gpu_hang", "-X", "importtime")
    assert p.returncode == 0, p.stderr
    loaded = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*([\w.]+)$", p.stderr, re.M))
    assert "ncclscope.report" in loaded  # the list is the real one
    assert not {m for m in loaded if m.split(".")[0] in {"rich", "plotly", "dash", "numba"}}


def test_pool_started_early_gives_the_serial_parse(tmp_path, monkeypatch):
    """start_ingest forks the workers at once and result() collects them (protocol-5 pickles): the
    same files, formats and records as parsing in this process."""
    generate_run(tmp_path / "run", nranks=16, steps=30, fault="hang", fault_step=20, seed=3)
    serial = ingest.ingest([tmp_path / "run"], workers=1)
    monkeypatch.setattr(ingest, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(ingest, "GROUP_BYTES", 30_000)  # several groups of small logs
    with ingest.start_ingest([tmp_path / "run"], workers=2) as job:
        assert job._pool is not None
        pooled = job.result()
    assert [(p.file, p.fmt, p.problem, p.size) for p in pooled] == [(p.file, p.fmt, p.problem, p.size) for p in serial]
    assert [[repr(r) for r in p.records] for p in pooled] == [[repr(r) for r in p.records] for p in serial]


def test_pool_size_parses_small_inputs_in_process():
    assert ingest.pool_size(ingest.PARALLEL_MIN_BYTES - 1, 10) == 1
    assert ingest.pool_size(ingest.PARALLEL_MIN_BYTES, 1) == 1
    assert ingest.pool_size(ingest.PARALLEL_MIN_BYTES, 10, workers=3) == 3
    assert 1 <= ingest.pool_size(ingest.PARALLEL_MIN_BYTES, 10) <= (os.cpu_count() or 1)


def test_a_job_closed_early_stops_its_pool_and_removes_its_folder(tmp_path, monkeypatch):
    generate_run(tmp_path / "run", nranks=8, steps=10, seed=1)
    monkeypatch.setattr(ingest, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(ingest, "GROUP_BYTES", 30_000)
    job = ingest.start_ingest([tmp_path / "run"], workers=2)
    pool = job._pool
    assert pool is not None
    job.close()
    assert job._pool is None
    with pytest.raises(RuntimeError):
        pool.submit(len, [])


def _findings_text(findings) -> list[str]:
    return [repr(f) for f in findings]


@pytest.fixture(scope="module")
def desync_run(tmp_path_factory):
    from ncclscope.model_build import build_run

    d = tmp_path_factory.mktemp("desync") / "run"
    generate_run(d, nranks=8, steps=40, fault="desync", fault_step=30, seed=5)
    return lambda: build_run(ingest.ingest([d]))


def test_table_detectors_in_a_forked_child_give_the_serial_findings(desync_run, monkeypatch):
    """analyze as a process shares the detectors out over two processes from PARALLEL_MIN_ROWS rows:
    the child's findings come back in their detectors' places, the same list as one process gives."""
    from ncclscope import analysis
    from ncclscope.detectors import DETECTORS, run_detectors

    assert set(analysis.CHILD_DETECTORS) <= set(DETECTORS)  # a renamed detector would end the sharing unseen
    want = _findings_text(run_detectors(desync_run()))
    monkeypatch.setattr(analysis, "PARALLEL_MIN_ROWS", 0)
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    assert _findings_text(analysis.run_findings(desync_run(), share=True)) == want
    assert forks == [1]
    assert _findings_text(analysis.run_findings(desync_run(), share=False)) == want and forks == [1]


def test_a_child_that_fails_has_its_detectors_run_here(desync_run, monkeypatch):
    from ncclscope import analysis
    from ncclscope.detectors import run_detectors

    want = _findings_text(run_detectors(desync_run()))
    monkeypatch.setattr(analysis, "PARALLEL_MIN_ROWS", 0)

    def broken(*a, **k):
        raise RuntimeError("no pickle in the child")

    monkeypatch.setattr(analysis.pickle, "dumps", broken)  # the forked child inherits it: exits 1, sends nothing
    assert _findings_text(analysis.run_findings(desync_run(), share=True)) == want


def test_no_fork_below_the_row_threshold_or_beside_another_thread(desync_run, monkeypatch):
    import threading

    from ncclscope import analysis

    run = desync_run()
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked"))
    analysis.run_findings(run, share=True)  # a few hundred rows, under PARALLEL_MIN_ROWS
    monkeypatch.setattr(analysis, "PARALLEL_MIN_ROWS", 0)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        analysis.run_findings(run, share=True)
    finally:
        stop.set()
        t.join()


def test_the_analyze_process_shares_its_detectors_with_one_forked_child():
    """The program itself (not a library caller) takes the shared path: with the row threshold at 0, a
    sample too small for the parse pool forks once, for the table detectors, and prints the same report."""
    code = ("import os, sys; import ncclscope.analysis as a; a.PARALLEL_MIN_ROWS = 0; real = os.fork\n"
            "def fork():\n    os.write(2, b'FORK\\n'); return real()\n"
            "os.fork = fork; from ncclscope.cli import main\n"
            f"sys.argv = ['ncclscope', 'analyze', '--no-cache', '--json', {str(SAMPLES / 'gpu_desync')!r}]; sys.exit(main())\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("FORK") == 1
    assert p.stdout == json_text(analyze_paths([SAMPLES / "gpu_desync"], cache=False)) + "\n"
