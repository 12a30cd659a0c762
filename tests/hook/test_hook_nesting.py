"""A collective that torch runs through another wrapped one is traced once: ``_all_gather_base``
(torch implements it with ``all_gather_into_tensor``) and ``all_reduce`` under a torch function mode
(``with torch.device(...)``: ``all_reduce`` hands itself to the mode, which calls it again) each make
one ``coll`` record per call, at the user's line, with the group's sequence number of that call; a
collective that raises inside torch leaves the next calls traced (the per-thread guard is reset)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hook_procs import rank_env
from ncclscope.launch import prepare_hook_site

pytestmark = pytest.mark.slow
N = 40

SCRIPT = '''
import json, warnings
import torch
import torch.distributed as dist

warnings.simplefilter("ignore")  # _all_gather_base is deprecated
dist.init_process_group("gloo")
x = torch.ones(4)
out = torch.empty(4)
N = int(__import__("sys").argv[1])
for _ in range(N):
    dist.all_reduce(x)  # PLAIN LINE
with torch.device("cpu"):  # a torch function mode
    for _ in range(N):
        dist.all_reduce(x)  # MODE LINE
for _ in range(N):
    dist._all_gather_base(out, x)  # BASE LINE
try:
    dist.all_reduce(x, op="no such op")  # RAISE LINE
except Exception:
    pass
for _ in range(N):
    dist.all_reduce(x)  # AFTER LINE
seq = dist.distributed_c10d._get_default_group()._get_sequence_number_for_group()
dist.destroy_process_group()
print(json.dumps({"seq": seq}))
'''


def test_a_collective_run_through_another_is_traced_once(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = tmp_path / "nest_job.py"
    script.write_text(SCRIPT)
    lines = {tag: i for i, text in enumerate(SCRIPT.splitlines(), 1) for tag in ("PLAIN", "MODE", "BASE", "RAISE", "AFTER")
             if f"# {tag} LINE" in text}
    env = rank_env(run_dir, prepare_hook_site(run_dir), NCCLSCOPE_HOOK_RECORDS_S="1000000", NCCLSCOPE_HOOK_CALLS_S="0")
    proc = subprocess.run([sys.executable, str(script), str(N)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    final_seq = json.loads(proc.stdout.strip().splitlines()[-1])["seq"]
    recs = [json.loads(line) for line in (run_dir / "ncclscope-rank0.jsonl").read_text().splitlines()]
    assert not [r for r in recs if r["type"] == "error"]
    colls = [r for r in recs if r["type"] == "coll"]
    by_line = {tag: [r for r in colls if r["where"] == f"nest_job.py:{line} in <module>"] for tag, line in lines.items()}
    assert len(colls) == sum(len(v) for v in by_line.values()), [r["where"] for r in colls]  # none from inside torch
    for tag in ("PLAIN", "MODE", "BASE", "AFTER"):
        assert len(by_line[tag]) == N, (tag, len(by_line[tag]))
    assert {r["op"] for r in by_line["BASE"]} == {"allgather"}
    assert len(by_line["RAISE"]) == 1
    seqs = [r["seq"] for tag in ("PLAIN", "MODE", "BASE", "AFTER") for r in by_line[tag]]
    assert len(set(seqs)) == len(seqs) == 4 * N  # one record per collective: no sequence number twice
    assert max(seqs) == final_seq  # the last traced call is the group's last collective
    done = {r["seq"] for r in recs if r["type"] == "done" and r["how"] == "sync"}
    assert set(seqs) <= done  # each blocking CPU call has its done line
