"""Fuzz target: NCCL's Inspector plugin output (``InspectorReader``, the Prometheus reader), then the model.

Seeds: a line of every format version's shape (``tests/inspector_shapes.py``) and the lines of the real
recordings in ``samples/`` (``*-pid*.log``), mutated, in random order: markers without their records,
records without their marker, counts that lie. Run: ``python tests/fuzz/fuzz_inspector.py --seconds 60``.
"""
from __future__ import annotations

import functools
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import inspector_shapes
from common import SAMPLES, analyze_parsed, mutate, random_json, run_fuzz
from ncclscope.ingest import Parsed
from ncclscope.sources.inspector import InspectorReader, parse_inspector_prom
from ncclscope.sources.records import InspectorRec, Rec


@functools.cache
def seeds() -> tuple[str, ...]:
    lines = inspector_shapes.sample_lines()
    for p in sorted(SAMPLES.glob("*/*-pid*.log"))[:4]:
        lines += p.read_text(errors="replace").splitlines()[:200]
    return tuple(lines)


def _line(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.55:
        return rng.choice(seeds())
    if r < 0.9:
        return mutate(rng, rng.choice(seeds()), seeds())
    obj = json.loads(rng.choice(seeds()))
    key = rng.choice(list(obj))
    if isinstance(obj[key], dict) and obj[key]:
        obj[key][rng.choice(list(obj[key]))] = random_json(rng)  # a value of any type where a number belongs
    else:
        obj[key] = random_json(rng)
    return json.dumps(obj)


def one(rng: random.Random, deep: bool | None = None) -> None:
    name = f"gpu{rng.randint(0, 3)}-pid{rng.randint(1, 9)}.log"
    lines = [(i, _line(rng)) for i in range(1, rng.randint(2, 40))]
    reader = InspectorReader(name)
    recs: list[Rec] = list(reader.read(lines))
    assert all(isinstance(r, InspectorRec) and r.file == name and 0 < r.line < 41 for r in recs)
    assert reader.skipped <= len(lines)
    prom = [(i, mutate(rng, rng.choice(inspector_shapes.PROM_LINES))) for i in range(1, rng.randint(2, 8))]
    recs_prom = list(parse_inspector_prom(prom, "nccl_inspector_metrics_GPU0.prom"))
    if deep if deep is not None else rng.random() < 0.3:
        analyze_parsed([Parsed(name, "inspector", recs), Parsed("m.prom", "inspector_prom", recs_prom)])


if __name__ == "__main__":
    raise SystemExit(run_fuzz("inspector", one))
