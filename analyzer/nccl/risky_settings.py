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


# settings the dashboard marks when they are set: name -> (value that warrants it, None for any; the warning)
SETTING_WARNINGS: dict[str, tuple[str | None, str]] = {
    "NCCL_ALGO": (None, "forces NCCL's algorithm choice; a wrong or unsupported value fails init or slows collectives"),
    "NCCL_PROTO": (None, "forces the protocol; LL/LL128 limits can cost bandwidth or fail on some platforms"),
    "NCCL_P2P_DISABLE": ("1", "GPU peer-to-peer is off: traffic goes through host memory (SHM) or the network"),
    "NCCL_SHM_DISABLE": ("1", "shared-memory transport is off: intra-node traffic may use the network"),
    "NCCL_IB_DISABLE": ("1", "InfiniBand is off: inter-node traffic uses TCP sockets"),
    "NCCL_NET_GDR_LEVEL": (None, "changes when GPUDirect RDMA is used"),
    "NCCL_SOCKET_IFNAME": (None, "pins the socket interface; a wrong name hangs init or uses a slow link"),
    "NCCL_MAX_NCHANNELS": (None, "caps channels; low values cap bandwidth"),
    "NCCL_MIN_NCHANNELS": (None, "forces a channel count"),
    "NCCL_DEBUG": ("TRACE", "TRACE logging slows every collective"),
    "NCCL_BLOCKING_WAIT": ("1", "deprecated; use TORCH_NCCL_BLOCKING_WAIT"),
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": ("0", "errors and timeouts will not abort the job: hangs last forever"),
    "NCCL_ASYNC_ERROR_HANDLING": ("0", "errors and timeouts will not abort the job: hangs last forever"),
    "NCCL_LAUNCH_MODE": ("GROUP", "group launch mode serialises kernel launches"),
    "NCCL_CUMEM_ENABLE": ("0", "cuMem off: older memory path"),
    "NCCL_CROSS_NIC": (None, "changes NIC pairing across nodes"),
}
