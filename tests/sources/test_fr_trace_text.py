"""The Flight Recorder analyser's text report (``sources.fr_trace_text``): each ``missing ranks`` and ``error msg`` line
with its block's sequence number, group, collective and world size, in the forms PyTorch's releases print."""
from __future__ import annotations

from ncclscope.sources.fr_trace_text import FrTraceReport
from ncclscope.sources.torch_log import parse_torch_lines


def _reports(text: str) -> list[FrTraceReport]:
    lines = list(enumerate(text.strip("\n").splitlines(), 1))
    return [r for r in parse_torch_lines(lines, "fr.txt") if isinstance(r, FrTraceReport)]


def test_an_error_block_gives_its_culprits():
    got = _reports("""
Collective 12 at entry 11 errors
group info: 3:tp_group
collective: nccl:broadcast
input sizes: [[77]]
world size: 4
error msg: Culprit rank 1; Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective type: 'broadcast' does not match found collective type: 'all_reduce', Culprit rank 2; Error type: SIZE_OR_SYNTAX_MISMATCH, Expected input sizes: '[[77]]' does not match found input sizes: '[[78]]'
""")
    assert [(r.seq, r.pg, r.op, r.culprits, r.kinds, r.world) for r in got] == [
        (12, "3", "broadcast", [1, 2], ["COLLECTIVE_TYPE_MISMATCH", "SIZE_OR_SYNTAX_MISMATCH"], 4)]


def test_missing_ranks_in_each_release_s_form():
    newer = _reports("Not all ranks joining collective, sequence number: 4\ncollective: nccl:all_reduce\nmissing ranks: {1, 3}")
    middle = _reports("Not all ranks joining collective 5 at entry 4\ngroup info: 0:default_pg\nmissing ranks: {1}")
    oldest = _reports("Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce  Missing ranks "
                      "are {2}")
    assert [(r.seq, r.missing) for r in newer] == [(4, [1, 3])]
    assert [(r.seq, r.pg, r.missing) for r in middle] == [(5, "0", [1])]
    assert [(r.pg, r.op, r.missing) for r in oldest] == [("0", "all_reduce", [2])]


def test_lines_outside_a_block_are_left_alone():
    assert _reports("collective: nccl:all_reduce\nerror msg: Culprit rank 1; Error type: SIZE_OR_SYNTAX_MISMATCH") == []
