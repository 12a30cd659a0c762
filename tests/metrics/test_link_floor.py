"""A completed nccl-tests sweep held to the floor of the path its own log names (metrics.link_floor,
detectors.slow_link): slow over InfiniBand without GPU Direct RDMA, over NVLink-less paths between SXM GPUs,
and never flagged where the log does not say enough (sockets, PCIe GPUs, small sweeps)."""
from __future__ import annotations

from pathlib import Path

import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.metrics.link_floor import LARGE_BYTES, expected_floor, link_facts

SIZES = (1 << 20, 16 << 20, 256 << 20, 1 << 30)


def sweep_log(*, gpu: str, hosts: int, per_host: int, via: str | None, busbw: float, nics: int = 1,
              layer: str = "IB", ring: bool = True, sizes: tuple[int, ...] = SIZES, network: str = "IB") -> str:
    """An all_reduce_perf output in the shape mpirun prints it with NCCL_DEBUG=INFO: device block, NCCL's
    network and channel lines, Init COMPLETE, the table, the closing check."""
    n = hosts * per_host
    out = [("# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 "
            "agg iters: 1 validation: 1 graph: 0"), "#", "# Using devices"]
    out += [f"#  Rank {r:2d} Group  0 Pid {5000 + r:6d} on {f'node-{r // per_host}':>10} device {r % per_host:2d} "
            f"[0x{16 + r % per_host:02x}] {gpu}" for r in range(n)]
    listed = " ".join(f"[{i}]mlx5_{i}:1/{layer}" for i in range(nics))
    for r in range(n):
        h, d, pid = f"node-{r // per_host}", r % per_host, 5000 + r
        if d == 0 and network != "Socket":
            out.append(f"{h}:{pid}:{pid} [{d}] NCCL INFO NET/IB : Using {listed} ; OOB eth0:10.0.0.{r // per_host}<0>")
        out.append(f"{h}:{pid}:{pid} [{d}] NCCL INFO Using network {network}")
        out.append(f"{h}:{pid}:{pid + 9} [{d}] NCCL INFO ncclCommInitRank comm 0x7f00{r:04x} rank {r} nranks {n} "
                   f"cudaDev {d} busId {16 + d:x}000 commId 0x5eed00c0ffee1234 - Init START")
        if via is not None:
            nxt = (r + 1) % n
            out.append(f"{h}:{pid}:{pid + 9} [{d}] NCCL INFO Channel 00/0 : {r}[{d}] -> {nxt}[{nxt % per_host}] "
                       f"via {via.format(nic=d % nics)}")
        out.append(f"{h}:{pid}:{pid + 9} [{d}] NCCL INFO ncclCommInitRank comm 0x7f00{r:04x} rank {r} nranks {n} "
                   f"cudaDev {d} busId {16 + d:x}000 commId 0x5eed00c0ffee1234 - Init COMPLETE")
    out += ["#", ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
                  "algbw   busbw #wrong")]
    factor = 2 * (n - 1) / n if ring else 1.0
    for s in sizes:
        bw = busbw * (0.5 if s < LARGE_BYTES else 1.0)
        alg = bw / factor
        t = s / (alg * 1e3)
        out.append(f"{s:12d} {s // 4:13d}     float     sum      -1 {t:8.1f} {alg:7.2f} {bw:7.2f}      0 "
                   f"{t:8.1f} {alg:7.2f} {bw:7.2f}      0")
    out += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {busbw / 2:.4f}", "#"]
    return "\n".join(out) + "\n"


def analyse(tmp_path: Path, text: str):
    p = tmp_path / "all_reduce.log"
    p.write_text(text)
    return analyze_paths([p], cache=False)


def slow(a) -> list:
    return [f for f in a.findings if f.kind == "slow_link"]


