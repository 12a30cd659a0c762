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

- Between nodes over sockets with weaker signs only: NCCL could not look for an RDMA device (``Failed to open
  libibverbs.so``: an image without rdma-core), or the nodes hold eight GPUs or more each (servers of that size are
  built with RDMA NICs): possible. ``NET/IB : No device found`` alone is none: hosts without RDMA print it too.
- Between nodes over IB-verbs NICs without GPUDirect RDMA: the network's channel lines carry no ``/GDRDMA`` (or NCCL
  says ``GPU Direct RDMA Disabled``) on nodes built for it (HGX-class GPUs, one NIC a GPU or more): every byte is
  staged through host memory. Possible; likely where ``NCCL_NET_GDR_LEVEL=LOC`` turns it off.
- Between GPUs of one node over shared memory where each process sees only its own GPU (every rank's ``cudaDev 0``
  on distinct bus ids: ``--gpus-per-task``, one ``CUDA_VISIBLE_DEVICES`` a process): P2P needs both GPUs visible to
  the process, so NCCL cannot use it whatever the link. Possible (likely where the GPUs have NVLink).

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
    rdma_absent: tuple[str, ...] = ()  # NCCL could not look for an RDMA device, one phrase each
    per_node: int = 0  # GPUs (ranks) on each node, 0 when not known
    gdr: bool | None = None  # GPUDirect RDMA on the network's channels: True, False (none with /GDRDMA), None: unknown
    gdr_signs: tuple[str, ...] = ()  # why the nodes are built for GPUDirect RDMA
    own_gpu_only: bool = False  # the ranks of one node each see only their own GPU (cudaDev 0, distinct bus ids)


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
    if f.nnodes >= 2 and f.network == "Socket" and (f.ib_signs or _on(f, "NCCL_IB_DISABLE") or _weak_rdma(f)
                                                    or f.settings.get("NCCL_NET", "").lower() == "socket"):
        return _socket_between_nodes(f)
    if f.nnodes >= 2 and f.network == "IB" and f.gdr is False and (f.gdr_signs or _gdr_off_setting(f)):
        return _no_gdr(f)
    shm = any(t.startswith("SHM") for t in f.intra)
    if f.nnodes == 1 and f.nvlink_signs and (shm or _on(f, "NCCL_P2P_DISABLE")):
        return _shm_within_node(f)
    if f.nnodes == 1 and f.own_gpu_only and shm:
        return _own_gpu_only(f)
    return None


MANY_GPUS = 8  # GPUs a node from which a server is one built with RDMA NICs


def _weak_rdma(f: PathFacts) -> tuple[str, ...]:
    signs = f.rdma_absent
    if f.per_node >= MANY_GPUS:
        signs += (f"the nodes hold {f.per_node} GPUs each, servers built with RDMA NICs",)
    return signs


def _gdr_off_setting(f: PathFacts) -> str | None:
    level = f.settings.get("NCCL_NET_GDR_LEVEL", "").strip().upper()
    if level in ("LOC", "0"):
        return f"NCCL_NET_GDR_LEVEL={f.settings['NCCL_NET_GDR_LEVEL']}"
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
    why = ("; ".join(f.ib_signs) if f.ib_signs else f"{setting} keeps NCCL off the RDMA NICs" if setting else
           "; ".join(_weak_rdma(f)) + "; TCP sockets carry every byte between the nodes")
    if not f.ib_signs and setting is None:
        fix += (" If the nodes have no RDMA NIC at all, sockets are this network's rate: a faster interconnect, or "
                "fewer nodes, is the only way up.")
    return SlowPath("NET/Socket", "InfiniBand / RoCE", setting, fix, level, why)


def _no_gdr(f: PathFacts) -> SlowPath:
    setting = _gdr_off_setting(f)
    fix = ("Let the NICs read and write GPU memory directly: load nvidia-peermem (nv_peer_mem) on every node "
           "(`lsmod | grep peermem`), and where NCCL judges GPU and NIC too far apart (VMs whose PCI topology is "
           "virtual) set NCCL_NET_GDR_LEVEL=SYS or give NCCL the VM's topology file (NCCL_TOPO_FILE); the channel "
           "lines then end in /GDRDMA.")
    if setting is not None:
        fix = f"Unset {setting.split('=', 1)[0]} (it turns GPUDirect RDMA off). " + fix
    why = "; ".join(f.gdr_signs) or f"{setting} turns GPUDirect RDMA off"
    return SlowPath("NET/IB without GPUDirect RDMA", "GPUDirect RDMA (no /GDRDMA on the network's channels: every "
                    "byte is staged through host memory)",
                    setting, fix, "likely" if setting else "possible", why)


def _own_gpu_only(f: PathFacts) -> SlowPath:
    fix = ("Let every process of a node see all its GPUs and pick its own by local rank: Slurm's --gpus-per-node (or "
           "--gpu-bind=none) instead of --gpus-per-task, one CUDA_VISIBLE_DEVICES for the whole node; NCCL then "
           "connects the GPUs with P2P (NVLink or PCIe) instead of shared memory through the host.")
    why = "every rank of the node reports cudaDev 0 on its own bus id: each process sees only its own GPU, so P2P "\
        "between them is impossible"
    if f.nvlink_signs:
        why += "; " + "; ".join(f.nvlink_signs)
    return SlowPath("SHM", "P2P between the GPUs", None, fix, "likely" if f.nvlink_sure else "possible", why)


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
