"""Each detector on the real runs: what it must find, and what it must not."""
from __future__ import annotations

import pandas as pd
import pytest

from ncclscope.analysis import analyze_paths
from ncclscope.detectors import config, crash, desync, hang, hotspots, straggler, transport
from ncclscope.model import COLLECTIVE_COLUMNS, Verdict

RUNS = ["healthy_ddp_p2p", "healthy_interleaved_stdout", "healthy_shm", "straggler_rank1", "hang_rank1_stuck",
        "crash_rank1_exit", "config_error_algo_tree"]


@pytest.fixture(scope="module")
def runs(corpus):
    return {name: analyze_paths([corpus / name]).run for name in RUNS}


def kinds(findings):
    return [(f.kind, f.verdict) for f in findings]


def test_hang_names_culprit_seq_and_where_rank0_waits(runs):
    (f,) = hang.detect(runs["hang_rank1_stuck"])
    assert f.ranks == (1,) and f.stuck.seq == 126 and f.stuck.pg == "0" and f.stuck.op == "allreduce"
    assert f.data["class"] == "never_joined" and f.data["waiting"] == [0]
    assert "rank 0" in f.message and "autograd" in f.message  # where rank 0 waits: DDP's bucket all-reduce
    assert any("RAS" in e.text for e in f.evidence)
    assert any("Watchdog caught" in e.text for e in f.evidence)


@pytest.mark.parametrize("name", [r for r in RUNS if r != "hang_rank1_stuck"])
def test_no_hang_elsewhere(runs, name):
    assert not [f for f in hang.detect(runs[name]) if f.verdict == Verdict.HANG]


def test_running_snapshot_with_work_in_flight_is_not_a_hang(runs):
    # the straggler run's end-of-run dumps have collectives enqueued but not completed on both ranks
    st = runs["straggler_rank1"]
    assert any(s.last_enqueued != s.last_completed for s in st.pg_status)
    assert hang.detect(st) == []


def test_crash_first_failure_not_its_echo(runs):
    (f,) = [f for f in crash.detect(runs["crash_rank1_exit"]) if f.kind == "crash"]
    assert f.ranks == (1,) and f.verdict == Verdict.CRASH and f.data["exitcode"] == 3
    assert f.data["stopped_after"] == [0]
    echo = [f for f in crash.detect(runs["hang_rank1_stuck"]) if f.kind == "crash"]
    assert echo and echo[0].verdict is None and "echo" in echo[0].message


def test_config_error_names_the_setting(runs):
    fs = config.detect(runs["config_error_algo_tree"])
    crit = [f for f in fs if f.verdict == Verdict.CONFIG_ERROR]
    assert crit and "NCCL_ALGO" in crit[0].message and crit[0].data["settings"] == ["NCCL_ALGO"]
    assert any(e.file.endswith(".nccl.log") for e in crit[0].evidence)
    notes = {f.message.split(" ")[0] for f in fs if f.verdict is None}
    assert "P2P" in notes and "shared-memory" in notes


def test_shm_run_notes_p2p_disabled(runs):
    fs = config.detect(runs["healthy_shm"])
    assert [f.data["settings"] for f in fs] == [["NCCL_P2P_DISABLE"]]
    assert fs[0].evidence[0].text.endswith("NCCL_P2P_DISABLE set by environment to 1")


def test_straggler_rank1_with_wait_time(runs):
    (f,) = straggler.detect(runs["straggler_rank1"])
    assert f.ranks == (1,) and f.verdict == Verdict.DEGRADED
    assert 200 < f.data["wait_ms_median"] < 300 and f.data["p_value"] < 1e-6


@pytest.mark.parametrize("name", ["healthy_ddp_p2p", "healthy_interleaved_stdout", "healthy_shm"])
def test_no_straggler_in_healthy_runs(runs, name):
    assert straggler.detect(runs[name]) == []


@pytest.mark.parametrize("name", RUNS)
def test_no_desync_in_real_runs(runs, name):
    assert desync.detect(runs[name]) == []


def _table(rows):
    return pd.DataFrame([{c: r.get(c) for c in COLLECTIVE_COLUMNS} for r in rows], columns=COLLECTIVE_COLUMNS)


def test_desync_majority_vote_names_odd_rank(runs):
    run = runs["healthy_shm"]
    rows = []
    for rank in range(4):
        for seq in (1, 2, 3):
            count = 7 if (rank == 2 and seq == 3) else 1024
            rows.append({"rank": rank, "pg": "0", "seq": seq, "op": "allreduce", "count": count,
                         "dtype": "float", "source": "fr", "file": f"fr_rank{rank}", "line": 0,
                         "where": "train.py:50 in step" if rank == 2 else None})
    run.collectives = _table(rows)
    (f,) = desync.detect(run)
    assert f.ranks == (2,) and f.stuck.seq == 3 and f.data["mismatch"] == ["size"]
    assert "train.py:50" in f.message


def test_transport_and_hotspots_do_not_raise(runs):
    for run in runs.values():
        for detect in (transport.detect, hotspots.detect):
            found = detect(run)
            assert isinstance(found, list) and all(f.evidence or f.kind == "hotspot" for f in found), found
