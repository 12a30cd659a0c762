"""What a traced collective costs the training thread, counted rather than timed (timing on a shared
2-core machine is noise; benchmarks/hook_overhead.py times it on a GPU): a real gloo process with
the hook as ``ncclscope run`` installs it makes 2,000 ``all_reduce`` calls from one line, and in
that loop the hook does no JSON encoding per call, no path resolution, no source read and no
stack capture, yet writes one ``coll`` and one ``done`` record per call, naming the line (or, above
the rate budget, the oldest and newest of each batch, the rest counted in the heartbeat)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hook_procs import rank_env
from ncclscope.launch import prepare_hook_site

ROOT = Path(__file__).resolve().parents[2]
N = 2000

SCRIPT = '''
import json, linecache, os, sys
import torch
import torch.distributed as dist
from _ncclscope_hook import records, tracer

counts = {"json.dumps": 0, "realpath": 0, "getline": 0, "frames_of": 0}

def counting(name, fn):
    def wrapped(*a, **k):
        counts[name] += 1
        return fn(*a, **k)
    return wrapped

class _Json:  # the hook's json module, counted
    loads = staticmethod(json.loads)
    dumps = staticmethod(counting("json.dumps", json.dumps))

dist.init_process_group("gloo")
x = torch.ones(1)
for _ in range(10):  # warm-up: the first call of a site builds its format
    dist.all_reduce(x)
for name, mod in list(sys.modules.items()):  # every hook module that encodes JSON (the writer, the poller)
    if name.startswith("_ncclscope_hook") and getattr(mod, "json", None) is json:
        mod.json = _Json
os.path.realpath = counting("realpath", os.path.realpath)
records.linecache.getline = counting("getline", linecache.getline)
records.frames_of = counting("frames_of", records.frames_of)
for _ in range(N):
    dist.all_reduce(x)  # LOOP LINE
snapshot = dict(counts)
dist.destroy_process_group()
print(json.dumps(snapshot))
'''


def run_loop(tmp_path: Path, **extra_env: str) -> tuple[dict[str, int], list[dict], int]:
    """(the hook's work counted in the loop, the rank's records, the loop's line number)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = tmp_path / "loop_job.py"
    script.write_text(SCRIPT.replace("range(N)", f"range({N})"))
    loop_line = next(i for i, line in enumerate(script.read_text().splitlines(), 1) if "LOOP LINE" in line)
    env = rank_env(run_dir, prepare_hook_site(run_dir), NCCLSCOPE_HOOK_HB_S="0.2", **extra_env)
    proc = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    recs = [json.loads(line) for line in (run_dir / "ncclscope-rank0.jsonl").read_text().splitlines()]
    return counts, recs, loop_line


@pytest.mark.slow
def test_a_traced_collective_does_no_json_no_path_no_stack_work(tmp_path: Path) -> None:
    counts, recs, loop_line = run_loop(tmp_path, NCCLSCOPE_HOOK_RECORDS_S="1000000000", NCCLSCOPE_HOOK_CALLS_S="0")
    # the writer thread still encodes its few dict records (heartbeats every 0.2 s) with json
    assert counts["json.dumps"] < 100, counts
    assert counts["realpath"] == 0 and counts["getline"] == 0 and counts["frames_of"] == 0, counts
    colls = [r for r in recs if r["type"] == "coll" and r["where"] == f"loop_job.py:{loop_line} in <module>"]
    assert len(colls) == N, len(colls)
    assert all(r["op"] == "allreduce" and r["numel"] == 1 and r["dtype"] == "float32" and r["bytes"] == 4
               for r in colls)
    seqs = [r["seq"] for r in colls]
    assert seqs == list(range(seqs[0], seqs[0] + N))
    done = {r["seq"] for r in recs if r["type"] == "done" and r["pg"] == "0"}
    assert set(seqs) <= done


@pytest.mark.slow
def test_above_the_rate_budget_the_newest_are_written_and_the_rest_counted(tmp_path: Path) -> None:
    counts, recs, loop_line = run_loop(tmp_path, NCCLSCOPE_HOOK_RECORDS_S="500", NCCLSCOPE_HOOK_CALLS_S="0")
    assert counts["json.dumps"] < 100, counts
    colls = [r for r in recs if r["type"] == "coll" and r["pg"] == "0"]
    dones = [r for r in recs if r["type"] == "done" and r["pg"] == "0"]
    hb = [r for r in recs if r["type"] == "hb"][-1]
    assert hb["sampled_out"] > 0 and hb["dropped"] == 0, hb
    assert len(colls) + len(dones) + hb["sampled_out"] == 2 * (N + 10)  # + the warm-up calls
    assert len(colls) < N
    last = max(r["seq"] for r in colls)
    assert last == hb["pgs"]["0"]["enq"]  # the newest collective is always written
    assert {r["seq"] for r in dones if r["seq"] > last - 5} == set(range(last - 4, last + 1))
    assert all(r["where"] == f"loop_job.py:{loop_line} in <module>" for r in colls if r["seq"] > 10)
