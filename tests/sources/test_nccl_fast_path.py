"""The fast head (``FAST_RE``) of ``parse_nccl_line`` gives exactly the records of the general path
(``parse_nccl_line_regex``) on every NCCL line of the real logs in samples/ and tests/data, the real
corpus when present, a generated run, and lines in the shapes next to the fast head's edges."""
from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.sources.nccl_log import FAST_RE, parse_nccl_line, parse_nccl_line_regex
from ncclscope.synth import generate_run

from conftest import CORPUS, NO_CORPUS

ROOT = Path(__file__).resolve().parents[2]
MAX_FILE = 64 * 1024 * 1024


def _lines(path: Path) -> list[tuple[int, str]]:
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        text = f.read()
    return list(enumerate(text.splitlines(keepends=True), 1))


def _compare(paths: list[Path]) -> tuple[int, int]:
    """(lines compared, lines the fast head took); asserts the two paths agree on each."""
    seen = fast = 0
    for path in paths:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_FILE:
            continue
        for lineno, text in _lines(path):
            if "NCCL " not in text and "] INFO " not in text and " WARN " not in text:
                continue
            seen += 1
            fast += FAST_RE.match(text) is not None
            assert parse_nccl_line(text, path.name, lineno) == parse_nccl_line_regex(text, path.name, lineno), \
                f"{path}:{lineno}: {text!r}"
    return seen, fast


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix not in (".pkl", ".pickle", ".gz", ".png"))


def test_samples_and_test_data_agree() -> None:
    seen, fast = _compare(_files(ROOT / "samples") + _files(ROOT / "tests" / "data"))
    assert seen > 1000 and fast > 100  # the comparison read real lines, and the fast head took some


def test_generated_run_agrees(tmp_path: Path) -> None:
    generate_run(tmp_path / "run", nranks=16, steps=30, fault="hang", fault_rank=5, seed=3)
    seen, fast = _compare(_files(tmp_path / "run"))
    assert fast > 16 * 40  # ring, channel, connection lines of every rank


@pytest.mark.skipif(not CORPUS.is_dir(), reason=NO_CORPUS)
def test_corpus_agrees() -> None:
    seen, _ = _compare(_files(CORPUS))
    assert seen > 0


HEAD = "[2026-03-04 05:06:07.123456] gpu7:4242:4250 [3] NCCL INFO "
EDGES = [
    HEAD + "Channel 02/1 : 12[3] -> 13[4] via P2P/CUMEM/read\n",
    HEAD + "Channel 02/0 : 12[3a000] -> 20[1b000] [send] via NET/IB/1/GDRDMA\r\n",
    HEAD + "Channel 02/0 : 12[3] -> 20[1] [receive] via NET/IB/1(0)/GDRDMA\n",  # "(" is outside the fast via
    HEAD + "Channel 02/0 : 12[3] -> 20[1] via P2P/direct pointer/read\n",  # a space in the transport
    HEAD + "Channel 02/0 : 12[3] -> 20[1] via SHM/direct/direct  \n",  # trailing blanks
    HEAD + "Channel 02/0 : 12[3] -> 20[1] via opCount\n",  # "opCount" sends a line down the COLL branch
    HEAD + "Channel 02 : 12[3] -> 20[1] via P2P/IPC\n",  # no /MM: the general regex
    HEAD + "Channel 05/02 :    0   1   2   3 ...\n",
    HEAD + " Ring 00 : 7 -> 0 -> 1\n",  # two blanks after INFO
    HEAD + "Ring 00 : -1 -> 0 -> 1\n",
    HEAD + "Ring 00 : 7 -> 0 -> 1 extra\n",
    HEAD + "Ring 00 : 3 -> 4 [send] via NET/IB/0\n",
    HEAD + "Ring 00 :    0   1\n",
    HEAD + "Ring 1234567 : 7 -> 0 -> 1\n",  # past the fast bounds: the general regex
    HEAD + "Connected all rings, use ring PXN 0 GDR 1\n",
    HEAD + "Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1\n",
    HEAD + "comm 0x5a0 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x99 - Init START\n",
    HEAD.replace("INFO ", "INFO"),  # an empty message
    "gpu7:4242:4250 [3] NCCL INFO Ring 00 : 7 -> 0 -> 1\n",  # no timestamp (most releases)
    "[rank3]:gpu7:4242:4250 [3] NCCL INFO Ring 00 : 7 -> 0 -> 1\n",  # a wrapper's prefix: the search
    "0.0009gpu7:4242:4250 [3] NCCL INFO Ring 00 : 7 -> 0 -> 1\n",  # glued text in front of the host
    "gpu7:4242:4250 [3] NCCL WARN Ring 00 : 7 -> 0 -> 1\n",
    "gpu7:4242:4250 [3] init.cc:12 NCCL INFO Ring 00 : 7 -> 0 -> 1\n",
    "gpu7:4242:4250 [3] 12.5 NCCL INFO Ring 00 : 7 -> 0 -> 1\n",
    "[2026-03-04T05:06:07] gpu7:4242:4250 [3] NCCL INFO Ring 00 : 7 -> 0 -> 1\n",
    "[2026-03-04 05:06:07.1] gpu-7.local:4242:4250 [3] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n",
    HEAD + "Channel 00/0 : 0[0] -> 1[1] via " + "P2P/" * 40 + "\n",  # a transport past the fast bound
    HEAD + "Channel 00/1 : 0[7000] -> 12[88000] [send] via NET/IB/1/GDRDMA/Shared\n",  # GDR behind a later suffix
]