def test_ib_without_gdrdma_far_below_one_nic_is_degraded_with_the_gdr_fix(tmp_path: Path) -> None:
    a = analyse(tmp_path, sweep_log(gpu="NVIDIA A100-PCIE-40GB", hosts=2, per_host=1, via="NET/IBext_v8/{nic}",
                                    busbw=1.1, network="IBext_v8"))
    assert a.decision.verdict.value == "degraded" and a.decision.culprit_ranks == ()
    (f,) = slow(a)
    assert f.data["floor_gbs"] == 1.6 and f.data["gdr"] is False and f.data["links"] == 1
    assert "NCCL_NET_GDR_LEVEL" in f.hint and "nvidia-peermem" in f.hint
    assert "1.10 GB/s" in f.message and "256 MB 1.10" in f.message  # the measured busbw per size is said
    assert any("Channel 00/0" in e.text and "NET/IBext_v8/0" in e.text for e in f.evidence)


def test_the_same_table_with_gdrdma_is_degraded_without_blaming_gdr(tmp_path: Path) -> None:
    a = analyse(tmp_path, sweep_log(gpu="NVIDIA A100-PCIE-40GB", hosts=2, per_host=1, via="NET/IB/{nic}/GDRDMA",
                                    busbw=1.1))
    (f,) = slow(a)
    assert f.data["gdr"] is True and "ib_write_bw" in f.hint and "NCCL_NET_GDR_LEVEL" not in f.hint


@pytest.mark.parametrize("busbw", [1.7, 11.0])
def test_ib_above_the_floor_stays_healthy(tmp_path: Path, busbw: float) -> None:
    a = analyse(tmp_path, sweep_log(gpu="NVIDIA A100-PCIE-40GB", hosts=2, per_host=1, via="NET/IB/{nic}", busbw=busbw))
    assert a.decision.verdict.value == "healthy" and not slow(a)


def test_hgx_nodes_are_held_to_every_nic_they_list_for_a_ring_and_to_one_for_a_pair(tmp_path: Path) -> None:
    args = {"gpu": "NVIDIA A100-SXM4-80GB", "hosts": 2, "per_host": 8, "via": "NET/IB/{nic}", "busbw": 32.8, "nics": 4}
    a = analyse(tmp_path, sweep_log(**args))
    (f,) = slow(a)
    assert (f.data["links"], f.data["floor_gbs"], f.data["gdr"]) == (4, 40.0, False)
    b = analyse(tmp_path, sweep_log(**args, ring=False))  # busbw == algbw: sendrecv-like, one NIC each
    assert b.decision.verdict.value == "healthy"
    c = analyse(tmp_path, sweep_log(**{**args, "busbw": 93.0, "via": "NET/IB/{nic}/GDRDMA"}))
    assert c.decision.verdict.value == "healthy"


@pytest.mark.parametrize("layer,floor", [("RoCE", 2.0), ("IB", 40.0)])
def test_roce_is_held_to_10gbe_only(tmp_path: Path, layer: str, floor: float) -> None:
    a = analyse(tmp_path, sweep_log(gpu="NVIDIA A100-SXM4-80GB", hosts=2, per_host=8, via="NET/IB/{nic}",
                                    busbw=1.0, nics=4, layer=layer))
    (f,) = slow(a)
    assert f.data["floor_gbs"] == floor


def test_sockets_have_no_floor(tmp_path: Path) -> None:
    a = analyse(tmp_path, sweep_log(gpu="Tesla V100-PCIE-16GB", hosts=2, per_host=1, via="NET/Socket/{nic}",
                                    busbw=0.11, network="Socket"))
    assert a.decision.verdict.value == "healthy" and not slow(a)


def test_sxm_gpus_of_one_host_over_shm_are_degraded_pcie_gpus_are_not(tmp_path: Path) -> None:
    a = analyse(tmp_path, sweep_log(gpu="NVIDIA H100 80GB HBM3", hosts=1, per_host=8, via=None, busbw=21.0))
    (f,) = slow(a)
    assert f.data["path"] == "NVLink" and f.data["floor_gbs"] == 60.0 and "NCCL_P2P_DISABLE" in f.hint
    for gpu, bw in (("NVIDIA H100 80GB HBM3", 360.0), ("NVIDIA H100 PCIe", 21.0), ("NVIDIA A40", 9.0)):
        b = analyse(tmp_path, sweep_log(gpu=gpu, hosts=1, per_host=8, via=None, busbw=bw))
        assert b.decision.verdict.value == "healthy", gpu


