"""Fuzz target: NCCL_DEBUG log lines (``parse_nccl_line``, ``parse_nccl_lines``), then the model.

Real lines from every corpus run and the reference's older and newer forms, mutated. A crash is
any exception. Run: ``python tests/fuzz/fuzz_nccl.py --seconds 60``.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import analyze_parsed, mutate, run_fuzz, seed_lines

from ncclscope.ingest import Parsed
from ncclscope.sources.nccl_log import parse_nccl_line, parse_nccl_lines
from ncclscope.sources.records import NcclRec


def one(rng: random.Random, deep: bool | None = None) -> None:
    seeds = seed_lines("nccl")
    line = mutate(rng, rng.choice(seeds), seeds)
    rec = parse_nccl_line(line, "f.log", 7)
    assert rec is None or (isinstance(rec, NcclRec) and rec.file == "f.log" and rec.line == 7)
    lines = [(i, mutate(rng, rng.choice(seeds), seeds) if rng.random() < 0.3 else rng.choice(seeds))
             for i in range(1, rng.randint(2, 60))]
    recs = list(parse_nccl_lines(lines, "vm.1.nccl.log"))
    if deep if deep is not None else rng.random() < 0.2:
        analyze_parsed([Parsed("vm.1.nccl.log", "log", recs)])


if __name__ == "__main__":
    raise SystemExit(run_fuzz("nccl", one))
