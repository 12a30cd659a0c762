"""Fuzz target: PyTorch c10d / traceback / torchrun lines (``parse_torch_lines``), then the model.

Run: ``python tests/fuzz/fuzz_torch.py --seconds 60``.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import analyze_parsed, mutate, run_fuzz, seed_lines

from ncclscope.ingest import Parsed
from ncclscope.sources.torch_log import parse_torch_lines


def one(rng: random.Random, deep: bool | None = None) -> None:
    seeds = seed_lines("torch")
    start = rng.randrange(len(seeds))
    block = list(seeds[start:start + rng.randint(1, 40)])  # keep neighbours: tracebacks, summary blocks
    lines = [(i, mutate(rng, s, seeds) if rng.random() < 0.4 else s) for i, s in enumerate(block, 1)]
    recs = list(parse_torch_lines(lines, "stderr.log"))
    assert all(r.file == "stderr.log" for r in recs)
    if deep if deep is not None else rng.random() < 0.2:
        analyze_parsed([Parsed("stderr.log", "log", recs)])


if __name__ == "__main__":
    raise SystemExit(run_fuzz("torch", one))