def test_a_sweep_of_small_messages_only_is_not_judged(tmp_path: Path) -> None:
    a = analyse(tmp_path, sweep_log(gpu="NVIDIA A100-PCIE-40GB", hosts=2, per_host=1, via="NET/IB/{nic}", busbw=0.2,
                                    sizes=(1 << 20, 8 << 20)))
    assert a.decision.verdict.value == "healthy" and not slow(a)


def test_facts_come_from_the_log_alone(tmp_path: Path) -> None:
    a = analyse(tmp_path, sweep_log(gpu="NVIDIA A100-SXM4-80GB", hosts=2, per_host=8, via="NET/IB/{nic}/GDRDMA",
                                    busbw=93.0, nics=4))
    f = link_facts(a.run)
    assert (f.nnodes, f.world, f.gpus, f.network, f.link_layer, f.nics_listed, f.nics_used, f.gdr) == (
        2, 16, ("NVIDIA A100-SXM4-80GB",), "IB", "IB", 4, 4, True)
    assert expected_floor(f, ring=False).gbs == 10.0


def test_a_large_job_is_judged_only_from_1_mib_a_rank(tmp_path: Path) -> None:
    # 64 nodes x 8 GPUs: 256 MiB is half a MiB a rank, still latency-bound at this scale
    args = {"gpu": "NVIDIA H100 80GB HBM3", "hosts": 64, "per_host": 8, "via": "NET/IB/{nic}/GDRDMA", "busbw": 9.0,
            "nics": 8}
    a = analyse(tmp_path, sweep_log(**args, sizes=(1 << 20, 64 << 20, 256 << 20)))
    assert a.decision.verdict.value == "healthy" and not slow(a)
    b = analyse(tmp_path, sweep_log(**args, sizes=(64 << 20, 256 << 20, 1 << 30)))  # 2 MiB a rank at 1 GiB
    (f,) = slow(b)
    assert f.data["busbw_by_size"] == [[1 << 30, 9.0]]


def test_without_channel_lines_the_hca_line_says_gdr_is_off(tmp_path: Path) -> None:
    text = sweep_log(gpu="NVIDIA A100-PCIE-40GB", hosts=2, per_host=1, via=None, busbw=1.1)
    text = text.replace("NCCL INFO Using network IB", "NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n"
                        "node-0:5000:5000 [0] NCCL INFO Using network IB", 1)
    (f,) = slow(analyse(tmp_path, text))
    assert f.data["gdr"] is False and "nvidia-peermem" in f.hint
    assert any("GPU Direct RDMA Disabled" in e.text for e in f.evidence)


def test_gdr_of_a_training_log_comes_from_its_channels(tmp_path: Path) -> None:
    """A rank log (not nccl-tests output): model.Connection.gdr says whether the network channels use GDRDMA."""
    lines = []
    for r, host in ((0, "node-a"), (1, "node-b")):
        head = f"{host}:{700 + r}:{710 + r} [0] NCCL INFO "
        lines += [f"{head}comm 0x7f00{r} rank {r} nranks 2 cudaDev 0 busId 1b000 commId 0xabc123 - Init START",
                  f"{head}Channel 00/0 : {1 - r}[0] -> {r}[0] [receive] via NET/IB/0/GDRDMA",
                  f"{head}comm 0x7f00{r} rank {r} nranks 2 cudaDev 0 busId 1b000 commId 0xabc123 - Init COMPLETE"]
    p = tmp_path / "ranks.log"
    p.write_text("\n".join(lines) + "\n")
    f = link_facts(analyze_paths([p], cache=False).run)
    assert f.gdr is True and f.nnodes == 2
    p.write_text("\n".join(lines).replace("/GDRDMA", "") + "\n")
    assert link_facts(analyze_paths([p], cache=False).run).gdr is False
