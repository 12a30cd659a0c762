"""Round twenty-three's cases (tests/data/classes23/), written from the earlier held-out sets' misreadings: a completed
nccl-tests sweep far below what NCCL's own search of its rings expects (``Pattern 4, ... nChannels N, bw B/B``) is
slow whatever the fabric (``metrics.link_floor``); a job across nodes that hangs at its start over NCCL's socket
transport where the hosts show InfiniBand (an IPoIB interface, ``NCCL_IB_HCA``) is a config error: the processes
cannot see the fabric (``verdict.sockets_explain``); a console logger's block head (Composer's ``[batch=8/8]:``) is a
progress print, at its end when its counter is."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes23")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def _pattern(nch: int, a: float, b: float, pattern: int = 4):
    from ncclscope.sources.records import NcclPattern

    return NcclPattern("f.log", 3, f"h:1:2 [0] NCCL INFO Pattern {pattern}, ...", "h", 1, 2, None, pattern, nch,
                       a, b, "NVL", "PIX")


def test_the_least_search_of_a_pattern_is_kept_and_absurd_lines_are_not():
    from ncclscope.model_build.shown import graph_searches, note_graph

    table: dict = {}
    for rec in (_pattern(12, 30, 30), _pattern(2, 40, 40), _pattern(0, 40, 40), _pattern(4, 1e9, 1e9),
                _pattern(8, 24, 12, pattern=1)):
        note_graph(table, rec)
    got = [(g.pattern, g.nchannels, g.capacity) for g in graph_searches(table)]
    assert got == [(1, 8, 96.0), (4, 2, 80.0)]


def test_nccl_22s_sideband_line_is_not_a_list_of_nics():
    from ncclscope.detectors.slow_transport import NIC_LISTED_RE

    assert not NIC_LISTED_RE.search("NET/IB : Using interface eth0 for sideband communication")
    assert NIC_LISTED_RE.search("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>")


def test_a_console_loggers_block_head_is_a_progress_print_at_its_end():
    from ncclscope.rules.healthy import work_done
    from ncclscope.sources.torch_log import PROGRESS_RE

    assert PROGRESS_RE.search("[batch=8/8]:") and PROGRESS_RE.search("[step=12/300]")
    assert not PROGRESS_RE.search("[batch=0/8]:")
    assert work_done("[batch=8/8]:", False, False, None) is not None
    assert work_done("[batch=3/8]:", False, False, None) is None
