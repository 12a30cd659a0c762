"""NCCL lines whose head was cut or never printed, NCCL 2.0's heads without the word, and records of two
processes glued on one line: each read as what it is, no rank invented (shapes of NVIDIA/nccl#1170,
horovod#666, vllm#10626)."""
from __future__ import annotations

from pathlib import Path

import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.sources import records as R
from ncclscope.sources.lines import maybe_nccl, rejoin_wrapped, split_glued
from ncclscope.sources.nccl_log import parse_nccl_line

ERR12 = "NET/IB : Got completion from peer 10.20.1.14<53714> with error 12, opcode 0, len 0, vendor err 129"


@pytest.mark.parametrize("line", [
    f":3905 [5] transport/net_ib.cc:1696 NCCL WARN {ERR12}",  # host and pid cut
    f"7:3905 [5] transport/net_ib.cc:1696 NCCL WARN {ERR12}",  # cut inside the pid
    f"41367:3905 [5] NCCL WARN {ERR12}",  # host cut at its colon
    f"NCCL WARN {ERR12}",  # no head at all
    f"2026-02-05 10:51:09 NCCL WARN {ERR12}",  # behind a collector's clock
    f"10:51:09.412 NCCL WARN {ERR12}",
    f"[2026-02-05 10:51:09] NCCL WARN {ERR12}",  # NCCL's own timestamp kept, host:pid:tid dropped
])
def test_cut_heads_are_headless_warnings(line):
    rec = parse_nccl_line(line + "\n", "f.log", 3)
    assert isinstance(rec, R.NcclWarn)
    assert (rec.host, rec.pid, rec.tid) == ("", 0, 0)  # no process: a clock is never host:pid:tid
    assert rec.message == ERR12


def test_cut_head_keeps_the_timestamp_and_the_message_rank():
    rec = parse_nccl_line("[2026-02-05 10:41:07] NCCL INFO Channel 00/0 : 5[5] -> 13[5] [send] via NET/IB/5/GDRDMA\n")
    assert isinstance(rec, R.NcclConnection) and rec.ts is not None and rec.host == ""
    init = parse_nccl_line(":3905 [5] NCCL INFO comm 0x8d1c2b0 rank 5 nranks 16 cudaDev 5 busId 9d000 - Init COMPLETE\n")
    assert isinstance(init, R.NcclInit) and (init.host, init.pid, init.rank, init.nranks) == ("", 0, 5, 16)


def test_full_heads_are_unchanged():
    rec = parse_nccl_line(f"gpu-a07:41022:41023 [3] transport/net_ib.cc:1696 NCCL WARN {ERR12}\n")
    assert (rec.host, rec.pid, rec.tid, rec.source) == ("gpu-a07", 41022, 41023, "transport/net_ib.cc:1696")
    rec = parse_nccl_line(f"[2026-02-05 10:51:09] gpu-a07:41022:41023 [3] NCCL WARN {ERR12}\n")
    assert (rec.host, rec.pid) == ("gpu-a07", 41022) and rec.ts is not None


@pytest.mark.parametrize("line,kind,value", [
    ("INFO Using internal Network Socket", R.NcclNet, "Socket"),  # 2.0: no head at all
    ("seyun:17280:17553 [0] INFO Using internal Network IB", R.NcclNet, "IB"),  # 2.1/2.2
    ("INFO NET : Using interface eth0:115.145.178.160<0>", R.NcclNet, "eth0:115.145.178.160<0>"),
    ("INFO comm 0x7f0e9c00a3b0 rank 0 nranks 8", R.NcclInit, None),
    ("INFO [0] Ring 0 :    0   1   2   3", R.NcclRingOrder, None),  # 2.0-2.2's ring dump of rank 0
])
def test_nccl20_lines_without_the_word(line, kind, value):
    assert maybe_nccl(line)
    rec = parse_nccl_line(line + "\n")
    assert isinstance(rec, kind)
    if value is not None:
        assert rec.value == value
    elif kind is R.NcclInit:
        assert (rec.rank, rec.nranks) == (0, 8)
    else:
        assert rec.ranks == [0, 1, 2, 3] and rec.host == ""


