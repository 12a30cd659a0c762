"""Two runs in one console (a torchrun restart, the job started again in the same terminal) are judged as the last run,
with the earlier ones said to be there, never refused as a mix of jobs (``model_build.runs``); two jobs writing into one
log at once are still a mix."""
from __future__ import annotations

from pathlib import Path

import pytest
from class2_cases import check
from ncclscope.analysis import analyze_paths
from ncclscope.model import FindingKind, Verdict


@pytest.mark.parametrize("name, verdict", [("torchrun_restart_last_run_judged", Verdict.HANG),
                                           ("second_start_same_console", Verdict.HEALTHY)])
def test_the_last_run_is_judged_and_the_earlier_ones_said(name, verdict):
    a = check(name)
    assert a.decision.verdict is verdict
    assert any(f.kind is FindingKind.INPUT and "earlier runs" in f.message for f in a.findings)


def _init(pid: int, rank: int, line_tag: str = "") -> str:
    return f"vm:{pid}:{pid} [{rank}] NCCL INFO comm 0x{pid:x} rank {rank} nranks 2 cudaDev {rank} busId {rank + 1}000 - Init COMPLETE{line_tag}"


def test_two_jobs_writing_at_once_stay_a_mix(tmp_path: Path):
    p = tmp_path / "both.log"
    p.write_text("\n".join([_init(100, 0), _init(200, 0), _init(101, 1), _init(201, 1),
                            "vm:100:100 [0] NCCL INFO comm 0x64 rank 0 nranks 2 - Destroy COMPLETE"]) + "\n")
    d = analyze_paths([p], cache=False).decision
    assert d.verdict is Verdict.UNKNOWN and "mix" in d.headline


def test_a_restart_mark_with_nothing_after_it_cuts_nothing(tmp_path: Path):
    p = tmp_path / "one.log"
    p.write_text("\n".join([_init(100, 0), _init(101, 1), "epoch 1 loss 0.5", "epoch 2 loss 0.4",
                            "[default] Worker group FAILED. 3/3 attempts left; will restart worker group"]) + "\n")
    a = analyze_paths([p], cache=False)
    assert not any(e.kind == "earlier_runs" for e in a.run.events)
