"""Fuzz target: whole files through ``parse_file`` (sniffing included), then the model and the report.

Each input is one file: a real corpus file with byte edits, a real file cut short, a head that
sniffs as one format followed by another, or random bytes. ``parse_file`` must never raise;
what it reads must go through build, detectors and report without an internal failure.
Run: ``python tests/fuzz/fuzz_ingest.py --seconds 60``.
"""
from __future__ import annotations

import atexit
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CORPUS, analyze_parsed, mutate_bytes, run_fuzz  # noqa: E402

from ncclscope.ingest import Parsed, parse_file  # noqa: E402

REAL = sorted(p for p in CORPUS.glob("*/*") if p.is_file() and p.stat().st_size < 300_000) if CORPUS.exists() else []
HEADS = [b"\x80\x04", b"\x80\x02", b"{", b"[", b"<system", b"<graphs", b"<?xml", b"SERVER PROTOCOL", b"# nThread",
         b"NCCL_DEBUG=INFO\n", b"\xef\xbb\xbf", b"\x00" * 8, b"\r\n", b""]
_TMP = Path(tempfile.mkdtemp(prefix="ncclscope-fuzz-"))
atexit.register(shutil.rmtree, _TMP, True)


def make_file(rng: random.Random) -> tuple[str, bytes]:
    r = rng.random()
    src = rng.choice(REAL) if REAL else None
    data = src.read_bytes() if src else b"vm:1:1 [0] NCCL INFO x\n"
    name = src.name if src else "x.log"
    if r < 0.4:
        data = mutate_bytes(rng, data)
    elif r < 0.6:
        data = data[:rng.randint(0, len(data))]
    elif r < 0.8:
        data = rng.choice(HEADS) + (data[rng.randint(0, len(data)):] if rng.random() < 0.7 else rng.randbytes(200))
    else:
        data = rng.randbytes(rng.randint(0, 4096))
    return name, data


def one(rng: random.Random, deep: bool | None = None) -> None:
    name, data = make_file(rng)
    path = _TMP / name
    path.write_bytes(data)
    try:
        p = parse_file(path, name)
    finally:
        path.unlink()
    assert isinstance(p, Parsed) and (p.records or p.problem or p.fmt in ("empty", "log", "env", "jsonl", "ras",
                                                                            "nccl_tests", "xml", "json"))
    if p.records and (deep if deep is not None else rng.random() < 0.3):
        analyze_parsed([p])


if __name__ == "__main__":
    raise SystemExit(run_fuzz("ingest", one))
