"""`ncclscope bench`'s whole-process figures: each run's peak memory comes with its times, and the COLL reader
a parse uses is named."""
from __future__ import annotations

import sys

from ncclscope.commands.bench import coll_reader, paired_processes
from ncclscope.sources.coll import kernel as coll_kernel


def test_paired_processes_report_the_peak_of_the_measured_process():
    """A child that holds 64 MB reads at least that much; the baseline's times are its own."""
    grow = [sys.executable, "-c", "b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096])"]
    r = paired_processes(grow, ["true"], n=2, warmup=0)
    assert r.n == 2
    assert r.a_peak_mb >= 64
    assert r.a_cpu_s > r.b_cpu_s


def test_reader_named_as_the_parse_would_use_it():
    coll_kernel.disarm()
    try:
        assert coll_reader().startswith("numpy")
        if coll_kernel.arm(build=False):  # the module built ahead of time, where this machine has it
            assert coll_reader() == "compiled ahead of time (numba)"
    finally:
        coll_kernel.disarm()
