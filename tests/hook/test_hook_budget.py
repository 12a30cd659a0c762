"""The per-call budget in real gloo processes under the hook as ``ncclscope run`` installs it.

The budget is for NCCL groups (whose Flight Recorder completion the watchdog keeps in order); on
this CPU it is switched on for gloo with ``NCCLSCOPE_HOOK_BUDGET_GLOO=1`` to show the mechanism: a
loop of small all_reduces far above ``NCCLSCOPE_HOOK_CALLS_S`` runs most of its calls on torch's own
function, every collective is either traced or counted in the heartbeat's ``untraced``, and the
wrappers are back once the calls slow down; with the budget off (0) every call is traced. Without
the switch a gloo job keeps every call traced, and a hang after a burst is diagnosed as before."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hook_procs import rank_env
from ncclscope.launch import prepare_hook_site

SCRIPT = '''
import json, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
x = torch.ones(1)
seen = {"wrapped": 0, "bare": 0}
end = time.monotonic() + 2.5
n = 0
while time.monotonic() < end:  # far above the budget: tens of thousands of calls a second
    seen["wrapped" if getattr(dist.all_reduce, "__ncclscope_wrapped__", False) else "bare"] += 1
    dist.all_reduce(x)
    n += 1
quiet = time.monotonic() + 600  # a quiet spell: the wrappers are put back at a tick (the wait is on that event;
while not getattr(dist.all_reduce, "__ncclscope_wrapped__", False) and time.monotonic() < quiet:  # 600 s: a net)
    time.sleep(0.05)
seen["after"] = bool(getattr(dist.all_reduce, "__ncclscope_wrapped__", False))
seen["calls"] = n
dist.all_reduce(x)
dist.destroy_process_group()
print(json.dumps(seen))
'''


def run_busy(tmp_path: Path, calls_s: str) -> tuple[dict, list[dict]]:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = tmp_path / "busy_job.py"
    script.write_text(SCRIPT)
    env = rank_env(run_dir, prepare_hook_site(run_dir), NCCLSCOPE_HOOK_HB_S="0.2", NCCLSCOPE_HOOK_CALLS_S=calls_s,
                   NCCLSCOPE_HOOK_BUDGET_GLOO="1")
    proc = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    recs = [json.loads(line) for line in (run_dir / "ncclscope-rank0.jsonl").read_text().splitlines()]
    return seen, recs


@pytest.mark.slow
def test_above_the_call_budget_most_calls_run_unwrapped_and_are_counted(tmp_path: Path) -> None:
    seen, recs = run_busy(tmp_path, "500")
    total = seen["calls"] + 1
    hb = [r for r in recs if r["type"] == "hb"][-1]
    colls = [r for r in recs if r["type"] == "coll" and r["pg"] == "0"]
    # the budget bit: most calls found torch's own function, and it was put back afterwards
    assert seen["bare"] > seen["wrapped"] > 0, seen
    assert seen["after"] is True, seen
    # nothing unaccounted for: each collective is a coll line, left out by the writer, or untraced
    assert hb["untraced"] > 0, hb
    assert len(colls) + hb.get("sampled_out", 0) // 2 + hb["untraced"] >= total - 1, (len(colls), hb, total)
    assert len(colls) <= 500 * 3.5 + 100  # about the budget for 3 s (its ticks), far below the calls made
    # completion comes from Flight Recorder's counts, not the wrappers': gloo's can stay a few behind
    # (its worker threads retire works out of order), which is why the budget is NCCL's only
    assert hb["pgs"]["0"]["enq"] == total and total - 8 <= hb["pgs"]["0"]["done"] <= total, hb
    assert not [r for r in recs if r["type"] == "error"]


@pytest.mark.slow
def test_with_the_budget_off_every_call_is_traced(tmp_path: Path) -> None:
    seen, recs = run_busy(tmp_path, "0")
    hb = [r for r in recs if r["type"] == "hb"][-1]
    assert seen["bare"] == 0 and "untraced" not in hb, (seen, hb)


def test_turning_the_wrappers_leaves_a_function_someone_else_patched_in() -> None:
    import types

    from ncclscope.hook.budget import Wrappers

    def torch_fn() -> str:
        return "torch"

    def wrapper() -> str:
        return "traced"

    def theirs() -> str:
        return "theirs"

    mod = types.ModuleType("fake_dist")
    mod.all_reduce = wrapper  # type: ignore[attr-defined]
    mod.broadcast = wrapper  # type: ignore[attr-defined]
    w = Wrappers()
    w.add(mod, "all_reduce", torch_fn, wrapper)
    w.add(mod, "broadcast", torch_fn, wrapper)
    assert w.turn(False) == 2 and mod.all_reduce is torch_fn  # type: ignore[attr-defined]
    mod.broadcast = theirs  # type: ignore[attr-defined]  # a user's own patch while the wrappers are off
    assert w.turn(True) == 1
    assert mod.all_reduce is wrapper and mod.broadcast is theirs  # type: ignore[attr-defined]
    assert w.turn(False) == 1 and mod.broadcast is theirs  # type: ignore[attr-defined]


BUSY_THEN_HANG = '''
import datetime, os, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=8))
rank = dist.get_rank()
x = torch.ones(1)
for _ in range(20000):  # far above the call budget on both ranks (a count both agree on, not a clock)
    dist.all_reduce(x)
dist.barrier()
if rank == 1:
    time.sleep(120)  # stuck in its own code: never joins the next collective
dist.all_reduce(x)
'''


@pytest.mark.slow
def test_a_gloo_hang_after_a_burst_above_the_budget_keeps_every_call_traced(tmp_path: Path) -> None:
    """20,000 collectives as fast as gloo goes, then one rank stops: the budget leaves gloo alone
    (with it on, gloo's lagging Flight Recorder completion once turned this hang into 'every rank
    joined but it never completed'), and the verdict names the rank."""
    script = tmp_path / "busy_hang.py"
    script.write_text(BUSY_THEN_HANG)
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL", "TORCH_"))}
    env.update({"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "NCCLSCOPE_HOOK_HB_S": "0.5"})
    cmd = [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), "--", sys.executable, "-m",
           "torch.distributed.run", "--nnodes=1", "--nproc_per_node=2", "--rdzv-backend=c10d",
           "--rdzv-endpoint=127.0.0.1:0", str(script)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode != 0, proc.stdout[-2000:]
    hb0 = [r for r in (json.loads(x) for x in (run_dir / "ncclscope-rank0.jsonl").read_text().splitlines())
           if r["type"] == "hb"]
    assert not any(r.get("untraced") for r in hb0), hb0[-1]  # gloo: every call traced, whatever the rate
    report = json.loads((run_dir / "report.json").read_text())
    assert report["verdict"] == "hang", (report["verdict"], report.get("summary"))
    assert report["culprit_ranks"] == [1], report["culprit_ranks"]
