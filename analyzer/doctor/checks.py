"""Doctor checks: pure functions ``Facts -> list[Check]``; nothing here touches the machine.

Every check says OK, WARN, FAIL or SKIPPED and, when skipped, why. ``run_checks`` runs them all
(one failing check becomes a FAIL of its own instead of stopping the others).
"""
from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..nccl.risky_settings import FORCED, NOTES
from ..sources.nvidia_smi import TopoMatrix, link_class, parse_gpu_list, parse_smi_banner, parse_topo_matrix
from ..nccl import envvars
from .facts import Facts, Iface


class Status(str, enum.Enum):
    OK = "OK"
    WARN = "WARN"
    FAIL = "FAIL"
    SKIPPED = "SKIPPED"

    @property
    def order(self) -> int:
        return ["SKIPPED", "OK", "WARN", "FAIL"].index(self.value)


@dataclass(frozen=True, slots=True)
class Check:
    id: str  # stable key: "torch", "nccl.library", "env.NCCL_ALGO", ...
    title: str
    status: Status
    message: str
    advice: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "status": self.status.value, "message": self.message,
                "advice": list(self.advice), "data": self.data}


@dataclass(frozen=True, slots=True)
class SettingRow:
    """One NCCL_/TORCH_NCCL_/TORCH_FR_ variable of the environment, explained."""

    name: str
    value: str
    default: str | None
    meaning: str | None
    status: Status
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "default": self.default, "meaning": self.meaning,
                "status": self.status.value, "note": self.note}


def _version_tuple(v: str | None) -> tuple[int, ...]:
    if not v:
        return ()
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


# --- versions -------------------------------------------------------------------------------------------

def check_torch(f: Facts) -> list[Check]:
    t = f.torch
    if t is None:
        return [Check("torch", "PyTorch", Status.FAIL, f"torch cannot be imported ({f.torch_error})",
                      ("Install torch in this environment (pip install torch).",))]
    out = [Check("torch", "PyTorch", Status.OK, f"torch {t.version}", data={"version": t.version})]
    if t.cuda is None:
        out.append(Check("torch.cuda", "CUDA in torch", Status.SKIPPED,
                         "torch built without CUDA: no NCCL backend here (gloo only)",
                         data={"gloo": t.gloo_available}))
    elif t.error:
        out.append(Check("torch.cuda", "CUDA in torch", Status.FAIL, f"torch built for CUDA {t.cuda}, but "
                         f"CUDA fails: {t.error}", ("Check the driver: nvidia-smi must work in this environment.",)))
    elif not t.cuda_available:
        out.append(Check("torch.cuda", "CUDA in torch", Status.WARN, f"torch built for CUDA {t.cuda}, but no GPU "
                         "is visible (driver missing, CUDA_VISIBLE_DEVICES empty, or no GPU)",
                         data={"CUDA_VISIBLE_DEVICES": f.env.get("CUDA_VISIBLE_DEVICES")}))
    else:
        out.append(Check("torch.cuda", "CUDA in torch", Status.OK,
                         f"CUDA {t.cuda}, {t.device_count} GPU(s): {', '.join(dict.fromkeys(t.devices))}",
                         data={"cuda": t.cuda, "devices": list(t.devices)}))
    if t.cuda is None:
        out.append(Check("nccl.torch", "NCCL in torch", Status.SKIPPED, "torch built without CUDA"))
    elif t.nccl is None:
        why = "no GPU visible, so torch.cuda.nccl.version() was not asked" if not t.cuda_available else \
            "torch.cuda.nccl.version() gave nothing"
        out.append(Check("nccl.torch", "NCCL in torch", Status.SKIPPED, why))
    else:
        out.append(Check("nccl.torch", "NCCL in torch", Status.OK, f"NCCL {t.nccl} (torch.cuda.nccl.version())",
                         data={"version": t.nccl}))
    return out


