"""Fuzz target: ``KEY=VALUE`` listings and ``exit.txt`` (``parse_env_lines``).

Run: ``python tests/fuzz/fuzz_env.py --seconds 60``.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import analyze_parsed, mutate, run_fuzz, seed_lines

from ncclscope.ingest import Parsed
from ncclscope.sources.env_file import parse_env_lines


def one(rng: random.Random, deep: bool | None = None) -> None:
    seeds = seed_lines("env") or ("NCCL_DEBUG=INFO", "exit=0")
    lines = [(i, mutate(rng, rng.choice(seeds), seeds)) for i in range(1, rng.randint(2, 20))]
    recs = list(parse_env_lines(lines, "env.txt"))
    if deep if deep is not None else rng.random() < 0.2:
        analyze_parsed([Parsed("env.txt", "env", recs)])


if __name__ == "__main__":
    raise SystemExit(run_fuzz("env", one))
