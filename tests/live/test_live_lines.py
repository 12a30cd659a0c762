"""The live monitor reads a log's lines as ``analyze`` does (``sources.lines``: launcher prefixes, 2.2's
NCCL heads without the ``NCCL`` word, ``ingest``'s line filter): a folder whose logs carry ``srun
--label`` and ``mpirun --tag-output`` prefixes and 2.2-style lines is judged alike by ``watch --once``
and ``analyze``, and alike when the monitor tails it in two pieces (a traceback split between polls)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES
from judgements import assert_same_judgement, judgements
from ncclscope.live.monitor import LiveConfig, LiveMonitor

# own fixture, in the shapes srun --label (task number, padded) and mpirun --tag-output print
HEAD = [
    "0: gpu-a17:40211:40211 [0] INFO NCCL version 2.2.13+cuda9.2\n",
    "0: gpu-a17:40211:40230 [0] INFO NET : Using interface ib0:10.4.0.17<0>\n",  # 2.2: no NCCL word
    " 1: gpu-a17:40212:40231 [1] INFO NET/Socket : Using [0]ib0:10.4.0.17<0>\n",
    "[1,2]<stderr>:gpu-a18:51007:51020 [0] graph/xml.cc:332 WARN Could not find real path of /sys/class/net/ib0/device\n",
    "[1,2]<stderr>:Traceback (most recent call last):\n",
    '[1,2]<stderr>:  File "/home/u/train.py", line 88, in <module>\n',
    "[1,2]<stderr>:    main()\n",
    '[1,2]<stderr>:  File "/home/u/train.py", line 61, in main\n',
    "[1,2]<stderr>:    loss = step(batch)\n",
    "2: Traceback (most recent call last):\n",
    '2:   File "/home/u/train.py", line 61, in main\n',
    "2:     loss = step(batch)\n",
]
TAIL = [
    "[1,2]<stderr>:ValueError: batch 4117 has 0 samples\n",
    "2: ValueError: batch 4117 has 0 samples\n",
]


def _folder(tmp: Path, lines: list[str]) -> Path:
    d = tmp / "run"
    d.mkdir(exist_ok=True)
    (d / "job-8812.out").write_text("".join(lines))
    return d


def test_prefixed_and_2_2_lines_judged_alike(tmp_path: Path) -> None:
    d = _folder(tmp_path, HEAD + TAIL)
    analyzed, live = judgements(d)
    assert analyzed["verdict"] == "crash" and analyzed["culprit_ranks"] == [2], analyzed["headline"]
    assert_same_judgement(analyzed, live)


def test_traceback_split_between_polls_under_launcher_prefixes(tmp_path: Path) -> None:
    """The frames under ``srun --label`` / ``mpirun`` prefixes wait for their exception line."""
    d = _folder(tmp_path, HEAD)
    mon = LiveMonitor(d, LiveConfig(console=False))
    t = 1_796_000_000.0
    assert mon.poll_once(now=t) == []
    assert any("Could not find real path" in w for w in mon.nccl_warns)  # a 2.2 WARN line, read as NCCL's
    with (d / "job-8812.out").open("a") as f:
        f.write("".join(TAIL))
    alerts = mon.poll_once(now=t + 1) + mon.poll_once(now=t + 5)
    crash = [a for a in alerts if a["kind"] == "crash"]
    assert crash and crash[0]["culprit_ranks"] == [2], alerts
    assert "ValueError" in crash[0]["message"]


@pytest.mark.parametrize("name", [p.name for p in sorted(SAMPLES.iterdir()) if p.is_dir()])
def test_hard_wrapped_sample_judged_alike(tmp_path: Path, name: str) -> None:
    """Every text log of a sample hard-wrapped at 97 columns (a terminal paste): the monitor joins the
    lines back as ``analyze`` does (``lines.rejoin_wrapped`` with ``ingest``'s test of a known join)."""
    run = tmp_path / name
    shutil.copytree(SAMPLES / name, run, ignore=shutil.ignore_patterns("report.json", "alerts.jsonl"))
    for p in run.rglob("*.log"):
        text = p.read_text(errors="replace")
        p.write_text("\n".join(ln[i:i + 97] for ln in text.split("\n") for i in range(0, max(len(ln), 1), 97)))
    analyzed, live = judgements(run)
    assert_same_judgement(analyzed, live)