def check_nccl_library(f: Facts) -> list[Check]:
    libs = f.libnccl
    extra = []
    if f.nccl_config:
        extra.append(f"nccl-config: {f.nccl_config}")
    if f.dpkg_nccl:
        extra.extend(f"dpkg: {x}" for x in f.dpkg_nccl)
    data = {"libraries": [{"path": x.path, "version": x.version, "source": x.source} for x in libs],
            "nccl_config": f.nccl_config, "dpkg": f.dpkg_nccl}
    if not libs:
        why = "no libnccl found (torch wheel's nvidia packages, ldconfig -p, LD_LIBRARY_PATH)"
        if f.torch is not None and f.torch.cuda is None:
            why += "; torch is built without CUDA so none is needed"
        return [Check("nccl.library", "libnccl on disk", Status.SKIPPED, why + ("; " + "; ".join(extra) if extra else ""),
                      data=data)]
    listing = "; ".join(f"{x.version or '?'} at {x.path} ({x.source})" for x in libs)
    torch_nccl = f.torch.nccl if f.torch else None
    overriding = [x for x in libs if x.source == "LD_LIBRARY_PATH" and x.version and torch_nccl
                  and _version_tuple(x.version) != _version_tuple(torch_nccl)]
    if overriding:
        return [Check("nccl.library", "libnccl on disk", Status.WARN,
                      f"torch runs NCCL {torch_nccl} but LD_LIBRARY_PATH holds libnccl {overriding[0].version} "
                      f"({overriding[0].path}), which the loader may pick first: {listing}",
                      (("Make sure every node loads the same libnccl; remove the other one from LD_LIBRARY_PATH "
                       "unless you mean to use it."),), data)]
    versions = {x.version for x in libs if x.version}
    status = Status.OK if len(versions) <= 1 else Status.WARN
    msg = listing + ("; " + "; ".join(extra) if extra else "")
    advice = (("Several libnccl versions are installed: check which one each process loads "
              "(NCCL_DEBUG=VERSION prints it)."),) if status is Status.WARN else ()
    return [Check("nccl.library", "libnccl on disk", status, msg, advice, data)]


def check_version_compat(f: Facts) -> list[Check]:
    out = []
    t = f.torch
    banner = parse_smi_banner(f.smi_banner or "")
    if t is None or t.cuda is None:
        out.append(Check("compat.cuda_driver", "CUDA runtime vs driver", Status.SKIPPED, "torch built without CUDA"
                         if t is not None else "torch not importable"))
    elif "cuda" not in banner:
        out.append(Check("compat.cuda_driver", "CUDA runtime vs driver", Status.SKIPPED,
                         "no nvidia-smi" if not f.nvidia_smi else "nvidia-smi did not print a CUDA version"))
    else:
        built, drv = _version_tuple(t.cuda), _version_tuple(banner["cuda"])
        msg = f"torch (and its NCCL) built for CUDA {t.cuda}; driver {banner.get('driver', '?')} supports up to CUDA {banner['cuda']}"
        if built[:1] > drv[:1]:
            out.append(Check("compat.cuda_driver", "CUDA runtime vs driver", Status.FAIL, msg + ": the driver is too old "
                             "for this CUDA major version (CUDA fails with 'driver version is insufficient')",
                             ("Upgrade the NVIDIA driver, or install a torch build for an older CUDA.",)))
        elif built[:2] > drv[:2]:
            out.append(Check("compat.cuda_driver", "CUDA runtime vs driver", Status.WARN, msg + ": runs only through CUDA "
                             "minor-version compatibility (PTX JIT and some features unavailable)",
                             ("Upgrade the driver to one that supports CUDA " + t.cuda + ".",)))
        else:
            out.append(Check("compat.cuda_driver", "CUDA runtime vs driver", Status.OK, msg))
    nccl = (t.nccl if t else None) or next((x.version for x in f.libnccl if x.version), None)
    v = _version_tuple(nccl)
    if not v:
        out.append(Check("compat.nccl_cumem", "NCCL known issues", Status.SKIPPED, "NCCL version unknown"))
    elif v[:2] in ((2, 19), (2, 20)) and f.env.get("NCCL_CUMEM_ENABLE", "").strip() != "0":
        out.append(Check(
            "compat.nccl_cumem", "NCCL known issues", Status.WARN,
            f"NCCL {nccl}: 2.19 turned cuMem allocation on by default (NCCL env docs, NCCL_CUMEM_ENABLE); "
            "reported with it: deadlocks during connection setup (NVIDIA/nccl#1116) and extra memory during "
            "CUDA-graph capture (NVIDIA/nccl#1234, vllm-project/vllm#5091)",
            (("Upgrade NCCL (newer torch wheels ship 2.21+), or set NCCL_CUMEM_ENABLE=0 if you see hangs at "
             "connection setup or memory growth under CUDA graphs."),), {"nccl": nccl}))
    else:
        out.append(Check("compat.nccl_cumem", "NCCL known issues", Status.OK, f"NCCL {nccl}: no known issue on file"))
    return out


