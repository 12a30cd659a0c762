"""Fuzz target: NCCL RAS answers, text and JSON (``parse_ras_text``, ``parse_ras_json``).

Run: ``python tests/fuzz/fuzz_ras.py --seconds 60``.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import analyze_parsed, corpus_file, mutate, random_json, run_fuzz

from ncclscope.ingest import Parsed
from ncclscope.sources.ras import looks_like_ras_json, parse_ras_json, parse_ras_text

REAL_TEXT = (corpus_file("ras_verbose.txt") or b"#0-0 (abc) OK\nRank 0 has launched up to operation 1\n").decode()
_RAW = corpus_file("ras_verbose.json") or b'{"nccl_version": "2.28.9", "communicators": []}'
REAL_JSON = json.loads(_RAW[_RAW.index(b"{"):])  # the answer starts with the protocol lines


def one(rng: random.Random, deep: bool | None = None) -> None:
    if rng.random() < 0.5:
        lines = REAL_TEXT.splitlines()
        lines = [mutate(rng, ln, tuple(lines)) if rng.random() < 0.3 else ln for ln in lines]
        recs = parse_ras_text("\n".join(lines), "ras_verbose.txt")
    else:
        obj = json.loads(json.dumps(REAL_JSON))
        comms = obj.get("communicators") or [{}]
        for _ in range(rng.randint(1, 5)):
            ranks = [r for c in comms if isinstance(c, dict) and isinstance(c.get("ranks"), list)
                     for r in c["ranks"] if isinstance(r, dict)]
            target = rng.choice([obj, rng.choice(comms)] + ranks)
            if isinstance(target, dict):
                target[rng.choice(list(target) + ["ranks", "missing_ranks", "collective_counts"])] = random_json(rng)
        if not looks_like_ras_json(obj):
            return
        recs = parse_ras_json(obj, "ras_verbose.json")
    if deep if deep is not None else rng.random() < 0.3:
        analyze_parsed([Parsed("ras", "ras", list(recs))])


if __name__ == "__main__":
    raise SystemExit(run_fuzz("ras", one))
