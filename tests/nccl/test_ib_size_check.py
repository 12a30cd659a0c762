"""IB's transport size check (``NET/IB : collective mismatch error``, ``req N/M tag T peer P collective mismatch
error, local size N remote size M``): with the ranks' calls matching, the nodes are set up differently (a setting
that sizes buffers or picks the protocol, another NCCL release, forced relaxed ordering on the NIC): a config
error, no rank at fault. A desync trips the same check: when the ranks report a mismatch themselves (PyTorch's
DETAIL check), the WARN argues for nothing and the desync stands. Logs in the shapes of NVIDIA/nccl#615 and #969."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths

INIT = """\
trainer-b-1:7311:7311 [0] NCCL INFO Bootstrap : Using eth0:10.48.3.22<0>
trainer-b-1:7311:7311 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.48.3.22<0>
trainer-b-1:7311:7402 [0] NCCL INFO comm 0x7f2d18002e10 rank 8 nranks 16 cudaDev 0 busId 1a000 - Init COMPLETE
"""
OLD_WARN = """\
trainer-b-1:7311:7405 [0] transport/net_ib.cc:665 NCCL WARN NET/IB : collective mismatch error local size 548864 remote 524288 addr 7f5c91a30000 rkey 3a17e seq 14/1c
trainer-b-1:7311:7405 [0] NCCL INFO include/net.h:28 -> 3
trainer-b-1:7311:7405 [0] NCCL INFO proxy.cc:320 -> 3 [Proxy Thread]
RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch/work/torch/lib/c10d/ProcessGroupNCCL.cpp:1024, internal error, NCCL version 2.9.6
"""
NEW_WARN = """\
10.20.31.12: gx-12:2214401:2214588 [0] transport/net_ib.cc:1038 NCCL WARN NET/IB : req 0/1 tag 0 peer 10.20.31.11<61122> collective mismatch error, local size 524288 remote size 65536
10.20.31.12: gx-12:2214401:2214588 [0] NCCL INFO include/net.h:32 -> 5
10.20.31.12: gx-12:2214401:2214588 [0] NCCL INFO proxy.cc:684 -> 5 [Proxy Thread]
"""
DETAIL = ("[rank8]: RuntimeError: Detected mismatch between collectives on ranks. Rank 8 is running collective: "
          "CollectiveFingerPrint(SequenceNumber=14, OpType=ALLREDUCE, TensorShape=[1024], TensorDtypes=Float), but "
          "Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=14, OpType=ALLREDUCE, TensorShape=[2048], "
          "TensorDtypes=Float).\n")


def _analyze(tmp_path: Path, text: str):
    p = tmp_path / "node1.log"
    p.write_text(text)
    return analyze_paths([p], cache=False)


def _size_check(a):
    return next(f for f in a.findings if f.data.get("entry") == "ib-size-mismatch")


def test_old_form_with_torch_internal_error_is_a_config_error(tmp_path):
    a = _analyze(tmp_path, INIT + OLD_WARN)
    assert a.decision.verdict.value == "config_error"
    assert a.decision.culprit_ranks == ()
    f = _size_check(a)
    assert "PCI_WR_ORDERING" in f.hint and "NCCL_PROTO" in f.message


def test_new_form_behind_a_pdsh_prefix_is_a_config_error(tmp_path):
    a = _analyze(tmp_path, NEW_WARN)
    assert a.decision.verdict.value == "config_error"
    assert a.decision.culprit_ranks == ()
    assert _size_check(a).verdict is not None


def test_the_ranks_own_mismatch_report_leaves_it_a_desync(tmp_path):
    a = _analyze(tmp_path, INIT + OLD_WARN + DETAIL)
    assert _size_check(a).verdict is None  # the WARN argues for nothing: the DETAIL check decides
    assert a.decision.verdict.value == "desync"
