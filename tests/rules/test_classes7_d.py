"""Round seven's cases (tests/data/classes7/c7d_*): slow runs that read healthy or hung. Two nccl-tests runs of the
same test in one input, the first far below a later one (a GPU pair without peer-to-peer); a program's own timings of
one collective, some groups far slower (and not a hang: the collectives completed); a GB10 system's QSFP port reached
through one of its two RoCE HCAs. Each class has a counter-case that stays healthy."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.detectors.slow_compare import slower_first, tables, timing_gaps
from ncclscope.metrics.link_floor import LinkFacts, expected_floor
from ncclscope.model import EventKind, Evidence, LogEvent
from ncclscope.sources.program_facts import printed_job, printed_timing

SET = CaseSet(DATA / "classes7")
MINE = SET.names("c7d_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def _rows(line0: int, bws: list[float], test: str = "all_reduce_perf", nranks: int = 2) -> list[dict]:
    return [{"file": "f", "line": line0 + i, "test": test, "nranks": nranks, "size": (32 << 20) << i, "busbw": bw}
            for i, bw in enumerate(bws)]


def test_the_first_run_is_judged_against_a_later_twin_of_the_same_test_and_ranks():
    slow, fast = _rows(10, [9.0, 9.1, 9.1]), _rows(30, [18.0, 18.2, 18.3])
    assert slower_first(tables(slow + fast)) is not None
    assert slower_first(tables(fast + slow)) is None  # the run asked about is the fast one
    assert slower_first(tables(slow + _rows(30, [12.0, 12.1, 12.2]))) is None  # 1.3x: not a gap
    assert slower_first(tables(slow + _rows(30, [18.0, 18.2, 18.3], nranks=4))) is None  # other ranks: unlike
    assert slower_first(tables(slow + _rows(30, [18.0, 18.2, 18.3], test="all_gather_perf"))) is None


def test_timing_lines_keep_sizes_and_mask_ids():
    a = printed_timing("[bench] dp_group 0 ranks [0, 8] allreduce avg 18.42 ms")
    b = printed_timing("[bench] dp_group 3 ranks [3, 11] allreduce avg 11.06 ms")
    assert a is not None and b is not None and a[2] == b[2] and a[0] == "allreduce" and a[1] == 18.42
    big = printed_timing("allreduce 64MB took 12.0 ms")
    small = printed_timing("allreduce 1MB took 0.4 ms")
    assert big is not None and small is not None and big[2] != small[2]  # other sizes: not compared
    assert printed_timing("WorkNCCL(SeqNum=4, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600021 milliseconds") is None
    fast, slow = printed_timing("subgroup 0 all_gather 1GiB busbw 21.6 GB/s"), printed_timing(
        "subgroup 2 all_gather 1GiB busbw 10.8 GB/s")
    assert fast is not None and slow is not None and fast[2] == slow[2] and slow[1] == 2 * fast[1]  # a rate: slower, longer
    assert printed_job("[bench] world=32 nodes=4 dp_groups=4") == (32, 4)
    assert printed_job("nodes=4") is None


def _timing(line: int, ms: float) -> LogEvent:
    return LogEvent(EventKind.PROGRAM_TIMING, None, "", Evidence("f", line, ""), None,
                    {"what": "allreduce", "ms": ms, "shape": "group # allreduce avg <t>"})


def test_a_slow_warm_up_line_alone_is_no_gap():
    assert timing_gaps([_timing(1, 30.0), _timing(2, 10.0), _timing(3, 10.2)]) == []
    assert len(timing_gaps([_timing(1, 30.0), _timing(2, 10.0), _timing(3, 16.0)])) == 1
    assert len(timing_gaps([_timing(1, 10.0), _timing(2, 16.0)])) == 1
    spike = [_timing(i, 10.0 + (i % 3) * 0.2) for i in range(1, 12)] + [_timing(12, 25.0)]
    assert timing_gaps(spike) == []  # one slow iteration among many is a spike
    assert len(timing_gaps(spike + [_timing(13, 24.0)])) == 1
    assert timing_gaps([_timing(i, 10.0 + 8 * (i % 2)) for i in range(100)]) == []  # a stream of iterations


def test_gb10_port_floor_only_with_one_roce_hca_listed():
    def facts(nics: int, gpu: str = "NVIDIA GB10", layer: str = "RoCE") -> LinkFacts:
        return LinkFacts(2, 2, (gpu,), "IB", layer, nics, nics, False, (), ())

    one = expected_floor(facts(1), ring=True)
    assert one is not None and one.gbs == 15.0 and "two RoCE HCAs" in one.reference
    both = expected_floor(facts(2), ring=True)
    assert both is not None and both.gbs < 2  # the general RoCE floor
    other = expected_floor(facts(1, gpu="NVIDIA L40S"), ring=True)
    assert other is not None and other.gbs < 2
