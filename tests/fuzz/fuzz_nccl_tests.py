"""Fuzz target: nccl-tests output, table and JSON (``parse_nccl_tests_lines``, ``parse_nccl_tests_json``).

Run: ``python tests/fuzz/fuzz_nccl_tests.py --seconds 60``.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import analyze_parsed, mutate, random_json, run_fuzz

from ncclscope.ingest import Parsed
from ncclscope.sources.nccl_tests import parse_nccl_tests_json, parse_nccl_tests_lines

SEEDS = [
    "# nccl-tests version 2.19.6 nccl-headers=23007 nccl-library=23007",
    "# Collective test starting: all_reduce_perf",
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1",
    "#  Rank  0 Group  0 Pid   1234 on     host device  0 [0000:07:00] NVIDIA H200",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
    "           8             2     float     sum      -1    12.34    0.00    0.00      0    11.95    0.00    0.00      0",
    "   134217728      33554432     float     sum      -1   612.34  219.19  383.58      0   611.02  219.66  384.41    N/A",
    "# Avg bus bandwidth    : 123.456",
    "ncclscope perf: all_reduce nranks=2",
]


def one(rng: random.Random, deep: bool | None = None) -> None:
    if rng.random() < 0.6:
        lines = [(i, mutate(rng, s, tuple(SEEDS)) if rng.random() < 0.4 else s)
                 for i, s in enumerate(rng.choices(SEEDS, k=rng.randint(1, 20)), 1)]
        recs = list(parse_nccl_tests_lines(lines, "perf.txt"))
    else:
        obj = random_json(rng)
        obj = {"results": obj if isinstance(obj, list) else [obj], "test": random_json(rng),
               "nranks": random_json(rng)}
        recs = parse_nccl_tests_json(obj, "perf.json")
    if deep if deep is not None else rng.random() < 0.3:
        analyze_parsed([Parsed("perf.txt", "nccl_tests", list(recs))])


if __name__ == "__main__":
    raise SystemExit(run_fuzz("nccl_tests", one))
