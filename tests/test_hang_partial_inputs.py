"""The hang verdict survives missing inputs: no Flight Recorder, no RAS, only one rank's NCCL log."""
from __future__ import annotations

import shutil

import pytest

from ncclscope.analysis import analyze_paths


def subset(src, dst, drop):
    dst.mkdir()
    for f in src.iterdir():
        if not any(f.name.startswith(d) for d in drop):
            shutil.copy(f, dst / f.name)
    return dst


@pytest.mark.parametrize("drop", [
    ["fr_timeout"],                      # Flight Recorder disabled: watchdog and dump-signal lines remain
    ["fr_timeout", "ras_"],
    ["fr_timeout", "ras_", "completion_hook"],
    ["ras_", "vm.2546.nccl.log"],        # the culprit's NCCL log lost
])
def test_hang_culprit_without(corpus, tmp_path, drop):
    d = subset(corpus / "hang_rank1_stuck", tmp_path / "run", drop)
    a = analyze_paths([d])
    assert a.decision.verdict.value == "hang"
    assert a.decision.culprit_ranks == (1,)
    assert a.decision.stuck is not None and a.decision.stuck.seq == 126 and a.decision.stuck.pg == "0"


def test_only_stderr_of_the_hang(corpus, tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(corpus / "hang_rank1_stuck" / "stderr.log", d / "stderr.log")
    a = analyze_paths([d])
    assert a.decision.verdict.value == "hang" and a.decision.culprit_ranks == (1,)
