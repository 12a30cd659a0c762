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


def _judge(path):
    from ncclscope.report import to_json

    return to_json(analyze_paths([path], cache=False))


@pytest.mark.parametrize("nranks, culprit, lag", [(64, 37, 3), (16, 0, 1), (8, 7, 2)])
def test_nccl_logs_only_killed_from_outside_is_a_likely_hang(tmp_path, nranks, culprit, lag):
    """No watchdog line, no dump, no time, no exit code: every rank but one agrees on its last NCCL call."""
    from ncclscope.synth.generator import generate_run

    t = generate_run(tmp_path / "run", nranks=nranks, steps=6, buckets=2, bucket_mb=1, fault="hang",
                     fault_rank=culprit, lag=lag, stderr=False, timestamps=False)
    j = _judge(t.path)
    assert (j["verdict"], j["culprit_ranks"]) == ("hang", [culprit]), j["headline"]
    assert j["certainty"]["level"] == "likely" and "no stall signal" in j["certainty"]["why"]


@pytest.mark.parametrize("seed", [1, 2, 3, 5, 8])
def test_healthy_job_killed_at_a_random_moment_is_no_claim(tmp_path, seed):
    """Scattered last calls (every rank somewhere in its last step): no hang is claimed."""
    from ncclscope.synth.generator import generate_run

    t = generate_run(tmp_path / "run", nranks=64, steps=6, buckets=2, bucket_mb=1, scatter=8, stderr=False,
                     timestamps=False, seed=seed)
    j = _judge(t.path)
    assert j["verdict"] not in ("hang", "desync", "crash"), j["headline"]
    assert j["culprit_ranks"] == []


@pytest.mark.parametrize("nranks, culprit", [(16, 5), (4, 0)])
def test_old_watchdog_lines_alone_name_the_absent_rank_as_a_possible_culprit(tmp_path, nranks, culprit):
    """PyTorch 1.13 / 2.0 timeout lines (no sizes, no PG status) from the ranks that waited, and
    torchrun's summary (the world size): a hang at that SeqNum; the rank absent from them is the suspect."""
    from ncclscope.synth.generator import generate_run

    t = generate_run(tmp_path / "run", nranks=nranks, steps=6, buckets=2, bucket_mb=1, fault="hang",
                     fault_rank=culprit, nccl_logs=False, old_watchdog=True)
    assert not list(t.path.glob("*.nccl.log"))
    j = _judge(t.path)
    assert (j["verdict"], j["culprit_ranks"]) == ("hang", [culprit]), j["headline"]
    assert j["stuck"]["seq"] == t.stuck_seq and j["certainty"]["level"] == "possible"
    states = {r["rank"]: r["state"] for r in j["ranks"]}
    assert states[culprit] == "never_joined"
    assert {s for r, s in states.items() if r != culprit} == {"stuck_in_collective"}


def test_every_rank_has_a_state(tmp_path):
    """The sample hang: the culprit is stuck outside NCCL (its stack says where), the other waits in it."""
    from conftest import SAMPLES

    j = _judge(SAMPLES / "gpu_hang")
    st = {r["rank"]: (r["state"], r["detail"]) for r in j["ranks"]}
    assert st[1][0] == "stuck_outside_nccl" and "time.sleep" in st[1][1]
    assert st[0][0] == "stuck_in_collective" and "#125" in st[0][1]
    assert j["certainty"]["level"] == "confirmed"
    crash = {r["rank"]: r["state"] for r in _judge(SAMPLES / "gpu_crash")["ranks"]}
    assert crash == {0: "stopped", 1: "died"}  # rank 0 was SIGTERMed by the launcher after rank 1 died
    assert {r["state"] for r in _judge(SAMPLES / "gpu_healthy")["ranks"]} == {"finished"}
