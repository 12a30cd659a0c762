"""At scale: a 64-rank run of about 1.2 M lines where one rank stopped early."""
from __future__ import annotations

import time

import pytest

from analyzer.analysis import analyze_paths
from analyzer.synth import generate_run


@pytest.mark.xdist_group("scale")
def test_64_ranks_1_2M_lines_hang_names_the_rank(tmp_path):
    truth = generate_run(tmp_path / "run", nranks=64, steps=1700, fault="hang", fault_rank=35, fault_step=1690)
    assert 1_100_000 < truth.lines < 1_300_000
    t = time.perf_counter()
    res = analyze_paths([tmp_path / "run"], cache=False)
    elapsed = time.perf_counter() - t
    assert res.decision.verdict.value == "hang"
    assert res.decision.culprit_ranks == (35,)
    assert len(res.run.collectives) > 1_100_000
    assert elapsed < 60, elapsed
