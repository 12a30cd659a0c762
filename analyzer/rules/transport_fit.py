"""A slower path than the hardware offers: a run that works, slowly (degraded).

- Between nodes over NCCL's socket transport (``NET/Socket``, ``Using network Socket``) where InfiniBand or RoCE is
  there or was meant to be: NCCL looked for IB devices and found none while the job names them (``NCCL_IB_HCA``
  set, ``NCCL_IB_DISABLE=0``), the hosts talk over an IPoIB interface (``ib0``, ``ibp12s0``), NCCL listed IB NICs,
  or an RDMA network plugin was loaded: likely. With no such sign, only a setting that keeps NCCL off IB
  (``NCCL_IB_DISABLE=1``, ``NCCL_NET=Socket``) says so: possible (the cluster may have no RDMA fabric at all, and
  sockets alone are a network's normal path, not a fault).
- Between GPUs of one node over shared memory (``via SHM``) or with P2P turned off (``NCCL_P2P_DISABLE=1``) where the
  GPUs have NVLink: ``nvidia-smi topo -m`` shows ``NV#`` between them (likely), or the GPUs are SXM parts that only
  ship on NVLink boards (possible).

The setting behind it is named where the run sets one (``NCCL_IB_DISABLE=1``, ``NCCL_NET=Socket``,
``NCCL_P2P_DISABLE=1``, ``NCCL_P2P_LEVEL``, ``NCCL_SHM_...``), with the fix."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PathFacts:
    nnodes: int
    network: str | None  # the network NCCL uses between nodes ("IB", "Socket", a plugin), None when not printed
    ib_signs: tuple[str, ...]  # why InfiniBand / RoCE is there or was meant to be, one phrase each
    intra: tuple[str, ...]  # transports NCCL printed between GPUs of one node ("SHM", "P2P/IPC", ...)
    nvlink_signs: tuple[str, ...]  # why the GPUs of a node have NVLink, surest first
    nvlink_sure: bool  # a sign that shows the links themselves (topo matrix, NVLS), not only the GPU's model
    settings: Mapping[str, str]  # NCCL_ settings the run sets


@dataclass(frozen=True, slots=True)
class SlowPath:
    used: str  # the transport in use
    instead: str  # what the hardware offers
    setting: str | None  # the setting behind it, "NAME=value", when the run sets one
    fix: str
    level: str  # model.Certainty's value
    why: str


def slow_path(f: PathFacts) -> SlowPath | None:
    """The slower path of ``f``, or None."""
    if f.nnodes >= 2 and f.network == "Socket" and (f.ib_signs or _on(f, "NCCL_IB_DISABLE")
                                                    or f.settings.get("NCCL_NET", "").lower() == "socket"):
        return _socket_between_nodes(f)
    if f.nnodes == 1 and f.nvlink_signs and (any(t.startswith("SHM") for t in f.intra) or _on(f, "NCCL_P2P_DISABLE")):
        return _shm_within_node(f)
    return None


def _on(f: PathFacts, name: str) -> bool:
    return f.settings.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _socket_between_nodes(f: PathFacts) -> SlowPath:
    setting: str | None
    if _on(f, "NCCL_IB_DISABLE"):
        setting, fix = "NCCL_IB_DISABLE=1", "Unset NCCL_IB_DISABLE (or set it to 0) so that NCCL uses the RDMA NICs."
    elif f.settings.get("NCCL_NET", "").lower() == "socket":
        setting, fix = "NCCL_NET=Socket", "Unset NCCL_NET so that NCCL picks its IB transport."
    else:
        setting = f"NCCL_IB_HCA={f.settings['NCCL_IB_HCA']}" if "NCCL_IB_HCA" in f.settings else None
        fix = ("Make the RDMA devices visible to NCCL: in a container pass /dev/infiniband (--device, or the RDMA "
               "device plugin) with libibverbs / rdma-core installed; check `ibv_devinfo` on each node, that "
               "NCCL_IB_HCA names devices it lists, and that the IB ports are Active.")
    level = "likely" if f.ib_signs else "possible"
    why = "; ".join(f.ib_signs) if f.ib_signs else f"{setting} keeps NCCL off the RDMA NICs"
    return SlowPath("NET/Socket", "InfiniBand / RoCE", setting, fix, level, why)


def _shm_within_node(f: PathFacts) -> SlowPath:
    setting: str | None
    if _on(f, "NCCL_P2P_DISABLE"):
        setting, fix = "NCCL_P2P_DISABLE=1", "Unset NCCL_P2P_DISABLE so that GPUs of a node talk over NVLink (P2P)."
    elif "NCCL_P2P_LEVEL" in f.settings:
        setting = f"NCCL_P2P_LEVEL={f.settings['NCCL_P2P_LEVEL']}"
        fix = "Unset NCCL_P2P_LEVEL (NVLink is used at any level but LOC) and check that P2P is allowed between the GPUs."
    else:
        setting = None
        fix = ("P2P between the GPUs is unavailable to NCCL: run containers with --ipc=host (and the GPUs of one "
               "process tree), check `nvidia-smi topo -p2p r` and `nvidia-smi nvlink -s`, and on NVSwitch systems "
               "that nvidia-fabricmanager runs.")
    level = "likely" if f.nvlink_sure else "possible"
    used = "SHM" if any(t.startswith("SHM") for t in f.intra) else "no P2P"
    return SlowPath(used, "NVLink P2P", setting, fix, level, "; ".join(f.nvlink_signs))