# --- GPUs and links -------------------------------------------------------------------------------------

def check_gpus(f: Facts) -> list[Check]:
    if not f.nvidia_smi:
        return [Check("gpus", "GPUs (nvidia-smi -L)", Status.SKIPPED, "no nvidia-smi")]
    if f.smi_list is None:
        return [Check("gpus", "GPUs (nvidia-smi -L)", Status.FAIL, f"nvidia-smi fails: {f.smi_error}",
                      ("Fix the driver (nvidia-smi must work) before anything else.",))]
    gpus = parse_gpu_list(f.smi_list)
    names = ", ".join(dict.fromkeys(g.name for g in gpus))
    data = {"gpus": [{"index": g.index, "name": g.name, "uuid": g.uuid} for g in gpus]}
    if not gpus:
        return [Check("gpus", "GPUs (nvidia-smi -L)", Status.FAIL, "nvidia-smi lists no GPU", data=data)]
    t = f.torch
    if t is not None and t.cuda_available and t.device_count != len(gpus) and "CUDA_VISIBLE_DEVICES" not in f.env:
        return [Check("gpus", "GPUs (nvidia-smi -L)", Status.WARN,
                      f"nvidia-smi lists {len(gpus)} GPU(s) ({names}) but torch sees {t.device_count}", data=data)]
    return [Check("gpus", "GPUs (nvidia-smi -L)", Status.OK, f"{len(gpus)} GPU(s): {names}", data=data)]


def check_topology(f: Facts) -> list[Check]:
    if not f.nvidia_smi:
        return [Check("topology", "GPU links (nvidia-smi topo -m)", Status.SKIPPED, "no nvidia-smi")]
    topo = parse_topo_matrix(f.smi_topo or "")
    if topo is None:
        return [Check("topology", "GPU links (nvidia-smi topo -m)", Status.SKIPPED,
                      "nvidia-smi topo -m printed no matrix" + (f" ({f.smi_error})" if f.smi_error else ""))]
    return topology_checks(topo, f.env)


LINK_WORDS = {"nvlink": "NVLink", "pcie_switch": "PCIe switch (PIX/PXB)", "pcie_host_bridge": "PCIe host bridge (PHB)",
              "numa_node": "PCIe across host bridges (NODE)", "cross_numa": "PCIe across CPU sockets (SYS)"}


