"""Both COLL readers, numpy and compiled, give exactly what the regex gives, line for line, and take the
common lines.

Every test runs twice, once per reader (the ``reader`` fixture arms or disarms ``coll_kernel``).
``scan_coll_block`` (the reader, regex for what it leaves) is compared with
``scan_coll_block_regex`` (the regex alone) on every real log we have, on generated runs, and on
COLL lines mutated one byte at a time at every field: a wrong accept would show up as a row the
regex does not make, a wrong reject only as time.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coll_rows import same_as_regex
from ncclscope.sources.coll import kernel as coll_kernel
from ncclscope.sources.coll.columns import read_coll_columns as read_numpy
from ncclscope.sources.coll import scan_coll_block
from ncclscope.synth import generate_run

ROOT = Path(__file__).resolve().parents[2]
N = int(os.environ.get("NCCLSCOPE_PROPERTY_EXAMPLES", "200"))
PROFILE = dict(deadline=None, derandomize=os.environ.get("NCCLSCOPE_PROPERTY_RANDOM") != "1", database=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.function_scoped_fixture])  # the reader stays armed across examples


@pytest.fixture(params=["numpy", "compiled"], autouse=True)
def reader(request):
    if request.param == "compiled":
        assert coll_kernel.arm(), "the compiled COLL reader (numba) did not load"
    else:
        coll_kernel.disarm()
    yield request.param
    coll_kernel.disarm()


def read_coll_columns(block: bytes):
    """The reader under test."""
    return coll_kernel.read_coll_columns_compiled(block) if coll_kernel.ready() else read_numpy(block)


def _logs(root: Path) -> list[Path]:
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.stat().st_size < 64 << 20:
            with open(p, "rb") as f:
                if b"NCCL " in f.read(1 << 20):
                    out.append(p)
    return out


def test_same_rows_on_every_real_log(corpus):
    files = _logs(corpus) + _logs(ROOT / "samples")
    assert len(files) >= 10
    taken = 0
    for p in files:
        data = p.read_bytes()
        same_as_regex(data)
        cols = read_coll_columns(data)
        taken += 0 if cols is None else len(cols.rows)
    assert taken > 1000  # the real H200 logs' COLL lines go the fast way


@pytest.mark.parametrize("fault", ["hang", "desync", "crash"])
def test_same_rows_on_generated_runs_and_all_taken_fast(tmp_path, fault):
    generate_run(tmp_path / "run", nranks=16, steps=40, fault=fault, seed=3)
    for p in sorted((tmp_path / "run").iterdir()):
        data = p.read_bytes()
        same_as_regex(data)
        cols = read_coll_columns(data)
        n_coll = data.count(b": opCount ")
        assert (0 if cols is None else len(cols.rows)) == n_coll


LINE = ("{ts}node{h}:{pid}:{tid} {dev}NCCL INFO {op}: opCount {opc:x} sendbuff 0x7f{sb:x} recvbuff 0x7f{rb:x} "
        "count {count} datatype {dt} op {redop} root {root} comm {comm} [nranks={nr}]{tail}\n")


def _line(rng: random.Random, uniform_ts: bool = False) -> str:
    ts = "[2026-11-29 {:02d}:20:{:02d}.{:06d}] ".format(rng.randrange(24), rng.randrange(60), rng.randrange(10**6)) \
        if uniform_ts else rng.choice(["", "[2026-11-29 19:20:{:02d}.{:06d}] ".format(rng.randrange(60), rng.randrange(10**6)),
                     "[2026-11-29 19:20:05] ", "[2026-02-30 23:59:59.5] ", "[2026-11-29T19:20:05] ",
                     "[2026-11-29 19:20:05.123456789] "])
    return LINE.format(
        ts=ts, h=rng.randrange(3), pid=rng.choice([17, 123456, 9999999999]), tid=rng.choice([17, 18]),
        dev=rng.choice(["[0] ", "[7] ", ""]), op=rng.choice(["AllReduce", "AllGather", "Broadcast", "Send"]),
        opc=rng.randrange(1 << rng.choice([4, 40, 64])), sb=rng.randrange(1 << 40), rb=rng.randrange(1 << 40),
        count=rng.choice([1, 1024, 4369067, 99999999, 123456789012, 999999999999999999]), dt=rng.randrange(12),
        redop=rng.randrange(5), root=rng.choice([0, -1, 7]), comm=rng.choice(["0x55aa", "0x55f55ba91faf", "(nil)"]),
        nr=rng.choice([2, 64, 4096]), tail=rng.choice([" stream 0x1", "", " stream 0x1 task 3"]))


JUNK = [b"\t", b"\r", b"  ", b"\x00", b"\xff", b":", b"[", b"]", b"x", b"9", b"-", b"a", b" ", b"\n", b"", b"=", b"("]


def _mutate(line: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(line))
    what = rng.randrange(3)
    if what == 0:
        return line[:i] + rng.choice(JUNK) + line[i + 1:]  # replace
    if what == 1:
        return line[:i] + rng.choice(JUNK) + line[i:]  # insert
    return line[:i] + line[i + 1:]  # delete


@settings(max_examples=N, **PROFILE)
@given(st.randoms(use_true_random=False))
def test_same_rows_on_mutated_coll_lines(rng):
    lines = []
    uniform = rng.random() < 0.5  # every line with a timestamp of one shape: the vectorised timestamp path
    for _ in range(rng.randrange(1, 60)):
        line = _line(rng, uniform).encode()
        for _ in range(rng.choice([0, 0, 1, 2])):
            line = _mutate(line, rng)
        lines.append(line)
        if rng.random() < 0.1:
            lines.append(b"node0:17:17 [0] NCCL INFO Channel 00/02 : 0 1\n")
    block = b"".join(lines)
    if rng.random() < 0.3:
        block = block.rstrip(b"\n")  # a last line without its newline
    if block:
        same_as_regex(block, first_line=rng.choice([1, 1000]))


def test_values_read_exactly():
    line = ("[2026-11-29 19:20:05.250000] nodeA:42:43 [3] NCCL INFO ReduceScatter: opCount ff sendbuff 0x1 "
            "recvbuff 0x2 count 123456789012345678 datatype 9 op 2 root -1 comm 0xabc [nranks=16] stream 0x1\n")
    cols = read_coll_columns(line.encode() * 3)
    assert cols is not None and cols.rows.tolist() == [0, 1, 2]
    assert cols.proc_names == [b"nodeA:42"] and cols.op_names == [b"ReduceScatter"] and cols.comm_names == [b"0xabc"]
    assert cols.count.tolist() == [123456789012345678] * 3 and cols.datatype.tolist() == [9] * 3
    batch, rest = scan_coll_block(line.encode(), 5, "f")
    assert rest == [] and batch.lines.tolist() == [5] and batch.tss[0] == pytest.approx(1795980005.25)


def test_many_distinct_values_grouped_by_hash():
    # more distinct prefixes than are peeled off one by one: the hash path, checked byte for byte
    lines = "".join(f"node{i % 40}:{i % 13}:1 [0] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x1 recvbuff 0x2 "
                    f"count {i} datatype {i % 10} op 0 root 0 comm 0x{i % 17 + 1:x} [nranks=8]\n" for i in range(2000))
    same_as_regex(lines.encode())
    cols = read_coll_columns(lines.encode())
    assert cols is not None and len(cols.rows) == 2000 and len(cols.proc_names) > 40
    assert np.array_equal(cols.count, np.arange(2000))


def test_big_block_read_in_pieces_same_rows(tmp_path, monkeypatch):
    import ncclscope.sources.coll.scan as scan

    monkeypatch.setattr(scan, "READER_BYTES", 16_000)  # pieces of ~16 KB: many cuts in a 200 KB block
    generate_run(tmp_path / "run", nranks=8, steps=120, fault="desync", seed=4)
    data = max((p for p in (tmp_path / "run").iterdir()), key=lambda p: p.stat().st_size).read_bytes()
    rng = random.Random(5)
    lines = data.splitlines(keepends=True)
    for i in rng.sample(range(len(lines)), 40):  # odd lines here and there, some on a piece's edge
        lines[i] = rng.choice([lines[i].replace(b"\n", b"\r\n"), b"[rank3]: " + lines[i], b"junk\n"])
    block = b"".join(lines)
    assert len(block) > 10 * scan.READER_BYTES
    same_as_regex(block, first_line=7)
    same_as_regex(block.rstrip(b"\n"), first_line=1)


def test_more_distinct_values_than_the_table_holds():
    # a new comm on every line: past MAX_GROUPS the compiled reader leaves lines to the regex, same rows
    n = coll_kernel.MAX_GROUPS + 300
    lines = "".join(f"node0:1:1 [0] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x1 recvbuff 0x2 count {i} "
                    f"datatype 7 op 0 root 0 comm 0x{i + 1:x} [nranks=8]\n" for i in range(n))
    same_as_regex(lines.encode())
    cols = read_coll_columns(lines.encode())
    assert cols is not None and len(cols.rows) >= coll_kernel.MAX_GROUPS


def test_arm_is_off_with_no_jit(monkeypatch):
    coll_kernel.disarm()
    monkeypatch.setenv("NCCLSCOPE_NO_JIT", "1")
    assert coll_kernel.arm() is False and coll_kernel.ready() is None


def test_common_shapes_all_taken():
    # every shape NCCL prints (timestamp with or without a fraction, or none; [dev] or not; any op,
    # count, root, comm, tail) is read by the reader itself, not left to the regex
    rng = random.Random(11)
    lines = []
    while len(lines) < 400:
        line = _line(rng)
        if line.startswith(("[2026-02-30", "[2026-11-29T", "[2026-11-29 19:20:05.123456789")):
            continue  # an impossible date, a 'T', 9 fraction digits: the regex's own cases
        lines.append(line)
    block = "".join(lines).encode()
    cols = read_coll_columns(block)
    assert cols is not None and cols.rows.tolist() == list(range(400))
    same_as_regex(block)
