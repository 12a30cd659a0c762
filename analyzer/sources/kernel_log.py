"""The NVIDIA driver's lines in the kernel log (dmesg, journalctl -k, /var/log/syslog) about a GPU (``records.GpuFault``).

``NVRM: Xid (PCI:0000:3b:00): 79, pid=48213, name=python, GPU has fallen off the bus.`` (an Xid: its number says what
failed; the knowledge base's ``xid`` entries), ``NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.`` (the bus report,
no Xid), the newer drivers' three lines ``NVRM: The NVIDIA GPU 0000:b3:00.0`` / ``NVRM: (PCI ID: 10de:26b5) installed in
this system has`` / ``NVRM: fallen off the bus and is not responding to commands.`` (the GPU named by the first), behind dmesg's ``[12345.678901] `` or a syslog head ``Mar  3 10:00:01 gpu-node7 kernel: `` (its host is kept).
"""
from __future__ import annotations

import re

from .records import GpuFault

XID_RE = re.compile(r"NVRM: Xid \((?P<pci>PCI:[0-9A-Fa-f:.]{1,20})\): (?P<xid>\d{1,3})\b")
BUS_RE = re.compile(r"NVRM: GPU (?P<pci>[0-9A-Fa-f:.]{1,20}): GPU has fallen off the bus")
NAMED_RE = re.compile(r"NVRM: The NVIDIA GPU (?P<pci>[0-9A-Fa-f:.]{1,20})\s*$")  # the first of the three lines
FALLEN_RE = re.compile(r"NVRM: fallen off the bus and is not responding")
# a syslog / journalctl head: "Mar  3 10:00:01 gpu-node7 kernel: " (ISO times too: "2026-03-03T10:00:01.12+00:00 h kernel:")
SYSLOG_HOST_RE = re.compile(r"^(?:[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S{8,30}) (?P<host>[^\s:]{1,255}) "
                            r"kernel: ")


def named_gpu(body: str) -> str | None:
    """The GPU the first of the newer drivers' three 'fallen off the bus' lines names, else None."""
    m = NAMED_RE.search(body)
    return m.group("pci") if m else None


def gpu_fault(body: str, file: str, lineno: int, text: str, rank: int | None,
              named: str | None = None) -> GpuFault | None:
    """The record of one driver line about a GPU, or None (``NVRM:`` must be in ``body``: callers test it first).
    ``named``: the GPU the line before named (``named_gpu``), for the third line of the three-line form."""
    x = XID_RE.search(body)
    m = x or BUS_RE.search(body)
    if m is not None:
        pci = m.group("pci").removeprefix("PCI:")
    elif named is not None and (m := FALLEN_RE.search(body)) is not None:
        pci = named
    else:
        return None
    h = SYSLOG_HOST_RE.match(body.lstrip())
    return GpuFault(file, lineno, text, rank, None, None, None, pci, int(x.group("xid")) if x is not None else None,
                    h.group("host") if h else None, body[m.start():].strip()[:500])
