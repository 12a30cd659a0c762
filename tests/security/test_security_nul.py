"""NUL and control bytes in a log are data, not a new process: a NUL in a COLL line's host name (a hole
a crash left in the file, or a planted byte) is dropped as it is from every other line, so the line's
host is the host of its process's other lines. One NUL byte used to turn a hang into "unknown: rank 0 is
claimed by 2 processes". Both COLL readers (numpy, compiled) give the regex's rows."""
from __future__ import annotations

from pathlib import Path

import pytest
from coll_rows import rows, same_as_regex
from ncclscope.analysis import analyze_paths
from ncclscope.sources.coll import kernel as coll_kernel
from ncclscope.sources.coll import scan_coll_block
from ncclscope.synth import generate_run

LINE = (b"[2026-11-29 19:20:05.250000] %s:42:43 [3] NCCL INFO AllReduce: opCount %x sendbuff 0x1 recvbuff 0x2 "
        b"count 5 datatype 9 op 2 root -1 comm 0xabc [nranks=16]\n")
HOSTS = [b"nodeA\x00", b"\x00nodeA", b"no\x00deA", b"\x00\x00\x00nodeA"]


@pytest.fixture(params=["numpy", "compiled"])
def reader(request):
    if request.param == "compiled":
        assert coll_kernel.arm(), "the compiled COLL reader (numba) did not load"
    else:
        coll_kernel.disarm()
    yield request.param
    coll_kernel.disarm()


@pytest.mark.parametrize("host", HOSTS)
def test_a_nul_in_the_host_is_the_same_host(reader, host: bytes) -> None:
    block = b"".join(LINE % (h, i) for i, h in enumerate([b"nodeA", host, b"nodeA"]))
    same_as_regex(block)
    batch, rest = scan_coll_block(block, 1, "f")
    # the line with the NUL goes to the line parser, decoded as every line is: without its NUL
    assert [r[0] for r in rows(batch)] == [("nodeA", 42)] * 2
    assert [(n, text.split(" ")[2]) for n, text in rest] == [(2, "nodeA:42:43")]


def test_a_nul_in_a_coll_host_leaves_the_hang_a_hang(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    run = tmp_path / "run"
    generate_run(run, nranks=4, steps=10, fault="hang", seed=3)
    clean = analyze_paths([run], cache=False).decision
    assert clean.verdict.value == "hang"
    log = min(run.glob("*.nccl.log"))
    lines = log.read_bytes().split(b"\n")
    i = next(i for i, line in enumerate(lines) if b": opCount " in line)
    host = lines[i].split(b"] ", 1)[1].split(b":", 1)[0]
    lines[i] = lines[i].replace(host + b":", host[:2] + b"\x00" + host[2:] + b":", 1)
    log.write_bytes(b"\n".join(lines))
    got = analyze_paths([run], cache=False).decision
    assert got.verdict == clean.verdict and got.culprit_ranks == clean.culprit_ranks, got
