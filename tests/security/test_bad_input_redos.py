"""No regular expression in analyzer/sources backtracks catastrophically.

Each adversarial line below made one of the patterns quadratic before it was bounded (found by
tests/fuzz/redos_scan.py). Lines go through the public parse functions at 1 MB (they cut long
lines themselves) and straight into the pattern at 256 kB, where a quadratic pattern takes
minutes and a linear one milliseconds.
"""
from __future__ import annotations

import time

import pytest

from ncclscope.sources import flight_recorder as FR
from ncclscope.sources import nccl_log as N
from ncclscope.sources import nccl_tests as NT
from ncclscope.sources import ras as RAS
from ncclscope.sources import torch_log as T
from ncclscope.sources.env_file import parse_env_lines
from ncclscope.sources.hook_jsonl import parse_jsonl

LIMIT_S = 1.5  # per line; a linear pass over 1 MB takes well under 0.2 s

# (pattern, adversarial line builder): the builder takes a length in characters
PUMPS = {
    "INIT_RE digits": (N.INIT_RE, lambda n: "comm 0x2 rank 0 nranks 2 cudaDev " + "1" * n + "\x01"),
    "INIT_RE lazy rest": (N.INIT_RE, lambda n: "comm 0x2 rank 0 nranks 2 cudaDev 0 " * (n // 34) + "Init STAR"),
    "INIT_RE caller": (N.INIT_RE, lambda n: "nccl" * (n // 4) + " COMPLETE"),
    "CONN_RE spaces": (N.CONN_RE, lambda n: "Channel 00/0 : 0[0] -> 1[1] via P2P" + " " * n + "x\n"),
    "RING_CONN_OLD_RE spaces": (N.RING_CONN_OLD_RE, lambda n: "Ring 00 : 0[0] -> 1[1] via P2P" + " " * n + "x\n"),
    "CHANNELS_RE digits": (N.CHANNELS_RE, lambda n: "2 coll channels, " + "1" * n),
    "PREFIX_RE hosts": (N.PREFIX_RE, lambda n: "vm:1011:1011 " * (n // 13) + "NCCL"),
    "PREFIX_RE word": (N.PREFIX_RE, lambda n: "a" * n + " NCCL INFO"),
    "PG_RE open desc": (T.PG_RE, lambda n: "[PG ID 0 PG GUID 0(default_pg" * (n // 30)),
    "PG_RE guid": (T.PG_RE, lambda n: "[PG 1 PG GUID " * (n // 14)),
    "FAILURE_RE": (T.FAILURE_RE, lambda n: ("failure detected by watchdog at work sequence id: 1 PG status: last "
                                            "enqueued work: 1, last started work: 1") * (n // 100)),
    "DUMP_SIGNAL_RE": (T.DUMP_SIGNAL_RE, lambda n: "Received a dump signal due to a collective timeout from rank 1 "
                       * (n // 64)),
    "MISMATCH_RE": (T.MISMATCH_RE, lambda n: "Rank 1 is running collective: CollectiveFingerPrint(" * (n // 52)),
    "EXC_RE dots": (T.EXC_RE, lambda n: "a." * (n // 2) + "Erro"),
    "RANKS_LAUNCHED_RE": (RAS.RANKS_LAUNCHED_RE, lambda n: "1" * n),
    "RANK_IN_NAME_RE": (FR.RANK_IN_NAME_RE, lambda n: "1" * n + "x"),
    "ROW_RE spaces": (NT.ROW_RE, lambda n: "1 1 float sum -1 1.0 1.0 1.0 0" + " " * n + "x"),
    "RING_ORDER_RE": (N.RING_ORDER_RE, lambda n: "Channel 00/02 :" + " 10" * (n // 3) + " x"),
}


def _time(fn) -> float:
    """CPU seconds, not wall-clock: other jobs on a loaded CI machine must not fail the bound."""
    t = time.process_time()
    fn()
    return time.process_time() - t


@pytest.mark.parametrize("name", sorted(PUMPS))
def test_pattern_is_linear_on_pumped_line(name):
    rx, mk = PUMPS[name]
    line = mk(256 * 1024)
    assert _time(lambda: (rx.search(line), rx.match(line), rx.findall(line[:65536]))) < LIMIT_S, name


# lines that reach the patterns through the public parsers, each about 1 MB
NCCL_LINES = [
    "vm:1:1 [0] NCCL INFO comm 0x2 rank 0 nranks 2 cudaDev " + "1" * 1_000_000,
    "vm:1:1 [0] NCCL INFO ncclCommInitRank " + "nccl" * 250_000 + " COMPLETE",
    "vm:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P" + " " * 1_000_000 + "x",
    "vm:1:1 [0] NCCL INFO 2 coll channels, " + "1" * 1_000_000,
    "vm:1:1 [0] NCCL INFO " + "Trees [0] -1/-1/-1->0->1 " * 40_000,
    "a" * 1_000_000 + " NCCL INFO x",
    "NCCL " + "vm:1:1 " * 150_000,
]
TORCH_LINES = [
    "[rank0]:[E1129 19:37:36.29 ProcessGroupNCCL.cpp:1849] " + "[PG ID 0 PG GUID 0(default_pg" * 35_000,
    "[rank0]:" + "Received a dump signal due to a collective timeout from rank 1 last enqueued NCCL work" * 12_000,
    "Detected mismatch between collectives on ranks " + "Rank 1 is running collective: CollectiveFingerPrint(" * 20_000,
    "failure detected by watchdog " + "failure detected by watchdog at work sequence id: 1 PG status: " * 16_000,
    "  File \"" + "x" * 1_000_000,
    "a." * 500_000 + "Error",
    "Traceback (most recent call last)" + "\r" * 1_000_000,
]


@pytest.mark.parametrize("i", range(len(NCCL_LINES)))
def test_nccl_parser_bounded_on_megabyte_line(i):
    assert _time(lambda: N.parse_nccl_line(NCCL_LINES[i], "f", 1)) < LIMIT_S


@pytest.mark.parametrize("i", range(len(TORCH_LINES)))
def test_torch_parser_bounded_on_megabyte_line(i):
    assert _time(lambda: list(T.parse_torch_lines([(1, TORCH_LINES[i])], "f"))) < LIMIT_S


def test_other_text_parsers_bounded_on_megabyte_lines():
    big = "1" * 1_000_000
    assert _time(lambda: RAS.parse_ras_text("#0-0 (abc) OK\n" + "Rank 1 has launched " + big + "\n" + big, "r")) \
        < LIMIT_S
    assert _time(lambda: list(NT.parse_nccl_tests_lines([(1, "1 1 float sum -1 " + " " * 1_000_000 + "x"),
                                                        (2, "# " + "a" * 1_000_000)], "t"))) < LIMIT_S
    assert _time(lambda: list(parse_env_lines([(1, "exit=" + " " * 1_000_000 + "1 x"),
                                               (2, "NCCL_X=" + big)], "env.txt"))) < LIMIT_S
    assert _time(lambda: list(parse_jsonl([(1, '{"seq": 1, "op_type": "x", "active_duration": "' + big + '"}')],
                                          "completion_hook_rank0.jsonl"))) < LIMIT_S
    assert _time(lambda: FR.rank_from_name("1" * 100_000 + "x")) < LIMIT_S
