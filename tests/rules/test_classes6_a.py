"""Round six's cases (tests/data/classes6/c6a_*): the setting or the program's message a finding must name where the
verdict was already right (a connect the local host aborted, RoCE queue pairs that time out with NCCL_IB_HCA set, NIC
fusion's lost net id read by the ranks as NCCL's 'internal error'), a note naming the GPUs' peer-to-peer path
(NCCL_P2P_LEVEL, ACS) where every rank of one host timed out in its first collective with no error, and the nodes of
one job launched with different init addresses (a config error naming the address)."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.nccl.failures import classify
from ncclscope.rules.exits import FailureKind
from ncclscope.rules.facts import error_failure

SET = CaseSet(DATA / "classes6")
MINE = SET.names("c6a_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_aborted_connect_is_the_network_not_a_timeout():
    msg = "NCCL error in: x.cpp:1, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"
    aborted = error_failure(0, "torch.distributed.DistBackendError", msg,
                            "socketStartConnect: Connect to 10.1.0.2<4000> failed : Software caused connection abort",
                            None, ("a", 1))
    assert aborted is not None and aborted.kind is FailureKind.NETWORK
    timed_out = error_failure(0, "torch.distributed.DistBackendError", "Watchdog caught collective operation timeout",
                              None, None, ("a", 2))
    assert timed_out is not None and timed_out.kind is FailureKind.TIMEOUT


def test_entries_name_what_the_user_sees_and_sets():
    def said(text: str) -> str:
        k = classify(text)
        assert k is not None
        return f"{k.cause} {k.hint}"

    assert "'internal error'" in said("graph/topo.h:234 Could not find NET with id 0")
    assert "NCCL_IB_HCA" in said("Call to ibv_modify_qp failed with error Connection timed out")
    assert "Software caused connection abort" in said(
        "socketStartConnect: Connect to 10.1.0.2<4000> failed : Software caused connection abort")


def test_first_collective_on_one_host_names_peer_to_peer_but_not_across_nodes():
    def notes(name: str) -> list[str]:
        return [f.message for f in SET.analysis(name).findings if "peer-to-peer path" in f.message]

    assert notes("c6a_accelerate_2gpu_p2p_ipc_first_allreduce_timeout")
    assert notes("c6a_torchrun_4gpu_first_broadcast_p2p_never_delivers")
    assert not notes("c6a_torchrun_two_nodes_first_allreduce_timeout_no_p2p_note")


def test_nodes_disagree_on_the_init_address_only_where_two_literal_addresses_differ():
    from ncclscope.rules.init_address import disagreeing, launch_address

    assert launch_address("torchrun --nnodes=2 --master_addr=10.0.0.1 --master_port=29500 t.py") == ("10.0.0.1", "29500")
    assert launch_address("python -m sglang.launch_server --nccl-init 10.0.0.2:8001 --nnodes 2") == ("10.0.0.2", "8001")
    assert launch_address("torchrun --rdzv_endpoint=10.0.0.3:29400 --nnodes=2 t.py") == ("10.0.0.3", "29400")
    assert launch_address("torchrun --master_addr=node0 --nnodes=2 t.py") is None  # a name: not compared
    differ = [("a.log", "torchrun --nnodes=2 --node_rank=0 --master_addr=10.0.0.1 t.py"),
              ("b.log", "torchrun --nnodes=2 --node_rank=1 --master_addr=10.0.0.2 t.py")]
    assert set(disagreeing(differ)) == {"a.log", "b.log"}
    same = [("a.log", "torchrun --nnodes=2 --node_rank=0 --master_addr=10.0.0.1 t.py"),
            ("b.log", "torchrun --nnodes=2 --node_rank=1 --master_addr=10.0.0.1 t.py")]
    assert disagreeing(same) == {}
    one_node = [("a.log", "torchrun --nnodes=1 --master_addr=10.0.0.1 t.py"),
                ("b.log", "torchrun --nnodes=1 --master_addr=127.0.0.1 t.py")]
    assert disagreeing(one_node) == {}  # two single-node runs, not one job's nodes
    port_only_once = [("a.log", "sglang.launch_server --dist-init-addr 10.0.0.1:5000 --nnodes 2"),
                      ("b.log", "torchrun --nnodes=2 --master_addr=10.0.0.1 t.py")]
    assert disagreeing(port_only_once) == {}
