"""Gather what the checks look at: the only module of ``ncclscope.doctor`` that touches the machine.

Everything here is best effort and bounded (subprocesses time out after a few seconds); a
missing tool or file is recorded as absent, never raised. The result is a plain ``Facts`` value
that the pure checks in ``checks.py`` read, so tests build ``Facts`` by hand.
"""
from __future__ import annotations

import errno
import glob
import ipaddress
import os
import re
import shutil
import socket
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

TIMEOUT_S = 5.0
LIBNCCL_RE = re.compile(r"libnccl\.so(?:\.(\d+(?:\.\d+)*))?$")


@dataclass(frozen=True, slots=True)
class Iface:
    name: str
    index: int | None = None
    operstate: str | None = None  # up, down, unknown
    speed_mbps: int | None = None  # None when the driver does not say (virtual, loopback)
    addresses: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class IbPort:
    device: str
    port: int
    state: str  # "4: ACTIVE"
    rate: str  # "400 Gb/sec (4X NDR)"
    link_layer: str  # InfiniBand, Ethernet


@dataclass(frozen=True, slots=True)
class LibNccl:
    path: str
    version: str | None
    source: str  # torch-wheel, ldconfig, LD_LIBRARY_PATH


@dataclass(frozen=True, slots=True)
class TorchInfo:
    version: str
    cuda: str | None  # torch.version.cuda; None: built without CUDA
    nccl: str | None  # torch.cuda.nccl.version() as "2.28.9"
    cuda_available: bool
    device_count: int
    devices: tuple[str, ...] = ()
    nccl_available: bool = False
    gloo_available: bool = False
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Probe:
    """Outcome of a network probe: ok, or the reason it failed."""

    ok: bool
    detail: str


@dataclass
class Facts:
    env: dict[str, str]
    hostname: str = ""
    torch: TorchInfo | None = None
    torch_error: str | None = None  # why torch could not be imported
    libnccl: list[LibNccl] = field(default_factory=list)
    nccl_config: str | None = None  # `nccl-config --version` output; None: no nccl-config
    dpkg_nccl: list[str] | None = None  # `dpkg -l` lines naming nccl; None: no dpkg
    nvidia_smi: str | None = None  # path; None: not installed
    smi_list: str | None = None
    smi_topo: str | None = None
    smi_banner: str | None = None
    smi_error: str | None = None
    ifaces: list[Iface] = field(default_factory=list)
    ib_ports: list[IbPort] = field(default_factory=list)
    local_addresses: tuple[str, ...] = ()
    addresses_known: bool = False  # `ip addr` ran, so an interface without addresses really has none
    master_resolved: tuple[str, ...] | None = None  # None: MASTER_ADDR unset
    master_resolve_error: str | None = None
    master_port: Probe | None = None  # bind probe (local master) or connect probe (remote)
    master_is_local: bool | None = None

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["env"] = {k: v for k, v in self.env.items() if _relevant_env(k)}
        return d


def _relevant_env(k: str) -> bool:
    return k.startswith(("NCCL_", "TORCH_NCCL_", "TORCH_FR_", "CUDA_VISIBLE")) or k in LAUNCH_VARS


LAUNCH_VARS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
               "NODE_RANK", "TORCHELASTIC_RUN_ID")


