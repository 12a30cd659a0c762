"""A multi-node nccl-tests table with no NCCL line (no transport, no NIC list): nodes of HGX-class or V100 SXM2 GPUs
are held, as a possible degradation, to one link of the slowest NIC of their class; a sweep that collapses past some
size is judged at its largest sizes."""
from __future__ import annotations

from pathlib import Path

import pytest
from ncclscope.analysis import analyze_paths


def table(*, gpu: str, hosts: int, per_host: int, busbw: dict[int, float], marks: str = "#") -> str:
    n = hosts * per_host
    out = [f"{marks} nThread 1 nGpus 1 minBytes 1048576 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20",
           f"{marks} Using devices"]
    out += [f"{marks}  Rank {r:2d} Group  0 Pid {7000 + r:6d} on {f'cn-{r // per_host}':>8} device  {r % per_host} "
            f"[0x{16 + r % per_host:02x}] {gpu}" for r in range(n)]
    out += [f"{marks}                                                 out-of-place                       in-place",
            (f"{marks}       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
             "algbw   busbw #wrong")]
    f = 2 * (n - 1) / n
    for s, b in sorted(busbw.items()):
        a = b / f
        t = s / a / 1e3
        out.append(f"{s:12d} {s // 4:13d}     float     sum      -1 {t:8.1f} {a:7.2f} {b:7.2f}      0 {t:8.1f} "
                   f"{a:7.2f} {b:7.2f}      0")
    return "\n".join(out + [f"{marks} Out of bounds values : 0 OK", f"{marks} Avg bus bandwidth    : 4.2"]) + "\n"


def verdict(tmp_path: Path, text: str):
    p = tmp_path / "out.txt"
    p.write_text(text)
    return analyze_paths([p], cache=False)


COLLAPSE = {32 << 20: 28.0, 64 << 20: 5.2, 256 << 20: 5.1, 1 << 30: 5.3, 4 << 30: 5.3}


@pytest.mark.parametrize("marks", ["#", ""])
def test_h100_nodes_collapsing_at_large_sizes_are_possibly_degraded(tmp_path: Path, marks: str) -> None:
    a = verdict(tmp_path, table(gpu="NVIDIA H100 80GB HBM3", hosts=3, per_host=8, busbw=COLLAPSE, marks=marks))
    d = a.decision
    assert (d.verdict.value, d.certainty) == ("degraded", "possible")
    f = next(f for f in a.findings if f.kind == "slow_link")
    assert f.data["floor_gbs"] == 10.0 and f.data["best_busbw"] == 5.3 and "transport" in f.message
    assert "NCCL_DEBUG=INFO" in f.hint


@pytest.mark.parametrize("gpu,bw,want", [
    ("NVIDIA H100 80GB HBM3", 40.0, "healthy"),  # healthy multi-node H100 sweep
    ("Tesla V100-SXM2-32GB", 6.0, "healthy"),  # over its 5 GB/s class floor
    ("Tesla V100-SXM2-32GB", 2.0, "degraded"),
    ("NVIDIA A100-PCIE-40GB", 0.8, "healthy"),  # PCIe GPUs: any network is sane for them, no floor
    ("Tesla T4", 0.5, "healthy"),
])
def test_table_alone_floor_by_gpu_class(tmp_path: Path, gpu: str, bw: float, want: str) -> None:
    sizes = {s: bw for s in (64 << 20, 256 << 20, 1 << 30)}
    assert verdict(tmp_path, table(gpu=gpu, hosts=2, per_host=8, busbw=sizes)).decision.verdict.value == want


def test_one_node_table_alone_keeps_its_nvlink_floor_only(tmp_path: Path) -> None:
    sizes = {s: 180.0 for s in (64 << 20, 256 << 20, 1 << 30)}  # one H100 node, healthy NVLink busbw
    assert verdict(tmp_path, table(gpu="NVIDIA H100 80GB HBM3", hosts=1, per_host=8, busbw=sizes)).decision.verdict.value \
        == "healthy"


def test_a_sweep_peaking_at_its_largest_sizes_is_not_judged_by_a_dip_before(tmp_path: Path) -> None:
    sizes = {32 << 20: 4.0, 64 << 20: 4.5, 128 << 20: 9.0, 256 << 20: 30.0, 1 << 30: 45.0}
    assert verdict(tmp_path, table(gpu="NVIDIA H100 80GB HBM3", hosts=2, per_host=8, busbw=sizes)).decision.verdict.value \
        == "healthy"


def nic_list_log(nics: int, busbw: float) -> str:
    """Two A100 SXM nodes, NCCL lines reduced to the IB NIC list (no channel, no 'Using network' line)."""
    text = table(gpu="NVIDIA A100-SXM4-80GB", hosts=2, per_host=8, busbw={8 << 30: busbw})
    listed = " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(nics))
    nccl = [f"cn-{h}:{7000 + 8 * h}:{7000 + 8 * h} [0] NCCL INFO NET/IB : Using {listed} ; OOB ib0:10.1.0.{h}<0>"
            for h in range(2)]
    lines = text.splitlines()
    return "\n".join(lines[:18] + nccl + lines[18:]) + "\n"


@pytest.mark.parametrize("nics,bw,want", [(8, 49.0, "degraded"), (8, 90.0, "healthy"), (1, 20.0, "healthy"),
                                          (4, 30.0, "degraded")])
def test_the_listed_nics_set_the_floor_without_channel_lines(tmp_path: Path, nics: int, bw: float, want: str) -> None:
    a = verdict(tmp_path, nic_list_log(nics, bw))
    assert a.decision.verdict.value == want
    if want == "degraded":
        f = next(f for f in a.findings if f.kind == "slow_link")
        assert (f.data["links"], a.decision.certainty) == (nics, "likely")
        assert "one NIC at a time" in f.hint