def topology_checks(topo: TopoMatrix, env: dict[str, str]) -> list[Check]:
    """Checks on a parsed matrix (kept apart so tests can feed sample matrices)."""
    out = []
    data = topo.to_json()
    slowest = topo.slowest_gpu_link()
    pairs = topo.gpu_pairs()
    if slowest is None:
        out.append(Check("topology", "GPU links (nvidia-smi topo -m)", Status.OK, f"{len(topo.gpus)} GPU, no peer",
                         data=data))
    else:
        counts: dict[str, int] = {}
        for c in pairs.values():
            counts[c] = counts.get(c, 0) + 1
        summary = ", ".join(f"{n} pair(s) {c}" for c, n in sorted(counts.items()))
        msg = f"{len(topo.gpus)} GPUs; slowest GPU-GPU link: {LINK_WORDS.get(slowest, slowest)} ({summary})"
        advice: list[str] = []
        status = Status.OK
        if slowest == "cross_numa":
            status = Status.WARN
            advice.append("Some GPU pairs only talk across CPU sockets (SYS): rings over all GPUs are bound by that "
                          "path; expect PCIe-class busbw (~10-20 GB/s) at best. Keep tightly coupled groups (TP) "
                          "within a socket.")
        elif slowest in ("pcie_host_bridge", "numa_node", "pcie_switch"):
            advice.append("GPUs talk over PCIe: expect ~20 GB/s busbw, not NVLink's hundreds.")
        if slowest != "nvlink" and any(link_class(c) == "nvlink" for c in pairs.values()):
            advice.append("Only some pairs have NVLink: collectives over all GPUs run at the speed of the PCIe pairs.")
        if env.get("NCCL_P2P_DISABLE", "").strip() == "1" and any(link_class(c) == "nvlink" for c in pairs.values()):
            status = Status.WARN
            advice.append("NCCL_P2P_DISABLE=1 on a machine with NVLink: NCCL will not use NVLink. Unset it.")
        out.append(Check("topology", "GPU links (nvidia-smi topo -m)", status, msg, tuple(advice), data))
    if topo.nics:
        far = {g: topo.nearest_nics(g) for g in topo.gpus}
        far_gpus = [g for g in topo.gpus
                    if all(link_class(topo.links.get((g, n), "?")) in ("cross_numa", "numa_node", "pcie_host_bridge")
                           for n in topo.nics)]
        if far_gpus:
            out.append(Check("topology.nic", "GPU-NIC affinity", Status.WARN,
                             f"{', '.join(far_gpus)} have no NIC under the same PCIe switch (GPU Direct RDMA limited)",
                             (("Inter-node traffic of those GPUs crosses the CPU; NCCL uses PXN through an NVLink peer "
                              "when it can (leave NCCL_PXN_DISABLE unset)."),), {"nearest": far}))
        else:
            out.append(Check("topology.nic", "GPU-NIC affinity", Status.OK,
                             "every GPU has a NIC under its PCIe switch: " +
                             ", ".join(f"{g}->{'/'.join(n)}" for g, n in far.items()), data={"nearest": far}))
    return out


# --- network --------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class IfSpec:
    """NCCL's interface list syntax (``^`` excludes, ``=`` exact, else prefix; ``name:port`` for IB)."""

    exclude: bool
    exact: bool
    items: tuple[tuple[str, int | None], ...]

    def matches(self, name: str, port: int | None = None) -> bool:
        hit = False
        for prefix, p in self.items:
            ok = (name == prefix) if self.exact else name.startswith(prefix)
            if ok and (p is None or port is None or p == port):
                hit = True
                break
        return hit != self.exclude


def parse_if_spec(spec: str) -> IfSpec:
    s = spec.strip()
    exclude = s.startswith("^")
    if exclude:
        s = s[1:]
    exact = s.startswith("=")
    if exact:
        s = s[1:]
    items = []
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, port = part.partition(":")
        items.append((name, int(port) if port.isdigit() else None))
    return IfSpec(exclude, exact, tuple(items))


def nccl_socket_candidates(ifaces: list[Iface], spec: str | None, addresses_known: bool = True) -> list[str]:
    """Interfaces NCCL's socket code would consider, in its order.

    NCCL walks ``getifaddrs``, so only interfaces with an IP address count (when ``addresses_known``).
    With a spec: those matching it. Without: ``ib*`` first, then all but ``docker*`` and ``lo``, then
    ``docker*``, then ``lo``.
    """
    names = [i.name for i in ifaces if i.addresses or not addresses_known]
    if spec:
        s = parse_if_spec(spec)
        return [n for n in names if s.matches(n)]
    for pred in (lambda n: n.startswith("ib"), lambda n: not n.startswith(("docker", "lo")),
                 lambda n: n.startswith("docker"), lambda n: n.startswith("lo")):
        hit = [n for n in names if pred(n)]
        if hit:
            return hit
    return []


