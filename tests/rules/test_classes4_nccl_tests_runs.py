"""Round four's cases of two nccl-tests runs in one console (tests/data/classes4/c4d_nccl_tests_*): a device block
that starts after a table row of the run before is another run (``model_build.runs``); the last is judged, with its
own world, and the earlier one is said to have been seen; standalone tests on several hosts, whose headers all come
before the rows, stay one input."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.model import EventKind
from ncclscope.model_build.runs import _tests_cut
from ncclscope.sources.nccl_tests import parse_nccl_tests_lines
from ncclscope.sources.records import WorldSize

SET = CaseSet(DATA / "classes4")
TWO_RUN_CASES = ["c4d_nccl_tests_allgather_g4_then_g8_healthy", "c4d_nccl_tests_mpirun_rerun_np4_stuck_init"]


@pytest.mark.parametrize("name", TWO_RUN_CASES)
def test_two_runs_case(name):
    a = SET.check(name)
    said = [e for e in a.run.events if e.kind == EventKind.EARLIER_RUNS]
    assert len(said) == 1 and said[0].data["runs"] == 2


def _run(n: int, pid: int, host: str = "h1", rows: bool = True) -> list[str]:
    out = [f"# nThread 1 nGpus {n} minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20", "#",
           "# Using devices"]
    out += [f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host:>6s} device {r:2d} [0x1b] NVIDIA A100" for r in range(n)]
    if rows:
        out += ["           8             2     float     sum      -1    10.00    0.00    0.00       0    "
                "10.00    0.00    0.00       0", "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 0.0 "]
    return out


def _records(lines: list[str]) -> list:
    return list(parse_nccl_tests_lines(enumerate(lines, 1), "t.txt"))


def test_a_header_after_a_table_starts_the_last_run():
    lines = _run(2, 100) + [""] + _run(4, 200)
    recs = _records(lines)
    assert _tests_cut(recs) == (lines.index(_run(4, 200)[3]) + 1, 2)
    assert [r.world_size for r in recs if isinstance(r, WorldSize)] == [2, 4]  # each run its own world


def test_three_runs_cut_at_the_last():
    lines = _run(2, 100) + _run(2, 150) + _run(8, 300, rows=False)
    assert _tests_cut(_records(lines)) == (lines.index(_run(8, 300)[3]) + 1, 3)


def test_standalone_tests_per_host_are_no_cut():
    """Two hosts each running the test at once: both headers and device blocks before any row."""
    a, b = _run(2, 100, "h1"), _run(2, 200, "h2")
    lines = a[:5] + b[:5] + a[5:] + b[5:]
    assert _tests_cut(_records(lines)) is None
    assert _tests_cut(_records(_run(4, 100))) is None


def test_one_process_running_several_tests_is_one_run():
    """``ncclscope perf`` (or one binary) prints a header before each collective's table from the same process."""
    assert _tests_cut(_records(_run(1, 100) + _run(1, 100) + _run(1, 100))) is None
