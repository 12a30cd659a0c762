"""Slow runs that finished, read degraded: sockets between nodes that have an RDMA fabric, shared memory between GPUs
that have NVLink (``rules.transport_fit``), and a lone nccl-tests row far under its link (``metrics.link_floor``: an
all-reduce of two ranks has a busbw factor of 1)."""
from __future__ import annotations

import pytest
from class2_cases import check
from ncclscope.model import Verdict
from ncclscope.rules.transport_fit import PathFacts, slow_path


@pytest.mark.parametrize("name", ["sockets_in_container_with_rdma_plugin", "shm_between_nvlink_gpus_finished",
                                  "lone_sweep_row_far_under_ib"])
def test_a_finished_run_on_a_slower_path_is_degraded(name):
    assert check(name).decision.verdict is Verdict.DEGRADED


def test_the_setting_behind_shared_memory_is_named():
    a = check("shm_between_nvlink_gpus_finished")
    f = next(f for f in a.findings if f.verdict is Verdict.DEGRADED and f.kind.value == "transport")
    assert "NCCL_P2P_DISABLE=1" in f.message and "Unset NCCL_P2P_DISABLE" in (f.hint or "")


def _facts(**kw):
    base = dict(nnodes=2, network="Socket", ib_signs=(), intra=(), nvlink_signs=(), nvlink_sure=False, settings={})
    base.update(kw)
    return PathFacts(**base)


def test_sockets_between_nodes():
    assert slow_path(_facts()) is None  # sockets with no sign of an RDMA fabric: that cluster's normal path
    s = slow_path(_facts(ib_signs=("NCCL_IB_HCA=mlx5_0 is set",), settings={"NCCL_IB_HCA": "mlx5_0"}))
    assert s is not None and (s.level, s.setting) == ("likely", "NCCL_IB_HCA=mlx5_0")
    s = slow_path(_facts(settings={"NCCL_IB_DISABLE": "1"}))
    assert s is not None and (s.setting, s.level) == ("NCCL_IB_DISABLE=1", "possible")
    assert slow_path(_facts(network="IB")) is None
    assert slow_path(_facts(nnodes=1)) is None  # one node: the network is not between nodes


def test_shared_memory_only_where_nvlink_is_shown():
    one = dict(nnodes=1, network=None)
    assert slow_path(_facts(intra=("SHM",), **one)) is None  # PCIe GPUs: SHM is their path
    s = slow_path(_facts(intra=("SHM",), nvlink_signs=("topo shows NV8",), nvlink_sure=True, **one))
    assert s is not None and (s.used, s.level, s.setting) == ("SHM", "likely", None)
    s = slow_path(_facts(intra=("P2P/IPC",), nvlink_signs=("an SXM GPU",), settings={"NCCL_P2P_DISABLE": "1"}, **one))
    assert s is not None and (s.level, s.setting) == ("possible", "NCCL_P2P_DISABLE=1")
