"""'nothing readable' only for text with no NCCL, PyTorch or launcher content; anything else is
analysed (even when the verdict is unknown), with what was read and the NCCL-looking lines that
were not understood counted per file."""
from __future__ import annotations

import pytest

from ncclscope.analysis import analyze_paths
from ncclscope.input_names import InputError
from ncclscope.report import to_json


def test_text_with_nothing_of_ours_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("shopping list\nmilk\neggs\n" * 20)
    with pytest.raises(InputError, match="nothing readable"):
        analyze_paths([tmp_path], cache=False)


def test_nccl_lines_of_an_unknown_form_are_analysed_and_counted(tmp_path):
    (tmp_path / "rank0.log").write_text(
        "edge-7:3101:3101 [0] NCCL INFO A second form no release printed yet: 7 widgets\n"  # cudaDriverVersion is read now
        "edge-7:3101:3140 [0] NCCL INFO Some line a future release prints: 42 things\n"
        "epoch 1 done\n")
    got = to_json(analyze_paths([tmp_path], cache=False))
    assert got["verdict"] == "unknown"
    assert got["inputs"] == [{"file": "rank0.log", "format": "log", "unread_nccl_lines": 2}]


def test_nccl_tests_header_with_only_nccl_lines_is_analysed(tmp_path):
    """An nccl-tests run that died before its table: the header makes it an nccl-tests file, and its
    NCCL lines are read all the same."""
    (tmp_path / "all_reduce_perf.out").write_text(
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20\n"
        "#  Rank  0 Group  0 Pid   9021 on  node-q1 device  0 [0x07] NVIDIA H100 80GB HBM3\n"
        "node-q1:9021:9021 [0] NCCL INFO Bootstrap : Using ib0:10.44.0.1<0>\n"
        "NCCL version 2.19.3+cuda12.3\n"
        "node-q1:9021:9040 [0] NCCL INFO comm 0x55e1c0 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 7000 "
        "commId 0x51c2e9 - Init START\n"
        "node-q1:9021:9040 [0] transport/net_ib.cc:1209 NCCL WARN NET/IB : Got completion from peer "
        "10.44.0.2<51822> with error 12, opcode 1, len 0, vendor err 129\n")
    got = to_json(analyze_paths([tmp_path], cache=False))
    assert got["job"]["nccl_version"] == "2.19.3" and got["job"]["world_size"] == 16
    assert got["inputs"][0]["format"] == "nccl_tests"


def test_pytorch_lines_of_no_known_form_are_analysed(tmp_path):
    (tmp_path / "stderr.log").write_text(
        "I0917 13:40:02.123000 4410 torch/distributed/run.py:212] Starting elastic_operator with launch configs:\n"
        "something only this job prints\n")
    got = to_json(analyze_paths([tmp_path], cache=False))
    assert got["verdict"] == "unknown"
    assert got["inputs"][0]["unread_pytorch_lines"] == 1
