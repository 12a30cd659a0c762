"""Culprits a backend already named are trusted: PyTorch's desync report (``rules.named.desync_named``), the DETAIL
check's mismatch, a broadcast whose size differs on one rank in the watchdog's own lines."""
from __future__ import annotations

import pytest
from class_cases import check
from ncclscope.rules.named import desync_named


def test_desync_report_lines_read_together():
    n = desync_named([([], 13, "ALLREDUCE"), ([2], 13, None)], world=[0, 1, 2, 3])
    assert n is not None and (n.culprits, n.seq, n.op) == ((2,), 13, "ALLREDUCE")
    n = desync_named([([1], 5, None), ([0, 2], 6, None)], world=[0, 1, 2, 3, 4, 5, 6, 7])
    assert n is not None and n.culprits == (0, 1, 2)
    every = desync_named([([], 39, "_ALLGATHER_BASE"), ([0, 1, 2, 3], 39, None)], world=[0])
    assert every is not None and every.culprits == () and every.seq == 39
    assert desync_named([([], 4, "ALLREDUCE")], world=[0, 1]) is None


@pytest.mark.parametrize("name", ["desync_report_names_lagging_rank", "desync_report_every_rank_joined",
                                  "detail_mismatch_broadcast_shape", "broadcast_size_differs_on_one_rank"])
def test_culprits_the_backend_named(name):
    check(name)
