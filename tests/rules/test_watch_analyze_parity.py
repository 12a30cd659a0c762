"""`ncclscope watch --once --json` and `ncclscope analyze --json` judge a run folder alike.

Both decide with ``ncclscope.rules``; this checks it on every folder of samples/, every run of the
real corpus (../shared/corpus, skipped when absent) and one recorded run of every fault-matrix kind
(tests/data/fault_runs: real gloo jobs under `ncclscope run`, recorded by
``benchmarks/fault_matrix.py --record``).

What is compared: the verdict, the culprit ranks, for a hang or a desync the stuck collective
(process group and sequence number; the op when both name it: the hook does not see collectives
DDP issues from C++), and the state of every rank the hook's records name. The live monitor judges hang, desync and crash only: where `analyze` says
healthy, degraded or unknown, `watch` must raise no incident; a config mistake is judged offline
only, and the crash it caused may be alerted live.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS, NO_CORPUS, ROOT, SAMPLES, corpus_names
from judgements import assert_same_judgement, judgements

sys.path.insert(0, str(ROOT / "benchmarks"))

from fault_matrix import ALL_KINDS

FAULT_RUNS = ROOT / "tests" / "data" / "fault_runs"
EXTRA_RUNS = ["desync_dtype"]  # recorded runs of one variant of a kind (fault_matrix.py --kinds desync)


def _cases() -> list[Any]:
    out = [pytest.param(p, id=f"samples/{p.name}") for p in sorted(SAMPLES.iterdir()) if p.is_dir()]
    out += [pytest.param(FAULT_RUNS / k, id=f"fault/{k}") for k in ALL_KINDS + EXTRA_RUNS]
    out += [pytest.param(CORPUS / r, id=f"corpus/{r}") for r in corpus_names()] or [
        pytest.param(None, id="corpus", marks=pytest.mark.skip(reason=NO_CORPUS))]
    return out


@pytest.mark.parametrize("folder", _cases())
def test_watch_and_analyze_agree(folder: Path) -> None:
    assert folder.is_dir(), f"{folder} missing: record it with benchmarks/fault_matrix.py --record"
    analyzed, live = judgements(folder)
    assert_same_judgement(analyzed, live)


def test_every_fault_kind_is_recorded_and_judged_as_injected() -> None:
    """The recorded runs are what their kind says (so that agreeing is agreeing on the right answer)."""
    want = {"hang": "hang", "desync": "desync", "crash": "crash", "straggler": "degraded", "healthy": "healthy",
            "pause": "healthy", "exception": "crash", "spawn_exception": "crash", "memory": "crash", "hook_exception": "crash",
            "hang_sigint": "hang", "hang_sigterm": "hang"}
    assert set(want) == set(ALL_KINDS)
    scenarios = json.loads((FAULT_RUNS / "scenarios.json").read_text())
    for kind, verdict in want.items():
        meta = scenarios[kind]
        analyzed, _ = judgements(FAULT_RUNS / kind)
        assert analyzed["verdict"] == verdict, (kind, analyzed["headline"])
        culprit = meta["culprit"]
        assert analyzed["culprit_ranks"] == ([] if culprit is None else [culprit]), (kind, analyzed["headline"])


def test_gloo_dtype_desync_is_a_desync_not_the_aborting_ranks_crash() -> None:
    """gloo aborts the receiving rank (``EnforceNotMet ... Is there a distributed collective mismatch``)
    before any rank's record of the mismatched all_reduce reaches disk: a desync at the collective after
    the last one completed, the abort its echo; no culprit, since no record of the odd call survived."""
    analyzed, live = judgements(FAULT_RUNS / "desync_dtype")
    assert analyzed["verdict"] == "desync", analyzed["headline"]
    assert analyzed["stuck"] == {"pg": "0", "seq": 25, "op": None}
    assert analyzed["culprit_ranks"] == []
    assert "collective mismatch" in analyzed["headline"]
    assert {r["state"] for r in analyzed["ranks"]} == {"stuck_in_collective"}
    assert_same_judgement(analyzed, live)


def test_a_claimed_world_of_2_20_changes_nothing(tmp_path: Path) -> None:
    """A hook start record claiming 2^20 ranks beside the 3 of the run: the same judgement, 3 ranks
    listed, nothing sized or looped over by the claim."""
    import shutil
    import time

    run = tmp_path / "run"
    shutil.copytree(FAULT_RUNS / "hang", run, ignore=shutil.ignore_patterns("alerts.jsonl", "report.json"))
    hook = run / "ncclscope-rank0.jsonl"
    lines = hook.read_text().splitlines()
    first = json.loads(lines[0])
    assert first["type"] == "start"
    lines[0] = json.dumps(first | {"world": 1 << 20})
    hook.write_text("\n".join(lines) + "\n")
    t0 = time.thread_time()  # CPU time (analyze, watch and the monitor run in this thread), not the wall clock
    analyzed, live = judgements(run)
    assert time.thread_time() - t0 < 20  # a loop over 2^20 ranks in each would take minutes
    assert_same_judgement(analyzed, live)
    assert analyzed["verdict"] == "hang" and len(analyzed["ranks"]) == 3 and len(live["states"]) == 3
