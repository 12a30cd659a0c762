"""Settings that are legal but often costly: what they do and what to do instead.

The config detector notes them when a run sets them; ``ncclscope doctor`` explains them in the
environment it checks. NOTES: a value that switches a transport off; FORCED: a variable that takes a
per-collective choice away from NCCL.
"""
from __future__ import annotations

NOTES: dict[str, tuple[str, str, str]] = {
    # name: (condition value, message, hint)
    "NCCL_P2P_DISABLE": ("1", ("P2P (NVLink / PCIe peer access) is disabled by the environment: intra-node "
                              "traffic goes through shared memory or the network"),
                         "Unset NCCL_P2P_DISABLE unless P2P is broken on this machine; NVLink is several times faster."),
    "NCCL_SHM_DISABLE": ("1", "shared-memory transport is disabled by the environment",
                         "Unset NCCL_SHM_DISABLE unless SHM is broken (e.g. a tiny /dev/shm in a container)."),
    "NCCL_IB_DISABLE": ("1", "InfiniBand is disabled by the environment: inter-node traffic uses TCP sockets",
                        "Unset NCCL_IB_DISABLE on a machine with InfiniBand / RoCE."),
    "NCCL_NET_GDR_LEVEL": ("0", "GPU Direct RDMA is disabled", "Unset NCCL_NET_GDR_LEVEL unless GDR is broken."),
}
FORCED: dict[str, str] = {
    "NCCL_ALGO": "the collective algorithm is forced: NCCL cannot pick per size and some collectives have no "
                 "implementation in it",
    "NCCL_PROTO": "the protocol is forced: small messages lose LL's latency or large ones Simple's bandwidth",
}
