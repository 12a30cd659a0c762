"""Round twenty-seven's cases (tests/data/classes27/), written from the twenty-first held-out set's misreadings: a
launcher's own report of a child's end (``subprocess.CalledProcessError`` raised by ``torch.distributed.launch`` or
``accelerate launch``, mp.spawn's bare ``Exception``) is an echo unless it is the only word that the job failed;
PyTorch's watchdog timeouts before torch 1.11 (no ``SeqNum``) are stalls, and in one console the ranks of the world that
printed none were elsewhere; a bus error inside NCCL is /dev/shm too small for its shared-memory buffers (a config
error); gdb on a core file (``Program terminated with signal ...``) is a crash report; nccl-tests' one-line structured
output (``--json``) is a sweep; NCCL's ``NCCL_IB_HCA set to ...`` is a setting like ``... set by environment to``."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes27")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_a_launchers_report_is_told_by_where_it_was_raised():
    from ncclscope.rules.launcher_echo import launcher_echo

    assert launcher_echo("subprocess.CalledProcessError",
                         ["/env/lib/python3.8/site-packages/torch/distributed/launch.py:255 in main"])
    assert launcher_echo("subprocess.CalledProcessError",
                         ["/env/lib/python3.10/site-packages/accelerate/commands/launch.py:309 in multi_gpu_launcher"])
    assert launcher_echo("Exception", ["/env/lib/python3.6/site-packages/torch/multiprocessing/spawn.py:118 in join"])
    assert launcher_echo("torch.distributed.elastic.multiprocessing.errors.ChildFailedError", [])
    # the user's own subprocess call, and an exception of the launcher's module of another type
    assert not launcher_echo("subprocess.CalledProcessError", ["/usr/lib/python3.10/subprocess.py:526 in run"])
    assert not launcher_echo("subprocess.CalledProcessError", [])
    assert not launcher_echo("ValueError", ["/env/lib/python3.8/site-packages/torch/distributed/launch.py:255 in main"])


def test_old_watchdog_timeout_without_a_sequence_number_is_read():
    from ncclscope.sources.records import WatchdogTimeout
    from ncclscope.sources.torch_log import parse_torch_lines

    line = ("[E ProcessGroupNCCL.cpp:566] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1801344 milliseconds before timing out.")
    recs = [r for r in parse_torch_lines([(1, line), (2, line)], "f") if isinstance(r, WatchdogTimeout)]
    assert len(recs) == 1  # echoed twice, one timeout
    assert (recs[0].rank, recs[0].seq, recs[0].op, recs[0].timeout_ms) == (1, None, "BROADCAST", 1800000)


def test_structured_output_rows_and_its_bounds():
    from ncclscope.sources.nccl_tests import STRUCTURED_MAX, structured_rows
    from ncclscope.sources.records import ExitCode, NcclTestsRow

    line = ('{"identifier": "nccl-tests structured output", "version": "2.26.6", "benchmark": [{"1048576": {"count": '
            '262144, "type": "float", "redop": "sum", "root": "-1", "oop_time": 40.0, "oop_algbw": 26.2, "oop_busbw": '
            '39.3, "oop_error": 0, "ip_time": 41.0, "ip_algbw": 25.6, "ip_busbw": 38.4, "ip_error": "N/A"}}]}')
    recs = list(structured_rows(line, "f", 3, "all_reduce_perf"))
    rows = [r for r in recs if isinstance(r, NcclTestsRow)]
    assert [(r.size, r.busbw, r.in_place) for r in rows] == [(1048576, 39.3, False), (1048576, 38.4, True)]
    assert any(isinstance(r, ExitCode) and r.code == 0 for r in recs)
    assert list(structured_rows('{"identifier": "nccl-tests structured output", "benchmark": [', "f", 1, None)) == []
    assert list(structured_rows(" " * (STRUCTURED_MAX + 1), "f", 1, None)) == []
    assert list(structured_rows('{"benchmark": [{"12": {"oop_time": "x"}}]}', "f", 1, None)) == []


@pytest.mark.parametrize("msg,want", [
    ("NCCL_IB_HCA set to mlx5_0,mlx5_3", ("NCCL_IB_HCA", "mlx5_0,mlx5_3")),
    ("NCCL_SOCKET_IFNAME set by environment to eth0", ("NCCL_SOCKET_IFNAME", "eth0")),
    ("P2P Chunksize set to 131072", None),
])
def test_nccl_setting_lines(msg, want):
    from ncclscope.sources.nccl_log import parse_nccl_line
    from ncclscope.sources.records import NcclEnv

    rec = parse_nccl_line(f"host-a:101:202 [0] NCCL INFO {msg}", "f", 1)
    got = (rec.name, rec.value) if isinstance(rec, NcclEnv) else None
    assert got == want