def test_nccl20_warn_needs_its_source_and_application_lines_stay_out():
    rec = parse_nccl_line("WARN include/socket.h:185 Call to connect failed : Connection refused\n")
    assert isinstance(rec, R.NcclWarn) and rec.source == "include/socket.h:185" and rec.host == ""
    assert rec.message == "Call to connect failed : Connection refused"
    assert parse_nccl_line("WARN disk almost full\n") is None  # an application's WARN
    assert parse_nccl_line("INFO 11-25 08:17:27 config.py:350] Defaulting to use mp for distributed inference\n") is None
    assert parse_nccl_line("INFO Starting epoch 3\n") is None


VW = "(VllmWorkerProcess pid=52311) ERROR 11-25 08:17:30 multiproc_worker_utils.py:226] "


def test_split_glued_records():
    a = "INFO 11-25 08:17:28 selector.py:135] Using Flash Attention backend."
    b = "(VllmWorkerProcess pid=52311) INFO 11-25 08:17:28 selector.py:135] Using Flash Attention backend.\n"
    assert split_glued(a + b) == [a + "\n", b]
    c = "ERROR 11-25 08:17:30 [engine.py:366] NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    d = "INFO 11-25 08:17:31 [multiproc_worker_utils.py:120] Killing local vLLM worker processes\n"
    assert split_glued(c + d) == [c + "\n", d]
    e = "gpu1:41:41 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE"
    assert split_glued(e + d) == [e + "\n", d]  # a Python record glued after an NCCL line
    f = "ERROR 10-12 09:13:11 [worker.py:87] init failed "
    g = "gpu1:41:41 [0] NCCL WARN Cuda failure 'out of memory'\n"
    assert split_glued(f + g) == [f + "\n", g]  # an NCCL line glued after a Python record


@pytest.mark.parametrize("line", [
    VW + "RuntimeError: NCCL error: unhandled system error\n",  # a worker's prefix then its record: one record
    "[rank1]:INFO 11-25 08:17:28 [selector.py:135] Using Flash Attention backend.\n",  # behind a launcher's tag
    "gpu1:41:41 [0] NCCL INFO NCCL_DEBUG=INFO set by environment to INFO\n",
    "INFO 11-25 08:17:28 [x.py:1] NCCL_DEBUG=INFO 3 things\n",
])
def test_split_glued_leaves_single_records_whole(line):
    assert split_glued(line) == [line]


def test_rejoin_wrapped_splits_glued_records_keeping_the_line_number():
    lines = [(1, "INFO 11-25 08:17:30 [a.py:1] Killing local vLLM worker processes" + VW + "RuntimeError: boom\n")]
    out = list(rejoin_wrapped(lines, lambda first, joined: False))
    assert [n for n, _ in out] == [1, 1] and out[1][1] == VW + "RuntimeError: boom\n"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_error_in_a_glued_record_is_the_crash(tmp_path):
    text = ("INFO 11-25 08:17:29 pynccl.py:69] vLLM is using nccl==2.21.5\n"
            + VW + '  File "/x/pynccl_wrapper.py", line 271, in NCCL_CHECK\n'
            + "INFO 11-25 08:17:30 multiproc_worker_utils.py:124] Killing local vLLM worker processes"
            + VW + "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n")
    a = analyze_paths([_write(tmp_path, "serve.log", text)], cache=False)
    assert a.decision.verdict.value == "crash"
    assert any("unhandled system error" in f.message for f in a.findings)


def test_headless_lines_invent_no_process(tmp_path):
    text = (f"7:3905 [5] transport/net_ib.cc:1696 NCCL WARN {ERR12}\n"
            "NCCL INFO transport/net.cc:1298 -> 6\n"
            f"2026-02-05 10:51:09 NCCL WARN {ERR12}\n")
    a = analyze_paths([_write(tmp_path, "train.log", text)], cache=False)
    assert not [p for p in a.run.job.processes if p.host not in ("",)]  # no "10:51:09" process
    assert any("error 12" in f.message for f in a.findings)