def check_network(f: Facts) -> list[Check]:
    out = []
    env = f.env
    spec = env.get("NCCL_SOCKET_IFNAME")
    by_name = {i.name: i for i in f.ifaces}
    data = {"interfaces": [{"name": i.name, "index": i.index, "state": i.operstate, "speed_mbps": i.speed_mbps,
                            "addresses": list(i.addresses)} for i in f.ifaces]}
    if not f.ifaces:
        out.append(Check("net.socket", "Socket interface", Status.SKIPPED, "no network interface found", data=data))
    else:
        cands = nccl_socket_candidates(f.ifaces, spec, f.addresses_known)
        desc = ", ".join(_iface_words(by_name[c]) for c in cands)
        multi_node = _multi_node(env)
        if spec and not cands:
            out.append(Check("net.socket", "Socket interface", Status.FAIL,
                             f"NCCL_SOCKET_IFNAME={spec} matches no interface with an address "
                             f"({', '.join(_iface_words(i) for i in f.ifaces)}): NCCL init fails "
                             "('Bootstrap : no socket interface found')",
                             (("Set NCCL_SOCKET_IFNAME to an interface listed here (prefix match; '=' for exact, "
                              "'^' to exclude)."),), data))
        elif cands and all(c.startswith("lo") for c in cands) and multi_node:
            out.append(Check("net.socket", "Socket interface", Status.FAIL,
                             f"only loopback would be used ({desc}) but the job spans nodes "
                             f"(WORLD_SIZE={env.get('WORLD_SIZE')}, LOCAL_WORLD_SIZE={env.get('LOCAL_WORLD_SIZE')})",
                             ("Point NCCL_SOCKET_IFNAME at the interface that reaches the other nodes.",), data))
        elif [c for c in cands if by_name[c].operstate == "down"]:
            down = [c for c in cands if by_name[c].operstate == "down"]
            out.append(Check("net.socket", "Socket interface", Status.WARN,
                             f"NCCL would consider {desc}; {', '.join(down)} is down",
                             ("Exclude down interfaces or bring them up.",), data))
        else:
            how = f"NCCL_SOCKET_IFNAME={spec}" if spec else "NCCL_SOCKET_IFNAME unset (NCCL's own order)"
            out.append(Check("net.socket", "Socket interface", Status.OK, f"{how}: {desc}", data=data))
    # InfiniBand / RoCE
    ports = f.ib_ports
    hca = env.get("NCCL_IB_HCA")
    ib_disabled = env.get("NCCL_IB_DISABLE", "").strip() == "1"
    pdata = {"ib_ports": [{"device": p.device, "port": p.port, "state": p.state, "rate": p.rate,
                           "link_layer": p.link_layer} for p in ports]}
    if not ports:
        msg = "no /sys/class/infiniband devices: inter-node traffic goes over TCP sockets"
        if hca:
            out.append(Check("net.ib", "InfiniBand / RoCE", Status.WARN, f"NCCL_IB_HCA={hca} but " + msg,
                             data=pdata))
        else:
            out.append(Check("net.ib", "InfiniBand / RoCE", Status.SKIPPED, msg, data=pdata))
        return out
    listing = ", ".join(f"{p.device}:{p.port} {p.state.split(':')[-1].strip()} {p.rate} {p.link_layer}" for p in ports)
    if ib_disabled:
        out.append(Check("net.ib", "InfiniBand / RoCE", Status.WARN, f"NCCL_IB_DISABLE=1 with IB/RoCE ports present "
                         f"({listing}): inter-node traffic uses TCP sockets",
                         ("Unset NCCL_IB_DISABLE unless IB is broken.",), pdata))
        return out
    chosen = [p for p in ports if parse_if_spec(hca).matches(p.device, p.port)] if hca else ports
    active = [p for p in chosen if "ACTIVE" in p.state.upper()]
    if hca and not chosen:
        out.append(Check("net.ib", "InfiniBand / RoCE", Status.FAIL,
                         f"NCCL_IB_HCA={hca} matches none of the ports ({listing}): NCCL falls back to sockets",
                         ("Fix NCCL_IB_HCA (prefix match; '=' exact; '^' exclude; ':port').",), pdata))
    elif not active:
        out.append(Check("net.ib", "InfiniBand / RoCE", Status.WARN, f"no ACTIVE port among those NCCL would use "
                         f"({listing})", ("Check the cables / subnet manager (ibstat).",), pdata))
    else:
        inactive = [p for p in chosen if p not in active]
        status = Status.WARN if inactive else Status.OK
        out.append(Check("net.ib", "InfiniBand / RoCE", status,
                         f"{len(active)} active port(s) NCCL may use: {listing}" +
                         (f"; {len(inactive)} selected but not active" if inactive else ""), data=pdata))
    return out


