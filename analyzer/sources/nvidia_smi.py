"""``nvidia-smi topo -m`` and ``nvidia-smi -L`` output.

``topo -m`` prints a matrix: a header row of device labels (``GPU0 .. GPUn``, then ``NIC0 ..`` in
newer drivers or the HCA names such as ``mlx5_0`` in older ones) followed by ``CPU Affinity``,
``NUMA Affinity`` and (newer drivers) ``GPU NUMA ID``; one row per device; a legend; and, in newer
drivers, a ``NIC Legend`` mapping ``NIC0: mlx5_0``. The header may be underlined with ANSI escapes
(``\\x1b[4m``) and cells are tab separated; copies pasted from a terminal use spaces. Link cells are
``X`` (self), ``NV#`` (# bonded NVLinks), ``PIX``, ``PXB``, ``PHB``, ``NODE``, ``SYS`` (``SOC`` in
drivers before 375). NIC rows leave the affinity cells empty.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
NIC_LEGEND_RE = re.compile(r"^\s*(NIC\d+):\s*(\S+)\s*$")
GPU_LABEL_RE = re.compile(r"^GPU\d+$")
LINK_RE = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|PSB|CPU|N/A)$")
GPU_LIST_RE = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: ([^)]+)\))?\s*$")
TRAILING_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")

# Link classes from fastest to slowest; what NCCL can use between two GPUs over each.
LINK_CLASSES = ("self", "nvlink", "pcie_switch", "pcie_host_bridge", "numa_node", "cross_numa", "unknown")


def link_class(code: str) -> str:
    """Class of one matrix cell: nvlink, pcie_switch (PIX/PXB), pcie_host_bridge (PHB), numa_node (NODE),
    cross_numa (SYS/SOC), self (X), unknown."""
    if code == "X":
        return "self"
    if code.startswith("NV") and code[2:].isdigit():
        return "nvlink"
    return {"PIX": "pcie_switch", "PXB": "pcie_switch", "PSB": "pcie_switch", "PHB": "pcie_host_bridge",
            "NODE": "numa_node", "SYS": "cross_numa", "SOC": "cross_numa"}.get(code, "unknown")


def nvlink_count(code: str) -> int:
    """Number of bonded NVLinks in an ``NV#`` cell, 0 for any other cell."""
    return int(code[2:]) if code.startswith("NV") and code[2:].isdigit() else 0


@dataclass(frozen=True, slots=True)
class TopoMatrix:
    """One ``nvidia-smi topo -m`` matrix."""

    gpus: tuple[str, ...]  # "GPU0", ...
    nics: tuple[str, ...]  # column labels: "NIC0" or "mlx5_0"
    nic_names: dict[str, str] = field(default_factory=dict)  # "NIC0" -> "mlx5_0" (from the NIC Legend)
    links: dict[tuple[str, str], str] = field(default_factory=dict)  # (row, column) -> cell
    cpu_affinity: dict[str, str] = field(default_factory=dict)
    numa_affinity: dict[str, str] = field(default_factory=dict)
    gpu_numa_id: dict[str, str] = field(default_factory=dict)

    def link(self, a: str, b: str) -> str | None:
        return self.links.get((a, b))

    def nic_name(self, nic: str) -> str:
        return self.nic_names.get(nic, nic)

    def gpu_pairs(self) -> dict[tuple[str, str], str]:
        """Each unordered GPU pair (i < j) and its cell."""
        out = {}
        for i, a in enumerate(self.gpus):
            for b in self.gpus[i + 1:]:
                cell = self.links.get((a, b)) or self.links.get((b, a))
                if cell is not None:
                    out[(a, b)] = cell
        return out

    def slowest_gpu_link(self) -> str | None:
        """Class of the slowest GPU-GPU link (what bounds a ring over all GPUs); None with fewer than 2 GPUs."""
        classes = [link_class(c) for c in self.gpu_pairs().values()]
        if not classes:
            return None
        return max(classes, key=LINK_CLASSES.index)

    def nearest_nics(self, gpu: str) -> list[str]:
        """NICs (legend names) sharing the closest PCIe class with ``gpu``, closest class first only."""
        cells = [(LINK_CLASSES.index(link_class(self.links.get((gpu, n), "?"))), n) for n in self.nics]
        cells = [c for c in cells if c[0] < LINK_CLASSES.index("unknown")]
        if not cells:
            return []
        best = min(c[0] for c in cells)
        return [self.nic_name(n) for k, n in cells if k == best]

    def to_json(self) -> dict[str, Any]:
        return {
            "gpus": list(self.gpus),
            "nics": [self.nic_name(n) for n in self.nics],
            "gpu_links": {f"{a}-{b}": c for (a, b), c in self.gpu_pairs().items()},
            "slowest_gpu_link": self.slowest_gpu_link(),
            "nearest_nics": {g: self.nearest_nics(g) for g in self.gpus} if self.nics else {},
            "cpu_affinity": dict(self.cpu_affinity),
            "numa_affinity": dict(self.numa_affinity),
        }


