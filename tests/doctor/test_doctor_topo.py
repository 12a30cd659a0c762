"""nvidia-smi topo -m / -L parsing on real-format samples, and the topology checks over them."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS

from ncclscope.doctor.checks import Status, topology_checks
from ncclscope.sources.nvidia_smi import (
    link_class,
    nvlink_count,
    parse_gpu_list,
    parse_smi_banner,
    parse_topo_matrix,
)

DATA = Path(__file__).parent.parent / "data" / "doctor"


def load(name: str):
    topo = parse_topo_matrix((DATA / name).read_text())
    assert topo is not None, name
    return topo


def test_corpus_2gpu_h200_with_ansi_header():
    topo = load("topo_2gpu_h200_corpus.txt")
    assert topo.gpus == ("GPU0", "GPU1") and topo.nics == ()
    assert topo.link("GPU0", "GPU1") == "NV18" and nvlink_count("NV18") == 18
    assert topo.cpu_affinity == {"GPU0": "0-31", "GPU1": "0-31"}
    assert topo.numa_affinity == {"GPU0": "0", "GPU1": "0"}
    assert topo.gpu_numa_id["GPU0"] == "N/A"
    assert topo.slowest_gpu_link() == "nvlink"


def test_2gpu_nvlink_bridge_with_nics():
    topo = load("topo_2gpu_nvl_nics.txt")
    assert topo.nics == ("NIC0", "NIC1") and topo.nic_names == {"NIC0": "mlx5_0", "NIC1": "mlx5_1"}
    assert topo.nearest_nics("GPU0") == ["mlx5_0"] and topo.nearest_nics("GPU1") == ["mlx5_1"]
    assert topo.cpu_affinity["GPU1"] == "32-63,96-127" and "NIC0" not in topo.cpu_affinity


def test_4gpu_nv4_shared_nics():
    topo = load("topo_4gpu_nv4_nics.txt")
    assert len(topo.gpus) == 4 and set(topo.gpu_pairs().values()) == {"NV4"}
    assert topo.nearest_nics("GPU3") == ["mlx5_1"]
    assert link_class(topo.link("GPU0", "NIC0")) == "pcie_switch"


def test_8gpu_h100_ten_nics():
    topo = load("topo_8gpu_h100_nics.txt")
    assert len(topo.gpus) == 8 and len(topo.nics) == 10
    assert len(topo.gpu_pairs()) == 28 and set(topo.gpu_pairs().values()) == {"NV18"}
    assert topo.nic_name("NIC9") == "mlx5_9"
    assert all(topo.nearest_nics(f"GPU{i}") == [f"mlx5_{i}"] for i in range(8))
    assert topo.cpu_affinity["GPU7"] == "56-111,168-223" and topo.numa_affinity["GPU7"] == "1"
    checks = {c.id: c for c in topology_checks(topo, {})}
    assert checks["topology"].status is Status.OK and checks["topology.nic"].status is Status.OK


def test_old_driver_hca_columns_hybrid_mesh():
    topo = load("topo_8gpu_v100_old.txt")
    assert topo.nics == ("mlx5_0", "mlx5_1") and topo.nic_names == {}
    assert topo.link("GPU0", "GPU3") == "NV2" and topo.link("GPU0", "GPU5") == "SYS"
    assert topo.gpu_numa_id == {} and topo.numa_affinity["GPU4"] == "1"
    assert topo.slowest_gpu_link() == "cross_numa"
    c = {c.id: c for c in topology_checks(topo, {})}
    assert c["topology"].status is Status.WARN
    assert any("Only some pairs have NVLink" in a for a in c["topology"].advice)
    assert c["topology.nic"].status is Status.WARN  # GPUs reach NICs only through the host bridge


def test_pcie_workstation_and_p2p_disabled_on_nvlink():
    topo = load("topo_4gpu_pcie.txt")
    assert topo.slowest_gpu_link() == "cross_numa" and topo.nics == ()
    nv = load("topo_2gpu_h200_corpus.txt")
    c = topology_checks(nv, {"NCCL_P2P_DISABLE": "1"})[0]
    assert c.status is Status.WARN and any("NCCL_P2P_DISABLE" in a for a in c.advice)
    assert topology_checks(nv, {})[0].status is Status.OK


@pytest.mark.parametrize("text", ["", "No devices were found\n", "GPU0 something odd\n"])
def test_no_matrix(text):
    assert parse_topo_matrix(text) is None


def test_gpu_list_and_banner():
    gpus = parse_gpu_list("GPU 0: NVIDIA H200 (UUID: GPU-0a1b)\n  MIG 1g.18gb Device 0: (UUID: MIG-x)\n"
                          "GPU 1: NVIDIA H200 (UUID: GPU-2c3d)\n")
    assert [(g.index, g.name, g.uuid) for g in gpus] == [(0, "NVIDIA H200", "GPU-0a1b"), (1, "NVIDIA H200", "GPU-2c3d")]
    banner = CORPUS / "system.txt"
    text = banner.read_text() if banner.exists() else "| NVIDIA-SMI 580.159.04  Driver Version: 580.159.04  CUDA Version: 13.0 |"
    assert parse_smi_banner(text) == {"driver": "580.159.04", "cuda": "13.0"}
