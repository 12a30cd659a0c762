"""A job without the hook whose NCCL logs print COLL lines: the live monitor makes the claim ``analyze`` makes
of NCCL's call counts (``rules.hang.behind_by_counts``): ranks behind a unanimous majority, once no new call
came for the stall time, are a likely hang; a pause with equal counts, or scattered counts, name nobody.

Own fixture in NCCL 2.18's INFO formats (``Init COMPLETE`` with commId, ``AllReduce: opCount ...``), one log per
process over two hosts; the incident's shape is NVIDIA/nccl#1111 (a training job that hangs in a collective
with no error from NCCL), see tests/live/data/SOURCE.md.
"""
from __future__ import annotations

from pathlib import Path

from judgements import assert_same_judgement, judgements
from ncclscope.live.monitor import LiveConfig, LiveMonitor

T = 1_796_000_000.0
WORLD = 8


def _init(host: str, pid: int, r: int) -> str:
    return (f"{host}:{pid}:{pid + 7} [{r % 4}] NCCL INFO comm 0x55d0{r}e0 rank {r} nranks {WORLD} cudaDev {r % 4} "
            f"nvmlDev {r % 4} busId {r % 4 + 1}b000 commId 0x93a1c2e07d4b11f0 - Init COMPLETE\n")


def _coll(host: str, pid: int, r: int, op: int) -> str:
    return (f"{host}:{pid}:{pid} [{r % 4}] NCCL INFO AllReduce: opCount {op:x} sendbuff 0x7f2a1c000000 recvbuff "
            f"0x7f2a1c000000 count 262144 datatype 7 op 0 root 0 comm 0x55d0{r}e0 [nranks={WORLD}] stream 0x55d1f0\n")


def _proc(r: int) -> tuple[str, int]:
    return f"trn-{r // 4:02d}", 41000 + r


def _write(d: Path, calls: dict[int, int], start: dict[int, int] | None = None) -> None:
    for r, n in calls.items():
        host, pid = _proc(r)
        lo = (start or {}).get(r, 0)
        with open(d / f"{host}.{pid}.nccl.log", "a") as f:
            f.write((_init(host, pid, r) if lo == 0 else "") + "".join(_coll(host, pid, r, i) for i in range(lo, n)))


def test_a_rank_behind_a_unanimous_majority_is_a_likely_hang_then_cleared(tmp_path: Path) -> None:
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    calls = {r: 30 for r in range(WORLD)}
    _write(tmp_path, calls)
    assert mon.poll_once(now=T) == []
    more = {r: (40 if r == 5 else 43) for r in range(WORLD)}
    _write(tmp_path, more, calls)
    assert mon.poll_once(now=T + 1) == []
    assert mon.poll_once(now=T + 5.5) == []  # the stall time: 5 s at least
    (a,) = mon.poll_once(now=T + 6.5)
    assert a["kind"] == "hang" and a["culprit_ranks"] == [5] and a["stuck"] is None
    assert a["certainty"]["level"] == "likely" and "7 ranks agree on 43 calls" in a["certainty"]["why"]
    assert a["message"].startswith("rank 5 issued 40 NCCL calls on communicator 0x93a1c2e07d4b11f0, others up to 43")
    assert mon.poll_once(now=T + 8) == []  # one alert per incident
    _write(tmp_path, {5: 43}, {5: 40})
    (c,) = mon.poll_once(now=T + 9)
    assert c["kind"] == "cleared" and c["culprit_ranks"] == [5]


def test_equal_counts_in_a_long_pause_and_scattered_counts_name_nobody(tmp_path: Path) -> None:
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    _write(tmp_path, {r: 43 for r in range(WORLD)})
    for k in range(0, 61, 5):
        assert mon.poll_once(now=T + k) == []
    scattered = tmp_path / "scattered"
    scattered.mkdir()
    mon = LiveMonitor(scattered, LiveConfig(console=False))
    _write(scattered, {r: 40 + r % 3 for r in range(WORLD)})  # a healthy job stopped at a random moment
    assert mon.poll_once(now=T) == [] and mon.poll_once(now=T + 60) == []


def test_counts_judged_alike_by_watch_once_and_analyze(tmp_path: Path) -> None:
    _write(tmp_path, {r: (40 if r == 5 else 43) for r in range(WORLD)})
    analyzed, live = judgements(tmp_path)
    assert analyzed["verdict"] == "hang" and analyzed["culprit_ranks"] == [5], analyzed["headline"]
    assert_same_judgement(analyzed, live)


def test_two_communicators_of_one_size_without_commid_make_no_claim(tmp_path: Path) -> None:
    for r in range(WORLD):
        host, pid = _proc(r)
        lines = [_init(host, pid, r).replace(" commId 0x93a1c2e07d4b11f0", ""),
                 _init(host, pid, r).replace(" commId 0x93a1c2e07d4b11f0", "").replace(f"0x55d0{r}e0", f"0x66e0{r}f0")]
        lines += [_coll(host, pid, r, i) for i in range(40 if r == 5 else 43)]
        (tmp_path / f"{host}.{pid}.nccl.log").write_text("".join(lines))
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    assert mon.poll_once(now=T) == [] and mon.poll_once(now=T + 60) == []
