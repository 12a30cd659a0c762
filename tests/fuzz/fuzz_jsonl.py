"""Fuzz target: hook / completion-hook JSON lines (``parse_jsonl``), then the model.

Run: ``python tests/fuzz/fuzz_jsonl.py --seconds 60``.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import analyze_parsed, mutate, random_json, run_fuzz, seed_lines

from ncclscope.ingest import Parsed
from ncclscope.sources.hook_jsonl import parse_jsonl

HOOK_TYPES = ["start", "coll", "done", "hb", "stack", "fr", "exit", "error", "stall", "desync"]


def _line(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.4:
        return mutate(rng, rng.choice(seed_lines("jsonl")))
    obj = random_json(rng)
    if not isinstance(obj, dict):
        obj = {"v": obj}
    if r < 0.8:
        obj["type"] = rng.choice(HOOK_TYPES) if rng.random() < 0.9 else random_json(rng)
        obj.setdefault("rank", rng.choice([0, 1, -1, 10**12, "0", None, True]))
    else:
        obj.setdefault("op_type", rng.choice(["OpType.ALLREDUCE", 3, None]))
        obj.setdefault("seq", random_json(rng))
    return json.dumps(obj)


def one(rng: random.Random, deep: bool | None = None) -> None:
    name = f"ncclscope-rank{rng.randint(0, 3)}.jsonl" if rng.random() < 0.5 else "completion_hook_rank1.jsonl"
    lines = [(i, _line(rng)) for i in range(1, rng.randint(2, 30))]
    recs = list(parse_jsonl(lines, name))
    if deep if deep is not None else rng.random() < 0.5:
        analyze_parsed([Parsed(name, "jsonl", recs)])


if __name__ == "__main__":
    raise SystemExit(run_fuzz("jsonl", one))
