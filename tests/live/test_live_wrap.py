"""A log hard-wrapped at a terminal's width, tailed while it is written by a writer that flushes half lines:
the monitor joins the pieces of a wrapped line that arrive in different polls as ``analyze`` joins them in
the whole file (``sources.lines.rejoin_wrapped``), so the live alert is the one ``watch --once`` gives.

Own fixture: torchrun's ``[rankN]:`` heads over PyTorch 2.5's watchdog lines (the shape of
hiyouga/LlamaFactory#7396: a timeout in one ALLREDUCE on three of four ranks, each saying its last enqueued
and completed work), hard-wrapped at 100 columns as a terminal paste does (the shape of huggingface/open-r1#620),
see tests/live/data/SOURCE.md.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from judgements import assert_same_judgement, judgements
from ncclscope.live.monitor import WRAP_HOLD_S, LiveConfig, LiveMonitor, open_wrap

WIDTH = 100
T = 1_796_000_000.0


def _lines() -> list[str]:
    out = []
    for r in (0, 2, 1):
        ts = f"E1201 10:14:{20 + r:02d}.31{r}402118"
        out.append(f"[rank{r}]:[{ts} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
                   f"timeout: WorkNCCL(SeqNum=2207, OpType=ALLREDUCE, NumelIn=8392704, NumelOut=8392704, "
                   f"Timeout(ms)=600000) ran for 60003{r} milliseconds before timing out.")
        out.append(f"[rank{r}]:[{ts} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Exception "
                   f"(either an error or timeout) detected by watchdog at work: 2207, last enqueued NCCL work: "
                   f"2207, last completed NCCL work: 2206.")
    return out


def _wrapped(lines: list[str]) -> bytes:
    pieces = [ln[i:i + WIDTH] for ln in lines for i in range(0, len(ln), WIDTH)]
    return ("\n".join(pieces) + "\n").encode()


def _verdict(alerts: list[dict]) -> list[tuple]:
    return [(a["kind"], a["culprit_ranks"], a["stuck"], a.get("waiting_ranks")) for a in alerts]


@pytest.mark.parametrize("chunk", [37, 100, 161])
def test_wrapped_lines_split_across_polls_are_joined(tmp_path: Path, chunk: int) -> None:
    data = _wrapped(_lines())
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "stderr.log").write_bytes(data)
    once = LiveMonitor(whole, LiveConfig(console=False, write=False))
    want = once.run_once()
    assert [a["stuck"] for a in want] == [{"pg": "0", "seq": 2207, "op": "allreduce"}], want
    assert want[0]["certainty"]["level"] == "confirmed"
    analyzed, live = judgements(whole)
    assert_same_judgement(analyzed, live)

    tail = tmp_path / "tail"
    tail.mkdir()
    mon = LiveMonitor(tail, LiveConfig(console=False))
    got: list[dict] = []
    t = T
    with open(tail / "stderr.log", "ab", buffering=0) as f:
        for i in range(0, len(data), chunk):  # the writer flushes every `chunk` bytes: mid-line, mid-wrap
            f.write(data[i:i + chunk])
            t += 0.02  # polls closer than the 2 s the watchdog lines of all ranks are gathered in
            got += mon.poll_once(now=t)
    for _ in range(int((WRAP_HOLD_S + 3) / 0.25)):  # the last pieces wait, then the 2 s gathering of watchdog lines
        t += 0.25
        got += mon.poll_once(now=t)
    assert _verdict(got) == _verdict(want)
    assert got[0]["message"] == want[0]["message"]


def test_open_wrap_holds_only_what_may_continue() -> None:
    w = "x" * WIDTH
    assert open_wrap([(1, "short"), (2, w), (3, w)]) == 1  # two pieces of one width: more may follow
    assert open_wrap([(1, w), (2, w), (3, "end of it")]) == 3  # a shorter piece ended the wrapped line
    assert open_wrap([(1, w), (3, w)]) == 1  # not consecutive: only the last may continue
    assert open_wrap([(1, "y" * 300)]) == 1  # wider than any terminal: a line of its own
    assert open_wrap([(i, w) for i in range(1, 40)]) == 39 - 12  # at most MAX_WRAP_PIECES held
    nccl = "gpu-a17:40211:40230 [0] NCCL INFO " + "y" * (WIDTH - 34)
    assert len(nccl) == WIDTH and open_wrap([(1, nccl), (2, nccl), (3, nccl)]) == 2  # each line starts a line: only the last may be a first piece
    assert open_wrap([]) == 0
