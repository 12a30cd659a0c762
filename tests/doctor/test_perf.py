"""perf: busbw factors, sizes, the nccl-tests table read back by the nccl-tests parser, advice, and a real
gloo sweep on CPU through the launcher."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclscope.ingest import parse_file
from ncclscope.perf.advice import sweep_advice
from ncclscope.perf.bw import bandwidths, busbw_factor, elements_for, parse_ops, parse_size, sizes
from ncclscope.perf.table import OpResult, RankInfo, Row, Sweep, SweepParams, format_sweep
from ncclscope.sources.nccl_tests import parse_nccl_tests_lines
from ncclscope.sources.records import NcclTestsRow

DATA = Path(__file__).parent.parent / "data" / "doctor"


@pytest.mark.parametrize("op,n,factor", [
    ("all_reduce", 2, 1.0), ("all_reduce", 8, 1.75), ("all_reduce", 1, 0.0),
    ("all_gather", 8, 0.875), ("reduce_scatter", 4, 0.75), ("all_to_all", 2, 0.5), ("alltoall", 16, 15 / 16),
    ("broadcast", 8, 1.0), ("reduce", 8, 1.0),
])
def test_busbw_factors(op, n, factor):
    assert busbw_factor(op, n) == pytest.approx(factor)


def test_bandwidths_match_nccl_tests_sample():
    # 2 x H200 measurement: 134217728 B in 472.2 us -> 284.2 GB/s (busbw = algbw on 2 ranks)
    algbw, busbw = bandwidths(134217728, 472.2, "all_reduce", 2)
    assert algbw == pytest.approx(284.2, abs=0.1) and busbw == algbw
    # every row of a real-layout 8-GPU all_reduce_perf table satisfies busbw = algbw * 2(n-1)/n
    recs = parse_nccl_tests_lines(enumerate((DATA / "nccl_tests_all_reduce_8gpu.txt").read_text().splitlines(), 1), "t")
    rows = [r for r in recs if isinstance(r, NcclTestsRow)]  # the table's rows; the "# Rank" lines give ranks
    assert len(rows) == 16 and {r.nranks for r in rows} == {8} and {r.test for r in rows} == {"all_reduce_perf"}
    for r in rows:
        a, b = bandwidths(r.size, r.time_us, "all_reduce", 8)
        assert a == pytest.approx(r.algbw, abs=0.01) and b == pytest.approx(r.busbw, abs=0.02)


def test_sizes_ops_and_counts():
    assert sizes(8, 64, 2) == [8, 16, 32, 64]
    assert sizes(1, 100, 10) == [1, 10, 100]
    assert parse_size("256M") == 256 << 20 and parse_size("1K") == 1024 and parse_size("8") == 8
    assert parse_ops("all") == ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"]
    assert parse_ops("allreduce,all_to_all") == ["all_reduce", "all_to_all"]
    assert elements_for("all_gather", 8, 4) == 0 and elements_for("all_reduce", 8, 4) == 2
    assert elements_for("reduce_scatter", 40, 4) == 8
    for bad in (lambda: sizes(0, 8, 2), lambda: sizes(8, 4, 2), lambda: sizes(8, 64, 1), lambda: parse_size("x"),
                lambda: parse_ops("allreduse")):
        with pytest.raises(ValueError):
            bad()


def _sweep(busbw_at_256m: float = 300.0, wrong: int = 0, n: int = 2) -> Sweep:
    p = SweepParams("nccl", 8, 256 << 20, 2.0, 20, 5, True)
    ranks = [RankInfo(i, "h", 100 + i, str(i), "0000:07:00", "NVIDIA H200") for i in range(n)]
    rows = []
    for size in (8, 1 << 20, 256 << 20):
        bw = busbw_at_256m if size == 256 << 20 else 1.0
        t = size / (bw / busbw_factor("all_reduce", n)) / 1e3
        a, b = bandwidths(size, t, "all_reduce", n)
        rows.append(Row(size, size // 4, "float", "sum", -1, t, a, b, wrong if size == 8 else 0))
    res = OpResult("all_reduce", n, busbw_factor("all_reduce", n), tuple(rows))
    return Sweep(p, n, ranks, {"torch": "2.11.0", "nccl": "2.28.9", "cuda": "13.0"}, [res])


def test_table_is_read_back_by_nccl_tests_parser():
    sweep = _sweep(n=4)
    text = format_sweep(sweep)
    rows = [r for r in parse_nccl_tests_lines(enumerate(text.splitlines(), 1), "perf.txt") if isinstance(r, NcclTestsRow)]
    assert [r.size for r in rows] == [8, 1 << 20, 256 << 20]
    assert {r.test for r in rows} == {"all_reduce"} and {r.nranks for r in rows} == {4}
    assert rows[-1].busbw == pytest.approx(300.0, abs=0.01)
    assert "#  size" not in text and "#       size         count      type   redop    root     time   algbw   busbw" in text


def test_advice_from_sweep():
    assert sweep_advice(_sweep(300.0).results, "nvlink") == []
    low = sweep_advice(_sweep(40.0).results, "nvlink", {"NCCL_P2P_DISABLE": "1"})
    assert any("far below NVLink" in a and "NCCL_P2P_DISABLE=1" in a for a in low)
    assert any(a.startswith("NCCL_P2P_DISABLE=1 was set") for a in low)
    assert sweep_advice(_sweep(15.0).results, "pcie") == []
    assert any("far below PCIe" in a for a in sweep_advice(_sweep(2.0).results, "pcie"))
    assert any("wrong element" in a for a in sweep_advice(_sweep(300.0, wrong=3).results, "nvlink"))
    short = _sweep(300.0)
    short.results[0] = OpResult("all_reduce", 2, 1.0, short.results[0].rows[:2])
    assert any("--max-bytes 256M" in a for a in sweep_advice(short.results, "nvlink"))


@pytest.mark.slow
def test_real_gloo_sweep_on_cpu(tmp_path, monkeypatch, capsys):
    from ncclscope.analysis import analyze_paths
    from ncclscope.cli import main

    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")  # keep gloo's sockets on loopback
    out = tmp_path / "run"
    rc = main(["perf", "--backend", "gloo", "--nproc", "2", "--max-bytes", "1M", "--ops", "all_reduce,all_gather",
               "--iters", "3", "--warmup", "1", "--out", str(out), "--timeout", "120"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert "# ncclscope perf: all_reduce nranks 2" in printed and "# saved:" in printed
    parsed = parse_file(out / "perf.txt", "perf.txt")
    assert parsed.fmt == "nccl_tests" and parsed.problem is None
    rows = [r for r in parsed.records if isinstance(r, NcclTestsRow)]
    assert {r.test for r in rows} == {"all_reduce", "all_gather"} and {r.nranks for r in rows} == {2}
    assert [r.size for r in rows if r.test == "all_reduce"] == sizes(8, 1 << 20, 2)
    assert all(r.time_us > 0 for r in rows)
    for r in rows:
        _a, b = bandwidths(r.size, r.time_us, r.test, 2)
        assert r.busbw == pytest.approx(b, abs=0.011)
    data = json.loads((out / "perf.json").read_text())
    assert data["backend"] == "gloo" and data["nranks"] == 2 and data["link"] == "gloo"
    assert [t["test"] for t in data["tests"]] == ["all_reduce", "all_gather"]
    assert all(r["wrong"] == 0 for t in data["tests"] for r in t["results"])
    assert any("--max-bytes 256M" in a for a in data["advice"])
    run = analyze_paths([out]).run
    assert len(run.nccl_tests) == len(rows)
