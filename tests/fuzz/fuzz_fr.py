"""Fuzz target: Flight Recorder dumps, pickle and JSON (``parse_fr_pickle``, ``parse_fr_json``).

Inputs: real dumps with bytes flipped, cut or blown up; random plain-data objects shaped like a
dump, pickled with protocols 0-5 or written as JSON. Allowed: ``ValueError`` (the documented
refusal). Whatever parses goes through the model, the detectors and the report.
Run: ``python tests/fuzz/fuzz_fr.py --seconds 60``.
"""
from __future__ import annotations

import json
import pickle
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import analyze_parsed, corpus_file, mutate_bytes, random_json, run_fuzz

from ncclscope.ingest import Parsed
from ncclscope.safe_pickle import loads_plain
from ncclscope.sources.flight_recorder import parse_fr_json, parse_fr_pickle

REAL_PKL = corpus_file("fr_timeout_rank0", "fr_end_rank0.pkl") or pickle.dumps({"version": "2.10", "entries": []})
REAL_JSON = corpus_file("fr_end_rank0.json") or b'{"version": "2.10", "entries": []}'
REAL_OBJ = loads_plain(REAL_PKL)


def _shaped(rng: random.Random) -> object:
    """A real dump with random values put in random places."""
    obj = json.loads(json.dumps(REAL_OBJ, default=list))
    entries = obj.get("entries") or []
    for _ in range(rng.randint(1, 6)):
        target = rng.choice([obj, rng.choice(entries) if entries else obj, obj.get("pg_status") or obj])
        if isinstance(target, dict) and target:
            target[rng.choice(list(target))] = random_json(rng)
    return obj


def one(rng: random.Random, deep: bool | None = None) -> None:
    kind = rng.randrange(4)
    name = f"fr_timeout_rank{rng.randint(0, 3)}"
    try:
        if kind == 0:
            rec = parse_fr_pickle(mutate_bytes(rng, REAL_PKL), name)
        elif kind == 1:
            rec = parse_fr_json(mutate_bytes(rng, REAL_JSON), name + ".json")
        elif kind == 2:
            rec = parse_fr_pickle(pickle.dumps(_shaped(rng), protocol=rng.randint(0, 5)), name)
        else:
            rec = parse_fr_json(json.dumps(_shaped(rng) if rng.random() < 0.7 else random_json(rng)).encode(),
                                name + ".json")
    except ValueError:
        return
    if deep if deep is not None else rng.random() < 0.5:
        analyze_parsed([Parsed(rec.file, "flight_recorder", [rec])])


if __name__ == "__main__":
    raise SystemExit(run_fuzz("flight_recorder", one))
