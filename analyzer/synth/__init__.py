"""Synthetic NCCL run folders for tests and benchmarks: ``generate_run(dest, nranks=..., fault=...)``.

The files imitate what a real ``torchrun`` + DDP job writes with ``NCCL_DEBUG=INFO``,
``NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH,COLL`` and ``NCCL_DEBUG_FILE=%h.%p.nccl.log`` on NCCL 2.28,
plus the launcher's ``stderr.log``. The returned ``SynthTruth`` says what an analyser should find.
"""
from __future__ import annotations

from .excerpts import EXCERPTS, write_excerpt
from .generator import EVIDENCE, EVIDENCE_FAULTS, FAULTS, SynthTruth, generate_run, ring_orders, tree_parents

__all__ = ["EVIDENCE", "EVIDENCE_FAULTS", "EXCERPTS", "FAULTS", "SynthTruth", "generate_run", "ring_orders",
           "tree_parents", "write_excerpt"]
