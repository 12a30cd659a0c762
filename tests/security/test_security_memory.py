"""Memory follows the input, not the count of its lines or a size it claims.

A log of empty or very short lines once cost about 280 bytes a line in the parse (10 MB of empty lines: 2.7 GB):
every line that is not a COLL row was a Python object until its whole 16 MB block was read. A block now holds at
most ``BLOCK_LINES`` lines, the newline offsets of a block of short lines are found a piece at a time, and blank
lines go no further than their block. A pickle that makes one stored bytes object into a new bytearray again and
again is refused at a budget while it loads, and a world size claimed beside a few ranks sizes no rank list.
Peak memory is the kernel's count for the processes (``getrusage``), never a time.
"""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, SAMPLES
from ncclscope.analysis import analyze_paths
from ncclscope.ingest import blocks, parse_file
from ncclscope.report import json_text
from ncclscope.rules import bounded_world
from ncclscope.safe_pickle import UnsafePickleError, loads_plain

BOUND_MB = 600  # the whole analysis of 10 MB of empty lines beside an NCCL log (it took 2.7 GB)

_PEAK = """
import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _peak_kb(argv: list[str]) -> tuple[int, int]:
    """(exit status, the largest peak resident memory of any process of ``argv``'s tree, KB), measured by a fresh
    process that runs nothing else (RUSAGE_CHILDREN of the test process would hold earlier tests' children)."""
    p = subprocess.run([sys.executable, "-c", _PEAK, *argv], capture_output=True, text=True, timeout=900, cwd=ROOT,
                       check=True)
    rc, kb = p.stdout.split()
    return int(rc), int(kb)


@pytest.mark.slow
def test_ten_megabytes_of_empty_lines_beside_an_nccl_log_stay_under_the_bound(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "vm.820.nccl.log").write_bytes((SAMPLES / "gpu_hang" / "vm.820.nccl.log").read_bytes())
    (run / "empty.log").write_bytes(b"\n" * 10_000_000)
    rc, kb = _peak_kb([sys.executable, "-m", "ncclscope", "analyze", "--no-cache", "--json", str(run)])
    assert rc == 0
    assert kb < BOUND_MB * 1024, f"peak {kb // 1024} MB"


def _traced_peak(fn, *args):
    """(what ``fn(*args)`` returns, the peak of Python's and numpy's allocations while it ran, bytes)."""
    tracemalloc.start()
    try:
        out = fn(*args)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_log_of_empty_lines_is_parsed_in_memory_of_a_block_not_of_the_file(tmp_path, monkeypatch):
    """200,000 empty lines in blocks of 1,024 lines: the parse's own allocations stay within a block's (56 MB when
    the whole file's lines were held, 280 bytes a line), and the file's end is still its last line."""
    monkeypatch.setattr(blocks, "BLOCK_LINES", 1024)
    log = tmp_path / "empty.log"
    log.write_bytes(b"[rank0]: NCCL INFO comm 0x1 rank 0 nranks 2\n" + b"\n" * 200_000)
    parsed, peak = _traced_peak(parse_file, log, "empty.log")
    assert parsed.problem is None and parsed.end is not None
    assert (parsed.end.line, parsed.end.text) == (200_001, "")
    assert peak < 8 << 20, f"{peak >> 20} MB"


@pytest.mark.parametrize("line", [b"x\n", b" \r\n"])
def test_a_log_of_short_lines_is_parsed_in_memory_of_a_block_not_of_the_file(tmp_path, monkeypatch, line):
    """Lines the line parsers do read (each a Python object while its block is read): 20,000 of them in blocks of
    256 lines cost the parse a block's worth (5.6 MB when the whole file's lines were held)."""
    monkeypatch.setattr(blocks, "BLOCK_LINES", 256)
    log = tmp_path / "short.log"
    log.write_bytes(b"[rank0]: NCCL INFO comm 0x1 rank 0 nranks 2\n" + line * 20_000)
    parsed, peak = _traced_peak(parse_file, log, "short.log")
    assert parsed.problem is None and parsed.end is not None and parsed.end.line == 20_001
    assert peak < 2 << 20, f"{peak >> 20} MB"


def test_blocks_hold_at_most_block_lines_whatever_their_bytes(tmp_path):
    log = tmp_path / "mixed.log"
    log.write_bytes(b"\n" * 300_000 + b"y" * 200 + b"\n" + b"ab\n" * 300_000)
    pieces = list(blocks.iter_blocks(log))
    assert max(len(nl) for _, _, nl in pieces if nl is not None) <= blocks.BLOCK_LINES
    assert sum(len(nl) for _, _, nl in pieces if nl is not None) == 600_001
    # each piece is whole lines, numbered on from the last
    line = 1
    for first, block, nl in pieces:
        assert first == line and block.endswith(b"\n") and np.array_equal(nl, blocks.newline_offsets(block))
        line += len(nl)


def _bytearray_bomb(copies: int, size: int = 4 << 20) -> bytes:
    """A protocol 2 pickle: one ``size`` bytes object stored once, then ``copies`` bytearrays made of it (about 20
    bytes of pickle each): ``{"entries": [b, bytearray(b), ...]}``."""
    call = b"cbuiltins\nbytearray\nh\x03\x85R"  # GLOBAL, BINGET 3, TUPLE1, REDUCE
    return (b"\x80\x02}q\x00(X\x07\x00\x00\x00entriesq\x01]q\x02(B" + size.to_bytes(4, "little") + b"\x00" * size
            + b"r\x03\x00\x00\x00" + call * copies + b"eu.")


def test_a_pickle_rebuilding_one_stored_object_is_refused_as_it_loads():
    """2,000 bytearrays of one 4 MB object from 4 MB of pickle would be 8 GB: refused at the budget, having built
    a few times the file."""
    data = _bytearray_bomb(2000)
    assert len(data) < 5 << 20

    def load():
        with pytest.raises(UnsafePickleError, match="builds more than"):
            loads_plain(data)

    _, peak = _traced_peak(load)
    assert peak < 64 << 20, f"{peak >> 20} MB"
    # a bytearray or two of it, as a real pickle may hold, still loads
    assert len(loads_plain(_bytearray_bomb(2))["entries"]) == 3


def test_a_plain_pickle_with_bytearrays_sets_and_bytes_loads_at_every_protocol():
    obj = {"entries": [{"b": bytearray(b"x" * 1000), "s": {1, 2, 3}, "f": frozenset("ab"), "e": b"\x00" * 5000}
                       for _ in range(200)]}
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert loads_plain(pickle.dumps(obj, protocol=protocol)) == obj


def _hook_only(folder: Path, world: int, ranks: range) -> Path:
    folder.mkdir()
    for r in ranks:
        start = {"type": "start", "t": 1.0, "rank": r, "world": world, "local_rank": r % 8, "host": "n1",
                 "pid": 500 + r, "backend": "nccl"}
        colls = [{"type": "coll", "t": 2.0 + i, "rank": r, "pg": "0", "seq": i, "op": "allreduce"} for i in range(1, 4)]
        (folder / f"ncclscope-rank{r}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [start, *colls]))
    return folder


def test_a_world_claimed_beside_one_rank_sizes_nothing(tmp_path):
    """A hook record claiming 2^20 ranks beside the one rank seen made a 132 MB report and 750 MB of memory: the
    claim is said as a problem and not believed; the ranks seen are judged."""
    a = analyze_paths([_hook_only(tmp_path / "claim", 1 << 20, range(1))], cache=False)
    assert a.run.job.world_size is None
    assert len(a.run.ranks()) <= 1
    assert any("world of 1048576 ranks is claimed" in p and "not believed" in p for p in a.run.problems)
    assert len(json_text(a)) < 200_000


def test_a_real_world_beside_few_ranks_is_still_believed(tmp_path):
    """Rank logs of 4 of 1,024 ranks: the world is told, and the ranks missing from the input are said."""
    a = analyze_paths([_hook_only(tmp_path / "few", 1024, range(4))], cache=False)
    assert a.run.job.world_size == 1024
    assert not any("not believed" in p for p in a.run.problems)


def test_bounded_world_counts_the_ranks_a_claim_adds_not_the_highest_seen():
    assert bounded_world(1 << 20, [0, (1 << 20) - 1]) == [0, (1 << 20) - 1]
    assert bounded_world(8, [0, 7]) == list(range(8))
    assert bounded_world(64, [0, 63]) == [0, 63]


def test_a_traceback_of_a_hundred_thousand_frames_keeps_its_innermost_few(tmp_path):
    from ncclscope.sources.records import DistError
    from ncclscope.sources.torch_log import MAX_FRAMES

    log = tmp_path / "rank0.log"
    log.write_text("Traceback (most recent call last):\n"
                   + "".join(f'  File "/job/train.py", line {i}, in step\n' for i in range(1, 100_001))
                   + "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system "
                     "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n")
    errors = [r for r in parse_file(log, "rank0.log").records if isinstance(r, DistError)]
    assert errors and MAX_FRAMES <= len(errors[0].frames) <= 2 * MAX_FRAMES
    assert errors[0].frames[-1] == "/job/train.py:100000 in step"
