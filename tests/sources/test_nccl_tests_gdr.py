"""nccl-tests output: the network path of each process as printed (its /GDRDMA flag) and each rank's GPU, the two
facts the bandwidth floors need that the connection records drop, and the NCCL library version of the header."""
from __future__ import annotations

from ncclscope.sources.nccl_tests import MAX_GDR_SEEN, device_gpu, library_version, parse_nccl_tests_lines
from ncclscope.sources.records import LauncherExit, NcclConnection, NcclNet, NcclVersion

LINES = [
    "#  Rank  0 Group  0 Pid   4102 on     gpu-a1 device  0 [0x81] NVIDIA A100-PCIE-40GB",
    "#  Rank  1 Group  0 Pid   4377 on     gpu-a2 device  0 [0x81] NVIDIA A100-PCIE-40GB",
    "gpu-a1:4102:4117 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IBext_v8/0",
    "gpu-a1:4102:4117 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/IBext_v8/0",
    "gpu-a1:4102:4117 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/1/GDRDMA",
    "gpu-a1:4102:4117 [0] NCCL INFO Channel 00/0 : 0[0] -> 0[0] via P2P/CUMEM",
]


def test_one_gdr_record_per_process_and_network_path_as_printed() -> None:
    recs = list(parse_nccl_tests_lines(enumerate(LINES, 1), "t.log"))
    gdr = [r for r in recs if isinstance(r, NcclNet) and r.kind == "gdr"]
    assert [(r.host, r.pid, r.value, r.line) for r in gdr] == [
        ("gpu-a1", 4102, "NET/IBext_v8/0", 3), ("gpu-a1", 4102, "NET/IB/1/GDRDMA", 5)]
    assert sum(isinstance(r, NcclConnection) for r in recs) == 4  # the connections themselves are all kept


def test_gdr_records_are_bounded_whatever_the_input() -> None:
    lines = [f"h{i}:{i}:{i} [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] via NET/IB/0" for i in range(MAX_GDR_SEEN + 50)]
    recs = parse_nccl_tests_lines(enumerate(lines, 1), "t.log")
    assert sum(isinstance(r, NcclNet) for r in recs) == MAX_GDR_SEEN


def test_device_gpu_reads_the_name_after_the_bus_id() -> None:
    assert device_gpu(LINES[0]) == "NVIDIA A100-PCIE-40GB"
    assert device_gpu("#   Rank  3 Pid 29565 on server device  3 [0x61] A40") == "A40"  # before 2.13: no Group
    assert device_gpu("#  Rank  0 Group  0 Pid 31902 on ws device  0 [0000:01:00] NVIDIA RTX PRO 6000 Blackwell  ") \
        == "NVIDIA RTX PRO 6000 Blackwell"
    assert device_gpu("gpu-a1:4102:4117 [0] NCCL INFO cudaDriverVersion 12040") is None
    assert device_gpu("#  Rank  0 Group  0 Pid 1 on h device 0 [0x81]") is None


def test_the_header_gives_the_nccl_library_version_to_the_first_rank() -> None:
    head = ["# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903", *LINES[:2]]
    recs = list(parse_nccl_tests_lines(enumerate(head, 1), "t.log"))
    (v,) = [r for r in recs if isinstance(r, NcclVersion)]
    assert (v.version, v.pid, v.line) == ("2.19.3", 0, 1)
    assert [library_version(c) for c in (22807, 21200, 2708, 123, 9999)] == ["2.28.7", "2.12.0", "2.7.8", None, None]


def test_mpirun_s_report_of_the_rank_that_ended_the_benchmark_is_its_exit() -> None:
    lines = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20",
             "rk2-11-s4:71120:71120 [0] NCCL INFO NCCL version 2.21.5+cuda12.8", "free(): corrupted unsorted chunks",
             "mpirun noticed that process rank 37 with PID 71120 on node rk2-11-s4 exited on signal 6 (Aborted)."]
    (x,) = [r for r in parse_nccl_tests_lines(enumerate(lines, 1), "mpirun.log") if isinstance(r, LauncherExit)]
    assert (x.rank, x.exitcode, x.pid, x.host, x.root_cause, x.line) == (37, -6, 71120, "rk2-11-s4", True, 4)
