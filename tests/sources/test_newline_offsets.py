"""``ingest.newline_offsets`` gives exactly ``np.flatnonzero(bytes == 10)``: every length (whole 8-byte words
and a tail), newlines dense and sparse, at the word edges, CRs and NULs among them, and real logs."""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from ncclscope.ingest import newline_offsets

ROOT = Path(__file__).resolve().parents[2]


def reference(block: bytes) -> np.ndarray:
    return np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)


def check(block: bytes | memoryview) -> None:
    got, want = newline_offsets(block), reference(block)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


@pytest.mark.parametrize("seed", range(30))
def test_random_blocks(seed):
    rng = random.Random(seed)
    for _ in range(50):
        density = rng.choice([0.0, 0.01, 0.2, 0.9, 1.0])
        n = rng.randrange(0, 300)
        check(bytes(10 if rng.random() < density else rng.choice(b"a \r\x00\x0a\xff") for _ in range(n)))


def test_newlines_at_every_offset_of_a_word_and_the_tail():
    for n in range(0, 33):
        for at in range(n):
            block = bytearray(b"x" * n)
            block[at] = 10
            check(bytes(block))
            block[n - 1] = 10
            check(bytes(block))


def test_a_memoryview_of_a_reused_buffer():
    buf = bytearray(b"ab\ncd\n" * 100 + b"tail")
    check(memoryview(buf)[:301])
    check(memoryview(buf)[:0])


def test_real_logs():
    logs = [p for p in sorted((ROOT / "tests" / "data").rglob("*.log")) if p.stat().st_size < 8 << 20][:200]
    assert logs
    for p in logs:
        check(p.read_bytes())