def _run(cmd: list[str]) -> tuple[int, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, errors="replace",
                           stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, str(e)
    return p.returncode, p.stdout + (p.stderr if p.returncode else "")


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text(errors="replace").strip()
    except OSError:
        return None


def gather_torch() -> tuple[TorchInfo | None, str | None]:
    try:
        import torch
        import torch.distributed as dist
    except Exception as e:  # noqa: BLE001 - any import failure is a fact to report
        return None, f"{type(e).__name__}: {e}"
    nccl = None
    avail = False
    count = 0
    devices: tuple[str, ...] = ()
    err = None
    try:
        avail = bool(torch.cuda.is_available())
        if avail:
            count = torch.cuda.device_count()
            devices = tuple(torch.cuda.get_device_name(i) for i in range(count))
            v = torch.cuda.nccl.version()
            nccl = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    except Exception as e:  # noqa: BLE001 - a broken driver raises here
        err = f"{type(e).__name__}: {e}"
    return TorchInfo(torch.__version__, torch.version.cuda, nccl, avail, count, devices,
                     bool(dist.is_available() and dist.is_nccl_available()),
                     bool(dist.is_available() and dist.is_gloo_available()), err), None


def _lib_version(path: str) -> str | None:
    real = os.path.realpath(path)
    for name in (os.path.basename(real), os.path.basename(path)):
        m = LIBNCCL_RE.search(name)
        if m and m.group(1) and m.group(1).count(".") >= 2:
            return m.group(1)
    return None


def gather_libnccl(env: dict[str, str]) -> list[LibNccl]:
    out: list[LibNccl] = []
    seen: set[str] = set()

    def add(path: str, source: str, version: str | None = None) -> None:
        real = os.path.realpath(path)
        if real in seen or not os.path.exists(real):
            return
        seen.add(real)
        out.append(LibNccl(path, version or _lib_version(path), source))

    try:  # the nvidia-nccl-cu* wheel that torch's wheel loads
        from importlib import metadata

        for dist_name in ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"):
            try:
                d = metadata.distribution(dist_name)
            except metadata.PackageNotFoundError:
                continue
            for f in d.files or []:
                if "libnccl.so" in f.name:
                    add(str(d.locate_file(f)), f"wheel {dist_name}", d.version)
    except Exception:  # noqa: BLE001, S110 - metadata quirks must not stop the doctor
        pass
    ldconfig = shutil.which("ldconfig") or ("/sbin/ldconfig" if os.path.exists("/sbin/ldconfig") else None)
    if ldconfig:
        rc, text = _run([ldconfig, "-p"])
        for ln in text.splitlines() if rc == 0 else []:
            if "libnccl.so" in ln and "=>" in ln:
                add(ln.split("=>", 1)[1].strip(), "ldconfig")
    for libdir in (env.get("LD_LIBRARY_PATH") or "").split(":"):
        if libdir:
            for p in sorted(glob.glob(os.path.join(libdir, "libnccl.so*"))):
                add(p, "LD_LIBRARY_PATH")
    return out


def gather_ifaces() -> list[Iface]:
    names: dict[str, int | None] = {}
    try:
        for index, ifname in socket.if_nameindex():
            names[ifname] = index
    except OSError:
        pass
    net = Path("/sys/class/net")
    if net.is_dir():
        for p in sorted(net.iterdir()):
            names.setdefault(p.name, None)
    addrs = _iface_addresses()
    out = []
    for name, idx in sorted(names.items(), key=lambda kv: (kv[1] is None, kv[1] or 0, kv[0])):
        speed = _read(net / name / "speed")
        mbps: int | None
        try:
            mbps = int(speed) if speed is not None else None
        except ValueError:
            mbps = None
        out.append(Iface(name, idx, _read(net / name / "operstate"), mbps if mbps and mbps > 0 else None,
                         tuple(addrs.get(name, ()))))
    return out


def _iface_addresses() -> dict[str, list[str]]:
    """Addresses per interface from ``ip -o addr`` (absent: empty)."""
    ip = shutil.which("ip")
    if not ip:
        return {}
    rc, text = _run([ip, "-o", "addr", "show"])
    out: dict[str, list[str]] = {}
    for ln in text.splitlines() if rc == 0 else []:
        parts = ln.split()
        if len(parts) >= 4 and parts[2] in ("inet", "inet6") and not parts[3].startswith("fe80"):
            out.setdefault(parts[1], []).append(parts[3].split("/")[0])
    return out


def gather_ib(root: str = "/sys/class/infiniband") -> list[IbPort]:
    out = []
    for dev in sorted(glob.glob(os.path.join(root, "*"))):
        for port in sorted(glob.glob(os.path.join(dev, "ports", "*"))):
            try:
                n = int(os.path.basename(port))
            except ValueError:
                continue
            out.append(IbPort(os.path.basename(dev), n, _read(os.path.join(port, "state")) or "?",
                              _read(os.path.join(port, "rate")) or "?", _read(os.path.join(port, "link_layer")) or "?"))
    return out


def probe_master(addr: str, port: int, local_addresses: tuple[str, ...]) -> tuple[tuple[str, ...], bool, Probe]:
    """Resolve ``addr``; if it is this host, try to bind ``port`` there, else try to connect."""
    infos = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)
    resolved = tuple(dict.fromkeys(str(i[4][0]) for i in infos))
    local = any(_is_local(a, local_addresses) for a in resolved)
    if local:
        target = next(a for a in resolved if _is_local(a, local_addresses))
        family = socket.AF_INET6 if ":" in target else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.bind((target, port))
            except OSError as e:
                if e.errno == errno.EADDRINUSE:
                    return resolved, True, Probe(False, f"port {port} on {target} is in use")
                return resolved, True, Probe(False, f"cannot bind {target}:{port}: {e.strerror or e}")
        return resolved, True, Probe(True, f"port {port} on {target} is free to bind")
    try:
        with socket.create_connection((resolved[0], port), timeout=2.0):
            pass
    except OSError as e:
        return resolved, False, Probe(False, f"{resolved[0]}:{port} not reachable: {e.strerror or e}")
    return resolved, False, Probe(True, f"{resolved[0]}:{port} accepts connections")