@pytest.mark.parametrize("text", EDGES)
def test_edges_agree(text: str) -> None:
    assert parse_nccl_line(text, "f.log", 9) == parse_nccl_line_regex(text, "f.log", 9)


def test_fast_head_takes_the_common_forms() -> None:
    for text in EDGES[:2] + [EDGES[9], EDGES[18]]:
        assert FAST_RE.match(text) is not None and FAST_RE.match(text).lastindex is not None, text


def test_memos_stay_bounded() -> None:
    from ncclscope.sources import nccl_log

    for i in range(nccl_log._MEMO_MAX + 10):
        assert parse_nccl_line(f"{HEAD}Some message {i} no model reads\n") is None
        parse_nccl_line(f"[2026-03-04 05:06:07.{i:06d}] gpu7:4242:4250 [3] NCCL INFO Ring 00 : 7 -> 0 -> 1\n")
    assert len(nccl_log._NOTHING_MEMO) <= nccl_log._MEMO_MAX and len(nccl_log._TS_MEMO) <= nccl_log._MEMO_MAX
    long = HEAD + "x" * 300 + "\n"  # a message no model reads, longer than any the memo keeps
    assert parse_nccl_line(long) is None and long[len(HEAD):].strip() not in nccl_log._NOTHING_MEMO


MEMO_MESSAGES = [
    "NCCL_IB_HCA set by environment to mlx5", "Pattern 4, crossNic 0, nChannels 16, bw 40.000000/40.000000, type NVL/PIX, "
    "sameChannels 1", "16 coll channels, 16 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
    "Connected all rings, use ring PXN 0 GDR 1", "NCCL version 2.28.9+cuda12.9", "Using network IB",
    "NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.10<0>", "Channel 00/16 :    0    1    2    3",
    "Trees [0] 2/-1/-1->1->0 [1] 2/-1/-1->1->0", "Init timings - ncclCommInitRankConfig: rank 1 nranks 4 total 3.21 "
    "(kernels 0.41, alloc 0.02)", "comm 0x55f561067a8c rank 1 nRanks 4 nNodes 1 localRanks 4 localRank 1 MNNVL 0",
    "AllReduce: 1024 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}", "cudaDriverVersion 12090",
]


def test_a_remembered_message_reads_as_the_general_path_reads_it() -> None:
    # each message under several heads, twice over: the second time from the memo, the same records; a record
    # holding a list or dict (a ring order, trees, timings) is made afresh for each line, never shared
    recs = []
    for round_ in range(2):
        for i, msg in enumerate(MEMO_MESSAGES):
            for head in (HEAD, f"[2026-03-04 05:06:0{round_}.{i:06d}] gpu{i}:{40 + i}:{50 + i} [{i % 8}] NCCL INFO "):
                text = head + msg + "\n"
                got = parse_nccl_line(text, "f", i + 1)
                assert got == parse_nccl_line_regex(text, "f", i + 1), text
                recs.append(got)
    lists = [v for r in recs if r is not None for v in r.__reduce__()[1] if isinstance(v, (list, dict))]
    assert lists and len({id(v) for v in lists}) == len(lists)


def test_record_memo_stays_bounded() -> None:
    from ncclscope.sources import nccl_log

    for i in range(nccl_log._MEMO_MAX + 10):
        parse_nccl_line(f"{HEAD}NCCL_X{i} set by environment to {i}\n")
    assert 0 < len(nccl_log._RECORD_MEMO) <= nccl_log._MEMO_MAX
