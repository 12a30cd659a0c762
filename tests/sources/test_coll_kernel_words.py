"""The compiled COLL reader's shortcuts give the regex's rows: a timestamp whose bytes to the second are the
last read line's is not read again (its fraction and closing bracket still are), and a token's scan skips
8 bytes at a time where no space (and, in a buffer token, no byte below 14) is among them, and the
middle's first token is passed as one word when it is ``datatype``, and a line whose four grouped parts
have the last line's lengths and bytes takes the last line's codes.

Blocks of lines that share one second, mutated one byte at a time in and around the timestamp and the
long tokens, are read by ``scan_coll_block`` with the compiled reader armed and compared with
``scan_coll_block_regex``; a wrong shortcut shows as a row the regex does not make or a value it does not give.
"""
from __future__ import annotations

import random

import pytest

from coll_rows import same_as_regex
from ncclscope.sources.coll import kernel as coll_kernel

BASE = ("[2026-11-29 19:20:05.{frac}] node000:1784006:1784006 [1] NCCL INFO AllReduce: opCount {opc:x} "
        "sendbuff 0x7fb400000000 recvbuff 0x7fb406400000 count 65536000 datatype 7 op 0 root 0 "
        "comm 0x55f561067a8c [nranks=4096] stream 0x55f5610a8d10\n")
JUNK = [b"\t", b"\r", b"\x0b", b"\x0c", b"\x00", b"\x08", b" ", b"x", b"9", b"-", b":", b".", b"]", b"[", b"\xff", b""]


@pytest.fixture(autouse=True)
def compiled():
    assert coll_kernel.arm(), "the compiled COLL reader (numba) did not load"
    yield
    coll_kernel.disarm()


def _line(i: int, rng: random.Random) -> bytes:
    return BASE.format(frac=rng.choice(["045037", "5", "123456", "0450371", ""]).rjust(1, "0"), opc=i).encode()


@pytest.mark.parametrize("seed", range(40))
def test_one_second_lines_mutated_read_as_the_regex_reads_them(seed):
    rng = random.Random(seed)
    lines = []
    for i in range(rng.randrange(2, 40)):
        line = bytearray(_line(i, rng))
        if rng.random() < 0.5:  # most mutations in the timestamp, the head and the buffers: the shortcuts' bytes
            at = rng.choice([rng.randrange(0, 30), rng.randrange(30, 60), rng.randrange(90, 130),
                             rng.randrange(150, len(line) - 1), rng.randrange(len(line) - 1)])
            line[at:at + 1] = rng.choice(JUNK)
        lines.append(bytes(line))
    same_as_regex(b"".join(lines))


def test_a_second_shared_with_a_line_whose_date_is_no_date():
    # the first line's timestamp is rejected (30 February): it is never the one the next is compared with
    bad = BASE.format(frac="5", opc=1).replace("2026-11-29", "2026-02-30").encode()
    good = BASE.format(frac="5", opc=2).encode()
    for block in (bad + bad, bad + good + bad + good, good + bad.replace(b".5]", b".5x") + good):
        same_as_regex(block)


@pytest.mark.parametrize("width", [1, 7, 8, 9, 15, 16, 17, 24, 40])
@pytest.mark.parametrize("junk", [b"\t", b"\r", b"\x0b", b"\x0c", b"\x0d", b"\x08", b" ", b"\x00"])
def test_long_tokens_with_whitespace_at_every_offset(width, junk):
    lines = []
    for k in range(width + 1):
        token = bytearray(b"ab" * width)[:width]
        token[k:k + 1] = junk  # k == width: nothing replaced, the token as it is
        for field in (b"0x7fb400000000", b"0x7fb406400000", b"node000:1784006:1784006", b"0x55f561067a8c",
                      b"[nranks=4096]", b"AllReduce:", b"datatype"):
            lines.append(BASE.format(frac="5", opc=k).encode().replace(field, bytes(token), 1))
    same_as_regex(b"".join(lines))


@pytest.mark.parametrize("seed", range(20))
def test_parts_like_the_last_lines_but_one_byte(seed):
    # each line is the one before with one byte of one grouped part changed (same length) or not: the
    # all-parts-equal shortcut must see every difference, and hand the right group back when one returns
    rng = random.Random(seed)
    base = BASE.format(frac="5", opc=1).encode()
    parts = [(base.index(b"node000"), base.index(b"opCount")), (base.index(b"datatype"), base.index(b" stream"))]
    lines, line = [], bytearray(base)
    for _ in range(60):
        if rng.random() < 0.6:
            lo, hi = rng.choice(parts)
            at = rng.randrange(lo, hi)
            line[at:at + 1] = rng.choice([b"x", b"9", b"A", b"0", bytes(base[at:at + 1])])
        if rng.random() < 0.2:
            line = bytearray(base)
        lines.append(bytes(line))
    same_as_regex(b"".join(lines))
