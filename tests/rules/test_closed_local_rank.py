"""A process that died with no rank on its lines (Python's 'Fatal Python error: Segmentation fault', an unranked
signal) is named by what its neighbours' NCCL proxies saw: the one local rank that the other processes of its host
report as 'Connection closed by localRank N', mapped to the global rank of the process on device N of that host (on a
one-node job, the local rank itself). A teardown, where the neighbours report several local ranks, names nobody."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths
from ncclscope.model import Verdict
from ncclscope.rules.local_rank import ClosedLocalRank, closed_local_rank, global_rank, reporter


def _init(host: str, base_pid: int, ranks: range, nranks: int) -> list[str]:
    return [f"{host}:{base_pid + d}:{base_pid + d + 800} [{d}] NCCL INFO comm 0x55{r}a rank {r} nranks {nranks} "
            f"cudaDev {d} nvmlDev {d} busId {d + 1}b000 commId 0x77aa - Init COMPLETE" for d, r in enumerate(ranks)]


def _closed(host: str, base_pid: int, who: range, local: int) -> list[str]:
    return [f"{host}:{base_pid + d}:{base_pid + d + 900} [{d}] NCCL INFO [Service thread] Connection closed by "
            f"localRank {local}" for d in who]


SEGV = ["Fatal Python error: Segmentation fault", "", "Thread 0x00007f3a1bfff640 (most recent call first):",
        '  File "/usr/lib/python3.10/threading.py", line 324 in wait']


def _run(tmp_path: Path, lines: list[str]):
    p = tmp_path / "job.log"
    p.write_text("\n".join(lines) + "\n")
    return analyze_paths([p], cache=False).decision


def test_one_node_segfault_named_by_its_neighbours(tmp_path: Path) -> None:
    d = _run(tmp_path, _init("gpu-n50", 338, range(8), 8) + SEGV + _closed("gpu-n50", 338, range(7), 7))
    assert d.verdict == Verdict.CRASH and d.culprit_ranks == (7,), d.headline
    assert "rank 7" in d.headline


def test_second_node_maps_the_device_to_its_global_rank(tmp_path: Path) -> None:
    lines = _init("node-a", 100, range(0, 4), 8) + _init("node-b", 200, range(4, 8), 8)
    d = _run(tmp_path, lines + SEGV + _closed("node-b", 200, range(0, 3), 3))
    assert d.verdict == Verdict.CRASH and d.culprit_ranks == (7,), d.headline


def test_a_teardown_pattern_names_nobody(tmp_path: Path) -> None:
    lines = _init("gpu-n50", 338, range(4), 4) + SEGV
    lines += _closed("gpu-n50", 338, (1, 2), 0) + _closed("gpu-n50", 338, (0, 1), 3)
    d = _run(tmp_path, lines)
    assert d.verdict == Verdict.CRASH and d.culprit_ranks == ()


def test_python_fatal_error_is_a_crash(tmp_path: Path) -> None:
    d = _run(tmp_path, _init("gpu-n50", 338, range(2), 2) + ["[rank1]: Fatal Python error: Segmentation fault"])
    assert d.verdict == Verdict.CRASH and d.culprit_ranks == (1,)


def test_rule() -> None:
    assert reporter("gpu-n50:343:1213 [5] NCCL INFO [Service thread] Connection closed by localRank 7") == \
        ("gpu-n50", 343, 5)
    one = closed_local_rank([("h", 1, 0, 7), ("h", 2, 1, 7), ("h", 8, 7, 7)])  # the last is its own teardown
    assert one == ClosedLocalRank("h", 7, 2)
    assert closed_local_rank([("h", 1, 0, 7)]) is None  # one witness
    assert closed_local_rank([("h", 1, 0, 7), ("h", 2, 1, 7), ("g", 3, 0, 1), ("g", 4, 2, 1)]) is None  # two hosts
    assert global_rank(ClosedLocalRank("h", 3, 2), {3: 11}, False, 16) == 11
    assert global_rank(ClosedLocalRank("h", 3, 2), {}, True, 8) == 3
    assert global_rank(ClosedLocalRank("h", 3, 2), {}, False, 16) is None
    assert global_rank(ClosedLocalRank("h", 9, 2), {}, True, 8) is None