def parse_topo_matrix(text: str) -> TopoMatrix | None:
    """Parse ``nvidia-smi topo -m`` output; None when no matrix is found."""
    lines = ANSI_RE.sub("", text).splitlines()
    header_i = next((i for i, ln in enumerate(lines) if "GPU0" in ln.split()), None)
    if header_i is None:
        return None
    header = lines[header_i]
    cut = min((header.find(c) for c in TRAILING_COLUMNS if c in header), default=len(header))
    labels = header[:cut].split()
    trailing = [c for c in TRAILING_COLUMNS if c in header]
    gpus = tuple(lb for lb in labels if GPU_LABEL_RE.match(lb))
    nics = tuple(lb for lb in labels if not GPU_LABEL_RE.match(lb))
    links: dict[tuple[str, str], str] = {}
    extra: dict[str, dict[str, str]] = {c: {} for c in TRAILING_COLUMNS}
    nic_names: dict[str, str] = {}
    in_matrix = True
    for ln in lines[header_i + 1:]:
        m = NIC_LEGEND_RE.match(ln)
        if m:
            nic_names[m.group(1)] = m.group(2)
            continue
        if ln.strip().startswith("Legend"):
            in_matrix = False
        if not in_matrix:
            continue
        toks = ln.split()
        if not toks or toks[0] not in labels:
            continue
        row = toks[0]
        cells = toks[1:1 + len(labels)]
        if len(cells) < len(labels) or not all(LINK_RE.match(c) for c in cells):
            continue
        for col, cell in zip(labels, cells):
            links[(row, col)] = cell
        for name, value in zip(trailing, toks[1 + len(labels):]):
            extra[name][row] = value
    if not links:
        return None
    return TopoMatrix(gpus, nics, nic_names, links, extra["CPU Affinity"], extra["NUMA Affinity"],
                      extra["GPU NUMA ID"])


@dataclass(frozen=True, slots=True)
class GpuInfo:
    index: int
    name: str
    uuid: str | None


def parse_gpu_list(text: str) -> list[GpuInfo]:
    """``nvidia-smi -L``: ``GPU 0: NVIDIA H200 (UUID: GPU-...)``; MIG lines below a GPU are ignored."""
    out = []
    for ln in text.splitlines():
        m = GPU_LIST_RE.match(ln.strip())
        if m:
            out.append(GpuInfo(int(m.group(1)), m.group(2), m.group(3)))
    return out


DRIVER_RE = re.compile(r"Driver Version:\s*([\d.]+)")
CUDA_RE = re.compile(r"CUDA Version:\s*([\d.]+)")


def parse_smi_banner(text: str) -> dict[str, str]:
    """Driver version and the newest CUDA the driver supports, from plain ``nvidia-smi`` output."""
    out = {}
    if m := DRIVER_RE.search(text):
        out["driver"] = m.group(1)
    if m := CUDA_RE.search(text):
        out["cuda"] = m.group(1)
    return out
