"""A configuration failure before anything else is a config error, not a crash: NCCL choosing several socket
interfaces by itself in a job across nodes, then failing on a socket. Whole analyses of logs in real shapes."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths


def node(host: str, pid: int, rank: int, ifs: str, set_ifname: bool = False) -> list[str]:
    head = f"{host}:{pid}:{pid} [0] NCCL INFO "
    return ([head + "NCCL_SOCKET_IFNAME set by environment to bond0"] if set_ifname else []) + [
        head + "NET/IB : No device found.",
        head + f"NET/Socket : Using {ifs}",
        head + "Using network Socket",
        f"{host}:{pid}:{pid + 40} [0] NCCL INFO comm 0x7f6d2c002f70 rank {rank} nranks 2 cudaDev 0 busId 1a000 - Init START",
    ]


FAILURE = ["Traceback (most recent call last):",
           '  File "train.py", line 77, in main',
           "    model = DDP(model, device_ids=[local_rank])",
           ("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, unhandled system "
           "error, NCCL version 21.0.3"),
           "ncclSystemError: System call (socket, malloc, munmap, etc) failed."]
TWO = "[0]bond0:192.168.1.161<0> [1]br-05ab815fa14e:172.19.0.1<0>"
ONE = "[0]bond0:192.168.1.162<0>"


def analyse(tmp_path: Path, lines: list[str]):
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    return analyze_paths([tmp_path / "train.log"], cache=False)


def test_several_interfaces_chosen_by_nccl_then_a_socket_failure_is_a_config_error(tmp_path):
    a = analyse(tmp_path, ["NCCL version 2.10.3+cuda11.3"] + node("gpu-a", 30211, 0, TWO) + node("gpu-b", 18874, 1, ONE)
                + FAILURE)
    assert a.decision.verdict.value == "config_error", a.decision.headline
    assert a.decision.culprit_ranks == ()
    (f,) = [f for f in a.findings if f.data.get("interfaces")]
    assert f.data["interfaces"] == ["bond0", "br-05ab815fa14e"] and "NCCL_SOCKET_IFNAME" in f.hint


def test_one_interface_each_is_no_interface_choice(tmp_path):
    a = analyse(tmp_path, node("gpu-a", 30211, 0, ONE) + node("gpu-b", 18874, 1, ONE) + FAILURE)
    assert a.decision.verdict.value == "crash"


def test_an_interface_the_user_named_is_not_nccl_s_choice(tmp_path):
    a = analyse(tmp_path, node("gpu-a", 30211, 0, TWO, True) + node("gpu-b", 18874, 1, ONE, True) + FAILURE)
    assert not [f for f in a.findings if f.data.get("interfaces")]


def test_one_node_with_two_interfaces_is_no_interface_choice(tmp_path):
    a = analyse(tmp_path, node("gpu-a", 30211, 0, TWO) + FAILURE)
    assert a.decision.verdict.value != "config_error"


def ib(host: str, pid: int, rank: int, link: str, gid: bool = False) -> list[str]:
    head = f"{host}:{pid}:{pid} [0] NCCL INFO "
    return ([head + "NCCL_IB_GID_INDEX set by environment to 3."] if gid else []) + [
        head + f"NET/IB : Using [0]mlx5_0:1/{link} ; OOB eth0:10.244.3.{rank + 10}<0>",
        f"{host}:{pid}:{pid + 30} [0] NCCL INFO comm 0x7f2a94000e00 rank {rank} nranks 2 cudaDev 0 busId 3b000 - Init COMPLETE",
    ]


ERROR12 = [("train-worker-1:931:988 [0] transport/net_ib.cc:839 NCCL WARN NET/IB : Got completion with error 12, opcode 1, "
           "len 0, vendor err 129"),
           "train-worker-1:931:988 [0] NCCL INFO proxy.cc:198 -> 2 [Proxy Thread]"]


def test_retry_exceeded_over_roce_with_the_default_gid_is_a_likely_config_error(tmp_path):
    a = analyse(tmp_path, ib("train-worker-0", 946, 0, "RoCE") + ib("train-worker-1", 931, 1, "RoCE") + ERROR12)
    assert a.decision.verdict.value == "config_error", a.decision.headline
    assert a.decision.culprit_ranks == () and a.decision.certainty == "likely"
    assert "NCCL_IB_GID_INDEX" in a.decision.headline


def test_retry_exceeded_over_infiniband_stays_a_network_crash(tmp_path):
    a = analyse(tmp_path, ib("train-worker-0", 946, 0, "IB") + ib("train-worker-1", 931, 1, "IB") + ERROR12)
    assert a.decision.verdict.value == "crash" and a.decision.culprit_ranks == ()


def test_an_error_with_no_last_error_is_classified_by_its_own_message(tmp_path):
    # CUDA's own error before NCCL ran (no 'Last error:' to quote): Fabric Manager not running on an NVSwitch host
    lines = ["[rank0]: Traceback (most recent call last):",
             '[rank0]:   File "train.py", line 12, in <module>',
             "[rank0]:     torch.cuda.set_device(local_rank)",
             "[rank0]: RuntimeError: CUDA error: system not yet initialized"]
    a = analyse(tmp_path, lines)
    assert a.decision.verdict.value == "config_error", a.decision.headline
    assert a.decision.culprit_ranks == ()


def test_retry_exceeded_with_the_link_layer_not_printed_stays_a_network_crash(tmp_path):
    # no NET/IB "Using" line: nothing says RoCE, so no GID-index config error is inferred
    lines = [x for h, p, r in (("train-worker-0", 946, 0), ("train-worker-1", 931, 1)) for x in ib(h, p, r, "IB")
             if "NET/IB : Using" not in x]
    a = analyse(tmp_path, lines + ERROR12)
    assert a.decision.verdict.value == "crash" and a.decision.culprit_ranks == ()


def test_roce_on_one_word_of_another_line_is_no_evidence(tmp_path):
    # "RoCE" in the application's own print is not NCCL's link layer
    a = analyse(tmp_path, ib("train-worker-0", 946, 0, "IB") + ib("train-worker-1", 931, 1, "IB")
                + ["[rank0]: cluster profile: roce-fabric/RoCE v2 planned"] + ERROR12)
    assert a.decision.verdict.value == "crash"
