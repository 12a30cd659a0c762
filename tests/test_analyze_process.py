"""`ncclscope analyze` as a whole process: the same report as in-process, without the modules a
verdict does not need, and the parse pool started before the slow imports gives what a serial parse does."""
from __future__ import annotations

import mmap
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from analysis_procs import processes_naming, results_written
from ncclscope import ingest
from ncclscope.analysis import analyze_paths
from ncclscope.ingest import groups, handover
from ncclscope.ingest import pool as parse_pool
from ncclscope.report import json_text
from ncclscope.synth import generate_run

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


def _analyze_process(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *extra, "-m", "ncclscope", "analyze", "--no-cache", "--json", str(path)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, check=False, env=dict(os.environ))


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
    monkeypatch.setattr(parse_pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(groups, "GROUP_BYTES", 30_000)  # several groups of small logs
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


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only: CPU affinity")
def test_the_pool_counts_the_cores_the_process_is_bound_to():
    """A Slurm step or ``taskset`` binds the process to some of the machine's cores: one worker a core it may run
    on, not one a core of the machine."""
    code = ("import os; from ncclscope import ingest; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "print(ingest.pool_size(ingest.PARALLEL_MIN_BYTES, 64))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


def test_a_job_closed_early_stops_its_pool_and_removes_its_folder(tmp_path, monkeypatch):
    generate_run(tmp_path / "run", nranks=8, steps=10, seed=1)
    monkeypatch.setattr(parse_pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(groups, "GROUP_BYTES", 30_000)
    job = ingest.start_ingest([tmp_path / "run"], workers=2)
    pool = job._pool
    assert pool is not None
    job.close()
    assert job._pool is None
    with pytest.raises(RuntimeError):
        pool.submit(len, [])


def _root_base(a):
    while getattr(a, "base", None) is not None:
        a = a.base
    return getattr(a, "obj", a)  # a memoryview's exporter


def test_worker_results_come_back_as_mapped_files_not_through_the_pool(tmp_path, monkeypatch):
    """A worker writes its group's records into a memory file the parent made for the group before the fork
    (the numpy columns out of band) and sends the pool only the layout: the parent maps the file, and the COLL
    columns it gets are views of that mapping (no copy of them on the way in; through the pool's pipe they were
    copied five times). The files have no name anywhere, and the parent's descriptors are closed once read."""
    generate_run(tmp_path / "run", nranks=16, steps=30, fault="hang", fault_step=20, seed=3)
    monkeypatch.setattr(parse_pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(groups, "GROUP_BYTES", 30_000)
    with ingest.start_ingest([tmp_path / "run"], workers=2) as job:
        assert job.parallel
        layouts = [f.result() for f in job._futures]
        assert all(isinstance(x, int) for layout in layouts for x in layout)  # what crossed the pipe: a few ints
        assert all(len(layout) % 2 == 1 and layout[0] > 0 for layout in layouts)
        files = job._results
        fds = [files.fd(i) for i in range(len(job.groups))]
        assert all(fd is not None and os.fstat(fd).st_nlink == 0 and os.fstat(fd).st_size > 0 for fd in fds)
        parsed = job.result()
    assert all(files.fd(i) is None for i in range(len(job.groups)))
    batches = [r for p in parsed for r in p.records if type(r).__name__ == "NcclCollBatch"]
    assert batches
    for b in batches:
        for col in (b.proc, b.comm, b.op, b.count, b.datatype, b.tss, b.lines):
            assert not col.flags.owndata and col.flags.writeable and col.flags.aligned
            assert isinstance(_root_base(col), mmap.mmap)


def test_a_cut_result_file_is_an_error_not_wrong_records(tmp_path):
    fd = os.open(tmp_path, os.O_TMPFILE | os.O_RDWR, 0o600)
    try:
        layout = handover.write_result(groups.parse_job([(str(SAMPLES / "gpu_hang" / n), n, (SAMPLES / "gpu_hang" / n).stat().st_size)
                                                        for n in sorted(os.listdir(SAMPLES / "gpu_hang"))]), fd)
        os.ftruncate(fd, layout[0] - 1)
        with pytest.raises(OSError, match="cut short"):
            handover.read_result(fd, layout)
    finally:
        os.close(fd)


def test_knowledge_base_is_read_while_the_workers_parse(tmp_path, monkeypatch):
    """With a worker pool, the failure knowledge base (TOML and ~220 patterns) is loaded before the
    parsed files are collected, not on the serial path after them."""
    from ncclscope.nccl import failures

    generate_run(tmp_path / "run", nranks=16, steps=30, fault="hang", fault_step=20, seed=3)
    monkeypatch.setattr(parse_pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(groups, "GROUP_BYTES", 30_000)
    seen: list[tuple[bool, int]] = []
    collect = ingest.IngestJob.result

    def result(self):
        seen.append((self.parallel, failures.entries.cache_info().currsize))
        return collect(self)

    monkeypatch.setattr(ingest.IngestJob, "result", result)
    for f in (failures.entries, failures._index, failures._area_index, failures.classify):
        f.cache_clear()
    analyze_paths([tmp_path / "run"], cache=False)
    assert seen == [(True, 1)]


_WARM_PROBE = """
import resource, sys
import numpy as np
from ncclscope import malloc
assert malloc.warm_heap(100 << 20) == 0  # memory not kept in this process yet: nothing warmed
if not malloc.keep_freed_memory():
    print("no-glibc"); sys.exit(0)
warmed = malloc.warm_heap(1 << 40) if sys.argv[1] == "warm" else 0
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
cols = [np.ones(20 << 20, dtype=np.int64) for _ in range(2)]  # 320 MB of table-sized columns, written
print(warmed, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_heap_warmed_while_the_workers_parse_spares_the_model_its_page_faults():
    """``malloc.warm_heap`` (called by ``analyze`` while its workers parse) faults in at most
    ``HEAP_WARM_MAX`` of heap and frees it: the large arrays made next take those pages without a
    fault each (counted by the kernel, not timed); without ``keep_freed_memory`` it does nothing."""
    from ncclscope import malloc

    got = {}
    for how in ("warm", "cold"):
        p = subprocess.run([sys.executable, "-c", _WARM_PROBE, how], capture_output=True, text=True, timeout=600,
                           cwd=ROOT, check=False, env={**os.environ, "NUMPY_MADVISE_HUGEPAGE": "0"})  # as the CLI runs
        assert p.returncode == 0, p.stderr
        if p.stdout.strip() == "no-glibc":
            pytest.skip("malloc is not glibc's")
        got[how] = [int(x) for x in p.stdout.split()]
    assert got["warm"][0] == malloc.HEAP_WARM_MAX and got["cold"][0] == 0
    assert got["cold"][1] > 50_000  # 320 MB of fresh pages, about one fault each
    assert got["warm"][1] < got["cold"][1] // 4


def test_a_result_file_that_cannot_be_written_comes_back_through_the_pool(tmp_path, monkeypatch):
    """Memory refused to a result file (a container's memory limit) is no failure: a worker whose file
    cannot be written sends its pickle through the pool, as before, and leaves the file empty."""
    import errno

    generate_run(tmp_path / "run", nranks=16, steps=30, fault="hang", fault_step=20, seed=3)
    serial = ingest.ingest([tmp_path / "run"], workers=1)
    write = handover.write_result
    refused: list[int] = []

    def full(parsed, fd):
        if len(refused) < 2 and os.fstat(fd).st_ino not in refused:
            refused.append(os.fstat(fd).st_ino)
            os.pwrite(fd, b"partial", 0)
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(parsed, fd)

    monkeypatch.setattr(handover, "write_result", full)  # the workers fork after this: they inherit it
    monkeypatch.setattr(parse_pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(groups, "GROUP_BYTES", 30_000)
    with ingest.start_ingest([tmp_path / "run"], workers=2) as job:
        assert len(job.groups) > 3
        layouts = [f.result() for f in job._futures]
        back = [i for i, got in enumerate(layouts) if isinstance(got, bytes)]
        assert 1 <= len(back) <= 4 and any(isinstance(got, list) for got in layouts)  # each worker refused its first
        assert all(os.fstat(job._results.fd(i)).st_size == 0 for i in back)  # nothing partial left
        pooled = job.result()
    assert [[repr(r) for r in p.records] for p in pooled] == [[repr(r) for r in p.records] for p in serial]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm on this machine")
def test_sigterm_mid_parse_exits_143_and_leaves_nothing_in_shared_memory(tmp_path):
    """A scheduler's SIGTERM while the workers parse: the process still ends by the signal, and nothing is
    left holding memory in /dev/shm (result folders there, before, were left one per kill)."""
    import signal
    import time

    generate_run(tmp_path / "run", nranks=256, steps=300, fault="hang", fault_step=290, seed=5)
    shm = Path("/dev/shm")
    before = {p.name for p in shm.iterdir()}
    proc = subprocess.Popen([sys.executable, "-m", "ncclscope", "analyze", "--no-cache", "--json", str(tmp_path / "run")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600  # a safety net: the wait is on the event
    while time.monotonic() < deadline and not results_written(proc.pid) and proc.poll() is None:
        time.sleep(0.02)  # until a worker has written a result
    assert proc.poll() is None, "the analysis ended before a worker wrote a result"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == -signal.SIGTERM, err[-2000:]
    # its parse workers end with it (they waited on the pool's queue for ever, orphaned, before)
    gone = time.monotonic() + 600  # a safety net: the workers end with their parent
    while time.monotonic() < gone and processes_naming(str(tmp_path / "run")):
        time.sleep(0.1)
    assert not processes_naming(str(tmp_path / "run"))
    left = {p.name for p in shm.iterdir() if "ncclscope" in p.name} - before
    assert not left, left