def _iface_words(i: Iface) -> str:
    bits = [i.operstate or "?"]
    if i.speed_mbps:
        bits.append(f"{i.speed_mbps / 1000:g} Gb/s")
    if i.addresses:
        bits.append(",".join(i.addresses))
    return f"{i.name} ({' '.join(bits)})"


def _int_env(env: dict[str, str], name: str) -> int | None:
    try:
        return int(env[name])
    except (KeyError, ValueError):
        return None


def _multi_node(env: dict[str, str]) -> bool:
    ws, lws = _int_env(env, "WORLD_SIZE"), _int_env(env, "LOCAL_WORLD_SIZE")
    return ws is not None and lws is not None and ws > lws


# --- environment ----------------------------------------------------------------------------------------

def explain_settings(env: dict[str, str]) -> list[SettingRow]:
    """Every NCCL_/TORCH_NCCL_/TORCH_FR_ variable set, with meaning, default and a verdict."""
    rows = []
    for name in sorted(k for k in env if envvars.relevant(k)):
        value = env[name]
        default, meaning = envvars.describe(name)
        status, note = Status.OK, ""
        if meaning is None:
            typo = envvars.probable_typo(name)
            status = Status.WARN
            note = (f"unknown; probably a typo of {typo} (NCCL ignores unknown names)" if typo
                    else "not a name ncclscope knows (newer than this table, or a typo)")
            if name.startswith("TORCH_") and not typo:
                status, note = Status.OK, "not a name ncclscope knows"
        else:
            risk = setting_risk(name, value, env)
            if risk:
                status, note = risk
        rows.append(SettingRow(name, value, default, meaning, status, note))
    return rows


def setting_risk(name: str, value: str, env: dict[str, str]) -> tuple[Status, str] | None:
    v = value.strip()
    if name in NOTES and v == NOTES[name][0]:
        return Status.WARN, NOTES[name][1] + ". " + NOTES[name][2]
    if name in FORCED:
        return Status.WARN, f"{FORCED[name]}. Unset {name} unless a measurement shows it helps."
    if name in ("NCCL_NSOCKS_PERTHREAD", "NCCL_SOCKET_NTHREADS"):
        a, b = _int_env(env, "NCCL_NSOCKS_PERTHREAD"), _int_env(env, "NCCL_SOCKET_NTHREADS")
        if a and b and a * b > 64:
            return Status.WARN, f"NCCL_NSOCKS_PERTHREAD x NCCL_SOCKET_NTHREADS = {a * b} exceeds NCCL's limit of 64"
    if name == "NCCL_DEBUG" and v.upper() in ("INFO", "TRACE"):
        return Status.WARN, (f"{v.upper()} logging costs time: about 10% on a 3.6 ms step with COLL lines "
                             "(measured, 2 x H200); TRACE much more. Use WARN in production.")
    if name == "NCCL_DEBUG_SUBSYS" and env.get("NCCL_DEBUG", "").upper() in ("INFO", "TRACE") and (
            "COLL" in v.upper() or v.upper() == "ALL"):
        return Status.WARN, "one line per collective per rank: large logs and overhead on short steps"
    if name == "NCCL_BUFFSIZE" and v.isdigit() and int(v) < 1 << 20:
        return Status.WARN, "small buffers: large messages will be slow (default 4 MiB)"
    if name == "NCCL_CHECK_POINTERS" and v == "1":
        return Status.WARN, "checks every call's pointers: slow, for debugging only"
    if name in ("TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT") and v == "1":
        return Status.WARN, ("wait() blocks the CPU thread until the collective ends: no CPU/GPU overlap; the "
                             "watchdog with TORCH_NCCL_ASYNC_ERROR_HANDLING is the usual way to catch timeouts")
    if name in ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING") and v == "0":
        return Status.WARN, "0: a timed-out or failed collective does not stop the job; hung ranks stay hung"
    if name == "TORCH_NCCL_ENABLE_MONITORING" and v == "0":
        return Status.WARN, "heartbeat monitor off: a watchdog stuck in a CUDA/NCCL call never kills the process"
    if name == "TORCH_NCCL_NAN_CHECK" and v == "1":
        return Status.WARN, "checks every input for NaN: slow, for debugging only"
    if name in ("NCCL_ASYNC_ERROR_HANDLING", "NCCL_BLOCKING_WAIT", "NCCL_DESYNC_DEBUG"):
        return Status.WARN, f"old name: torch 2.2+ reads TORCH_{name}"
    return None


