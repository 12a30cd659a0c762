"""The Inspector's records in the model: rows of the collectives table (seq per operation type of a communicator,
kernel durations, host timestamps), ranks and communicators of processes only the Inspector shows, the
straggler, hotspots and bus bandwidth from its kernel times alone, and the dump markers' drops as a problem.
Fixtures in the plugin's shapes (``tests/inspector_shapes.py``)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import inspector_shapes as S
from ncclscope.analysis import analyze_paths
from ncclscope.metrics.busbw import busbw_table
from ncclscope.model import FindingKind, Verdict
from ncclscope.report import to_json

WORLD_COMM = "0x51ab0c99e2f4d31"


def write_job(folder: Path, late_rank: int = 1, wait_us: int = 20000, steps: int = 30, dropped: int = 0) -> None:
    """Two ranks on two hosts, v4.0 verbose records: an all-reduce and an all-gather per step; from step 4 the
    ``late_rank`` arrives ``wait_us`` late, so the other rank's kernels wait that long in each."""
    for rank, pid in ((0, 5101), (1, 5102)):
        lines = [S.marker("v4.1", 2 * steps, dropped=dropped, rank=rank, pid=pid, comm=WORLD_COMM)]
        t = S.T0
        for sn in range(1, steps + 1):
            for op, size in (("AllReduce", 67108864), ("AllGather", 2097152)):
                wait = wait_us if sn >= 4 and rank != late_rank else 0
                body = S.coll("v4.1", sn, op, size=size, exec_us=2000 + wait, t=t)
                line = S.record("v4.1", "coll_perf", body, t=t + 100000, rank=rank, pid=pid, comm=WORLD_COMM)
                lines.append(line)
                t += 60000
        (folder / f"node{rank}-pid{pid}.log").write_text("\n".join(lines).replace(S.HOST, f"node{rank}") + "\n")


def test_rows_are_timed_per_operation_type(tmp_path):
    write_job(tmp_path)
    a = analyze_paths([tmp_path], cache=False)
    df = a.run.collectives
    assert set(df["source"].astype(str)) == {"inspector"} and len(df) == 2 * 2 * 30
    assert set(df["pg"].astype(str)) == {f"nccl:{WORLD_COMM}:allreduce", f"nccl:{WORLD_COMM}:allgather"}
    r0 = df[(df["rank"] == 0) & (df["pg"].astype(str) == f"nccl:{WORLD_COMM}:allreduce")].sort_values("seq")
    assert list(r0["seq"]) == list(range(1, 31)) and set(r0["state"].astype(str)) == {"completed"}
    first = r0.iloc[0]
    assert first["duration_ms"] == 2.0 and first["bytes"] == 67108864
    assert first["t_created"] == S.T0 / 1e6 and first["t_started"] == (S.T0 + 40) / 1e6
    assert np.isclose(first["t_completed"], (S.T0 + 40 + 2000) / 1e6)
    assert (first["file"], first["line"]) == ("node0-pid5101.log", 2)


def test_processes_ranks_and_communicator_from_the_inspector_alone(tmp_path):
    write_job(tmp_path)
    run = analyze_paths([tmp_path], cache=False).run
    assert run.job.world_size == 2 and run.job.hosts == ("node0", "node1")
    assert {(p.host, p.pid, p.rank) for p in run.job.processes} == {("node0", 5101, 0), ("node1", 5102, 1)}
    (comm,) = run.communicators
    assert comm.id == WORLD_COMM and comm.nranks == 2 and comm.nnodes == 2


def test_straggler_hotspots_and_busbw_from_kernel_times(tmp_path):
    write_job(tmp_path, late_rank=1)
    a = analyze_paths([tmp_path], cache=False)
    assert a.decision.verdict is Verdict.DEGRADED and a.decision.culprit_ranks == (1,)
    strag = [f for f in a.findings if f.kind is FindingKind.STRAGGLER]
    assert strag and strag[0].ranks == (1,) and strag[0].evidence[0].file == "node1-pid5102.log"
    hot = [f for f in a.findings if f.kind is FindingKind.HOTSPOT]
    assert hot and "allreduce of ~2^26 B" in hot[0].message
    bw = busbw_table(a.run.collectives, 2)
    ar = bw[bw["op"] == "allreduce"]
    assert len(ar) == 29 and np.allclose(ar["time_ms"], 2.0)  # the late rank's kernel: no waiting in it
    assert np.allclose(ar["busbw"], 67108864 / 2e-3 / 1e9)  # 2(n-1)/n = 1 for two ranks


def test_balanced_ranks_are_no_straggler(tmp_path):
    write_job(tmp_path, wait_us=0)
    a = analyze_paths([tmp_path], cache=False)
    assert not [f for f in a.findings if f.kind is FindingKind.STRAGGLER]
    assert a.decision.verdict is not Verdict.DEGRADED


def test_ring_drops_are_a_problem_line(tmp_path):
    write_job(tmp_path, dropped=7)
    got = to_json(analyze_paths([tmp_path], cache=False))
    lost = [p for p in got["problems"] if "dropped 7 collective records" in p]
    assert len(lost) == 2 and "NCCL_INSPECTOR_DUMP_COLL_RING_SIZE" in lost[0]
    assert {i["format"] for i in got["inputs"]} == {"inspector"}


def test_a_record_written_twice_is_one_row(tmp_path):
    write_job(tmp_path, steps=5)
    f = tmp_path / "node0-pid5101.log"
    lines = f.read_text().splitlines()
    f.write_text("\n".join(lines + lines[1:3]) + "\n")
    df = analyze_paths([tmp_path], cache=False).run.collectives
    assert len(df[df["rank"] == 0]) == 10
