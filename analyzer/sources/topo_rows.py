"""A row of ``nvidia-smi topo -m`` pasted into a log (``GPU0  X  NV8  NV8 ... PXB  SYS  0-31,64-95  0  N/A``): which
GPUs the row's GPU reaches over NVLink. ``sources.nvidia_smi`` reads a whole matrix for ``ncclscope doctor``; here
one row at a time is enough to say that the GPUs of a node have NVLink between them."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .nvidia_smi import nvlink_count
from .records import TorchRec

ROW_RE = re.compile(r"^GPU(?P<gpu>\d{1,3})\s+(?P<cells>(?:(?:X|NV\d{1,2}|PIX|PXB|PHB|NODE|SYS|SOC|PSB)\s+){2,})")


@dataclass(slots=True)
class GpuLinks(TorchRec):
    """One GPU's row of the matrix: its index and how many of the other GPUs it reaches over NVLink (``NV#``)."""

    gpu: int
    nvlink_peers: int
    peers: int


def gpu_links(head: tuple[str, int, str, int | None, str | None, str | None, str | None],
              body: str) -> GpuLinks | None:
    m = ROW_RE.match(body.strip() + " ")
    if m is None:
        return None
    cells = [c for c in m.group("cells").split() if c != "X"]
    gpus = [c for c in cells if c.startswith("NV") or c in ("PIX", "PXB", "PHB", "NODE", "SYS", "SOC", "PSB")]
    return GpuLinks(head[0], head[1], head[2], None, None, None, None, int(m.group("gpu")),
                    sum(1 for c in gpus if nvlink_count(c) > 0), len(gpus))
