"""Tuning advice from a sweep: measured busbw against what the link class should give.

Expectations are for large messages (the busbw plateau, 64 MB and up); the numbers are rough
floors, not peaks. NVLink: on 2 x H200 (NV18) torch all_reduce reached 284 GB/s at 128 MB and 314 GB/s
at 512 MB, and NCCL's tuning table estimates 360 GB/s (docs/doctor-perf.md), so
anything under 100 GB/s at 256 MB is wrong. PCIe Gen4/5 x16 gives ~20 GB/s; TCP sockets ~1 GB/s.
Scores (what was measured) are kept apart from thresholds (what is expected), so both can be tuned.
"""
from __future__ import annotations

from collections.abc import Mapping

from ..doctor.checks import Status, explain_settings
from .table import OpResult

PLATEAU_BYTES = 64 << 20
# link class: (floor GB/s, typical GB/s, words)
EXPECTED: dict[str, tuple[float, float, str]] = {
    "nvlink": (100.0, 300.0, "NVLink"),
    "pcie": (8.0, 20.0, "PCIe"),
    "network": (5.0, 20.0, "the network (InfiniBand/RoCE)"),
    "socket": (0.3, 1.0, "TCP sockets"),
    "gloo": (0.05, 1.0, "gloo (CPU tensors over TCP)"),
}


def link_from_topology(slowest: str | None) -> str | None:
    """Map ``TopoMatrix.slowest_gpu_link()`` to an expectation class."""
    if slowest is None:
        return None
    return "nvlink" if slowest == "nvlink" else "pcie"


def plateau(res: OpResult) -> tuple[int, float] | None:
    """(size, busbw) of the largest message measured."""
    if not res.rows:
        return None
    r = max(res.rows, key=lambda r: r.size)
    return r.size, r.busbw


def sweep_advice(results: list[OpResult], link: str | None, env: Mapping[str, str] | None = None,
                 expected: Mapping[str, tuple[float, float, str]] = EXPECTED) -> list[str]:
    out: list[str] = []
    for res in results:
        if res.wrong:
            out.append(f"{res.op}: {res.wrong} wrong element(s) after the collective: results are corrupted. "
                       "Check the GPUs (nvidia-smi -q -d ECC), the driver, and NCCL_P2P_LEVEL / NCCL_P2P_DISABLE.")
    largest = max((p[0] for r in results if (p := plateau(r))), default=0)
    if results and largest < PLATEAU_BYTES:
        out.append(f"the sweep stops at {_human(largest)}: busbw only reaches its plateau above ~64 MB; "
                   "rerun with --max-bytes 256M to compare with the link's bandwidth.")
    if link is not None and link in expected and largest >= PLATEAU_BYTES:
        floor, typical, words = expected[link]
        for res in results:
            p = plateau(res)
            if p is None or res.nranks < 2:
                continue
            size, busbw = p
            if busbw < floor:
                out.append(f"{res.op}: busbw {busbw:.1f} GB/s at {_human(size)} is far below {words} "
                           f"(expect > {floor:g} GB/s, typically ~{typical:g})" + _why(link, env))
    if env:
        for row in explain_settings(dict(env)):
            if row.status is Status.WARN and row.name in ("NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_DISABLE",
                                                           "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_BUFFSIZE",
                                                           "NCCL_NET_GDR_LEVEL", "NCCL_MAX_NCHANNELS",
                                                           "NCCL_NSOCKS_PERTHREAD", "NCCL_SOCKET_NTHREADS",
                                                           "NCCL_DEBUG"):
                out.append(f"{row.name}={row.value} was set for this sweep: {row.note}")
    return list(dict.fromkeys(out))


def _why(link: str, env: Mapping[str, str] | None) -> str:
    env = env or {}
    if link == "nvlink":
        if env.get("NCCL_P2P_DISABLE", "").strip() == "1":
            return ": NCCL_P2P_DISABLE=1 keeps NCCL off NVLink; unset it."
        return (": check that NCCL uses P2P over NVLink (NCCL_DEBUG=INFO prints 'via P2P/CUMEM' or 'via P2P/IPC'), "
                "that NCCL_P2P_LEVEL / NCCL_ALGO / NCCL_PROTO are unset, and that nothing else runs on the GPUs.")
    if link == "pcie":
        return (": check ACS / IOMMU settings (P2P through the root complex is slow or off), "
                "nvidia-smi topo -m, and the PCIe generation and width (nvidia-smi -q | grep -A2 'Link Width').")
    if link in ("network", "socket"):
        return (": check NCCL_SOCKET_IFNAME / NCCL_IB_HCA (ncclscope doctor), that IB is used (NCCL_DEBUG=INFO "
                "prints 'NET/IB'), and GPU Direct RDMA.")
    return "."


def _human(n: int) -> str:
    for unit, k in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= k:
            return f"{n / k:g} {unit}"
    return f"{n} B"