def check_settings(f: Facts) -> list[Check]:
    rows = explain_settings(f.env)
    if not rows:
        return [Check("env.settings", "NCCL / TORCH_NCCL settings", Status.OK, "none set (NCCL's defaults)")]
    flagged = [r for r in rows if r.status is not Status.OK]
    status = Status.WARN if flagged else Status.OK
    msg = f"{len(rows)} set" + (f"; {len(flagged)} to look at: " + ", ".join(r.name for r in flagged) if flagged else "")
    return [Check("env.settings", "NCCL / TORCH_NCCL settings", status, msg,
                  tuple(f"{r.name}={r.value}: {r.note}" for r in flagged), {"settings": [r.to_json() for r in rows]})]


def check_launch_env(f: Facts) -> list[Check]:
    env = f.env
    names = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    present = {n: env[n] for n in names if n in env}
    if not present:
        return [Check("launch.env", "torchrun variables", Status.SKIPPED,
                      "not inside a launcher (RANK, WORLD_SIZE, MASTER_ADDR unset); torchrun sets them per rank")]
    problems: list[str] = []
    ints = {}
    for n in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT"):
        if n in env:
            try:
                ints[n] = int(env[n])
            except ValueError:
                problems.append(f"{n}={env[n]!r} is not an integer")
    r, ws, lr, lws = (ints.get(n) for n in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"))
    if ws is not None and ws < 1:
        problems.append(f"WORLD_SIZE={ws} must be >= 1")
    if r is not None and r < 0:
        problems.append(f"RANK={r} is negative")
    if r is not None and ws is not None and r >= ws:
        problems.append(f"RANK={r} is not below WORLD_SIZE={ws}")
    if lr is not None and lws is not None and not 0 <= lr < lws:
        problems.append(f"LOCAL_RANK={lr} is not in [0, LOCAL_WORLD_SIZE={lws})")
    if lws is not None and ws is not None and lws > ws:
        problems.append(f"LOCAL_WORLD_SIZE={lws} exceeds WORLD_SIZE={ws}")
    if lws is not None and ws is not None and lws > 0 and ws % lws:
        problems.append(f"WORLD_SIZE={ws} is not a multiple of LOCAL_WORLD_SIZE={lws} (uneven nodes)")
    if lr is not None and r is not None and lr > r:
        problems.append(f"LOCAL_RANK={lr} exceeds RANK={r}")
    port = ints.get("MASTER_PORT")
    if port is not None and not 0 < port < 65536:
        problems.append(f"MASTER_PORT={port} is not a TCP port")
    if ("RANK" in env or "WORLD_SIZE" in env) and "MASTER_ADDR" not in env:
        problems.append("RANK/WORLD_SIZE set but MASTER_ADDR unset: init_process_group(init_method='env://') fails")
    if "MASTER_ADDR" in env and "MASTER_PORT" not in env:
        problems.append("MASTER_ADDR set but MASTER_PORT unset: env:// rendezvous needs both")
    if "RANK" in env and "WORLD_SIZE" not in env or "WORLD_SIZE" in env and "RANK" not in env:
        problems.append("RANK and WORLD_SIZE must be set together")
    listing = " ".join(f"{k}={v}" for k, v in present.items())
    if problems:
        return [Check("launch.env", "torchrun variables", Status.FAIL, "; ".join(problems), (), {"env": present})]
    t = f.torch
    if lws is not None and t is not None and t.cuda_available and lws > t.device_count:
        return [Check("launch.env", "torchrun variables", Status.WARN,
                      f"{listing}: {lws} local ranks but {t.device_count} visible GPU(s); NCCL refuses two ranks "
                      "on one GPU ('Duplicate GPU detected')", ("Use --nproc_per_node <= the GPU count.",),
                      {"env": present})]
    return [Check("launch.env", "torchrun variables", Status.OK, listing, data={"env": present})]


def check_master(f: Facts) -> list[Check]:
    addr = f.env.get("MASTER_ADDR")
    if not addr:
        return [Check("launch.master", "MASTER_ADDR / MASTER_PORT", Status.SKIPPED, "MASTER_ADDR unset")]
    if f.master_resolve_error:
        return [Check("launch.master", "MASTER_ADDR / MASTER_PORT", Status.FAIL,
                      f"MASTER_ADDR={addr} does not resolve: {f.master_resolve_error}",
                      ("Use an address every node can resolve (an IP, or a name in DNS / /etc/hosts).",))]
    if f.master_resolved is None:
        return [Check("launch.master", "MASTER_ADDR / MASTER_PORT", Status.SKIPPED, "network probes turned off")]
    res = ", ".join(f.master_resolved)
    p = f.master_port
    if p is None:
        return [Check("launch.master", "MASTER_ADDR / MASTER_PORT", Status.OK, f"{addr} -> {res}")]
    data = {"resolved": list(f.master_resolved), "local": f.master_is_local, "probe": p.detail}
    rank = _int_env(f.env, "RANK")
    if f.master_is_local:
        if p.ok:
            return [Check("launch.master", "MASTER_ADDR / MASTER_PORT", Status.OK, f"{addr} -> {res} (this host); "
                          + p.detail, data=data)]
        if "in use" in p.detail and rank not in (None, 0):
            return [Check("launch.master", "MASTER_ADDR / MASTER_PORT", Status.OK, f"{addr} -> {res} (this host); "
                          f"{p.detail} (by rank 0's store, presumably)", data=data)]
        return [Check("launch.master", "MASTER_ADDR / MASTER_PORT", Status.WARN, f"{addr} -> {res} (this host); "
                      f"{p.detail}: a new job's rank 0 cannot start its TCPStore there (EADDRINUSE)",
                      ("Pick a free MASTER_PORT, or find the process holding it (ss -ltnp).",), data)]
    if p.ok:
        return [Check("launch.master", "MASTER_ADDR / MASTER_PORT", Status.OK, f"{addr} -> {res}; {p.detail}",
                      data=data)]
    return [Check("launch.master", "MASTER_ADDR / MASTER_PORT", Status.WARN, f"{addr} -> {res}; {p.detail} "
                  "(fine before rank 0 has started; a firewall if it persists while the job runs)", data=data)]


CHECKS: tuple[Callable[[Facts], list[Check]], ...] = (
    check_torch, check_nccl_library, check_version_compat, check_gpus, check_topology, check_network,
    check_settings, check_launch_env, check_master,
)


def run_checks(f: Facts, checks: tuple[Callable[[Facts], list[Check]], ...] = CHECKS) -> list[Check]:
    out: list[Check] = []
    for fn in checks:
        try:
            out.extend(fn(f))
        except Exception as e:  # noqa: BLE001 - one broken check must not hide the others
            out.append(Check(fn.__name__.removeprefix("check_"), fn.__name__, Status.FAIL,
                             f"check crashed: {type(e).__name__}: {e}"))
    return out


def overall(checks: list[Check]) -> Status:
    return max((c.status for c in checks), key=lambda s: s.order, default=Status.OK)


def advice_from_checks(checks: list[Check]) -> list[str]:
    seen: dict[str, None] = {}
    for c in sorted(checks, key=lambda c: -c.status.order):
        if c.status in (Status.FAIL, Status.WARN):
            for a in c.advice:
                seen.setdefault(a, None)
    return list(seen)