def _is_local(addr: str, local_addresses: tuple[str, ...]) -> bool:
    try:
        if ipaddress.ip_address(addr).is_loopback:
            return True
    except ValueError:
        return False
    return addr in local_addresses


def gather(env: dict[str, str] | None = None, probe_network: bool = True) -> Facts:
    """Look at this machine. ``env`` defaults to ``os.environ``."""
    env = dict(os.environ if env is None else env)
    f = Facts(env=env, hostname=socket.gethostname())
    f.torch, f.torch_error = gather_torch()
    f.libnccl = gather_libnccl(env)
    if shutil.which("nccl-config"):
        rc, text = _run(["nccl-config", "--version"])
        f.nccl_config = text.strip() or f"exit {rc}"
    if shutil.which("dpkg"):
        rc, text = _run(["dpkg", "-l"])
        f.dpkg_nccl = [" ".join(ln.split()[:3]) for ln in text.splitlines() if "nccl" in ln.lower() and ln[:2] == "ii"]
    f.nvidia_smi = shutil.which("nvidia-smi")
    if f.nvidia_smi:
        rc, text = _run([f.nvidia_smi, "-L"])
        if rc == 0:
            f.smi_list = text
            f.smi_topo = _run([f.nvidia_smi, "topo", "-m"])[1]
            f.smi_banner = _run([f.nvidia_smi])[1]
        else:
            f.smi_error = text.strip().splitlines()[-1] if text.strip() else f"nvidia-smi -L exited {rc}"
    f.ifaces = gather_ifaces()
    f.ib_ports = gather_ib()
    f.addresses_known = shutil.which("ip") is not None
    local = {a for i in f.ifaces for a in i.addresses}
    try:
        local.update(str(i[4][0]) for i in socket.getaddrinfo(f.hostname, None))
    except OSError:
        pass
    f.local_addresses = tuple(sorted(local))
    addr = env.get("MASTER_ADDR")
    if addr and probe_network:
        try:
            port = int(env.get("MASTER_PORT", "29500"))
        except ValueError:
            port = None
        try:
            if port is not None and 0 < port < 65536:
                f.master_resolved, f.master_is_local, f.master_port = probe_master(addr, port, f.local_addresses)
            else:
                f.master_resolved = tuple(dict.fromkeys(str(i[4][0]) for i in socket.getaddrinfo(addr, None)))
        except OSError as e:
            f.master_resolve_error = str(e.strerror or e)
    return f
