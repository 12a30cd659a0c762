"""Log shapes users paste (tests/data/wild/ holds the cited ones): what sniffing, the rank prefixes and the
nccl-tests header give. Each input is written here in the real shape, own hosts, pids and numbers."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths


def _ranks(a) -> list[int]:
    return sorted({p.rank for p in a.run.job.processes if p.rank is not None})


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_rank_tag_on_watchdog_and_traceback_lines_is_a_rank_seen(tmp_path):
    # torch 2.4's "[rankN]:" tag on heartbeat lines and a traceback, no NCCL line at all
    log = _write(tmp_path, "train.log", "".join(
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank {r}] Heartbeat monitor timed out! Process will be "
        f"terminated after dumping debug info. workMetaList_.size()=41\n" for r in (2, 0, 1)) +
        "[rank3]: Traceback (most recent call last):\n"
        "[rank3]:   File \"/srv/job/train.py\", line 88, in <module>\n"
        "[rank3]:     loss.backward()\n"
        "[rank3]: RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n")
    assert _ranks(analyze_paths([log], cache=False)) == [0, 1, 2, 3]


def test_rank_in_a_subgroup_is_not_taken_for_a_global_rank(tmp_path):
    # "[PG 3 Rank 1]" with no launcher tag: rank 1 of group 3, no global rank
    log = _write(tmp_path, "train.log",
                 "[E ProcessGroupNCCL.cpp:1316] [PG 3 Rank 1] Heartbeat monitor timed out! Process will be "
                 "terminated after dumping debug info. workMetaList_.size()=7\n")
    assert _ranks(analyze_paths([log], cache=False)) == []
