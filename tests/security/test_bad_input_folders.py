"""Folders that hold too little or too much: missing ranks, ranks claimed twice, two jobs, mixed
NCCL versions. The report says so (findings of kind ``input``) instead of judging what it cannot see.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from ncclscope.analysis import analyze_paths
from ncclscope.report import to_json


def nccl_log(folder: Path, rank: int, world: int, pid: int, comm_id: str = "0xfeed", version: str = "2.28.9",
             old_format: bool = False, colls: int = 5) -> Path:
    """An NCCL_DEBUG=INFO log of one process, in the 2.23+ form or the 2.10-2.17 form (no commId)."""
    p = f"node{rank // 8}:{pid}:{pid} [{rank % 8}] NCCL INFO "
    if old_format:
        lines = [f"NCCL version {version}+cuda11.4",
                 f"{p}comm 0x{pid}0 rank {rank} nranks {world} cudaDev {rank % 8} busId {rank % 8}000 - Init COMPLETE"]
    else:
        lines = [f"{p}NCCL version {version}+cuda13.0"] + [
            f"{p}ncclCommInitRankConfig comm 0x{pid}0 rank {rank} nranks {world} cudaDev {rank % 8} nvmlDev "
            f"{rank % 8} busId {rank % 8}000 commId {comm_id} - Init {ph}" for ph in ("START", "COMPLETE")]
    lines += [f"{p}AllReduce: opCount {i:x} sendbuff 0x1 recvbuff 0x2 count 1024 datatype 7 op 0 root 0 "
              f"comm 0x{pid}0 [nranks={world}] stream 0x3" for i in range(colls)]
    f = folder / f"node{rank // 8}.{pid}.nccl.log"
    f.write_text("\n".join(lines) + "\n")
    return f


def _input_findings(a) -> list:
    return [f for f in a.findings if f.kind == "input"]


def test_world_of_4_with_logs_of_3_names_the_missing_rank(tmp_path):
    for r in range(3):
        nccl_log(tmp_path, r, 4, 100 + r)
    a = analyze_paths([tmp_path])
    assert a.run.job.world_size == 4
    miss = [f for f in _input_findings(a) if "no input from" in f.message]
    assert len(miss) == 1 and miss[0].ranks == (3,), a.findings
    assert "rank 3 of a world of 4" in miss[0].message and "not judged" in miss[0].message
    assert 3 not in a.decision.culprit_ranks


def test_missing_ranks_listed_as_ranges(tmp_path):
    for r in (0, 1, 2, 5, 9):
        nccl_log(tmp_path, r, 16, 100 + r, colls=1)
    a = analyze_paths([tmp_path])
    (miss,) = [f for f in _input_findings(a) if "no input from" in f.message]
    assert "ranks 3-4, 6-8, 10-15 of a world of 16" in miss.message
    assert to_json(a)["findings"]  # serialisable


def test_complete_corpus_runs_report_no_input_problem(corpus):
    for run in ("hang_rank1_stuck", "crash_rank1_exit", "healthy_ddp_p2p"):
        assert not _input_findings(analyze_paths([corpus / run])), run


def test_two_processes_claiming_rank_0_are_reported(tmp_path):
    nccl_log(tmp_path, 0, 2, 100)
    nccl_log(tmp_path, 1, 2, 101)
    nccl_log(tmp_path, 0, 2, 200)  # a second process says it is rank 0 of the same communicator
    a = analyze_paths([tmp_path])
    (dup,) = [f for f in _input_findings(a) if "claimed by" in f.message]
    assert dup.ranks == (0,) and "node0:100" in dup.message and "node0:200" in dup.message
    assert a.decision.verdict.value == "unknown"


def test_two_real_jobs_in_one_folder_are_not_merged_into_one_verdict(corpus, tmp_path):
    mixed = tmp_path / "mixed"
    shutil.copytree(corpus / "hang_rank1_stuck", mixed)
    for f in (corpus / "healthy_ddp_p2p").iterdir():
        shutil.copy(f, mixed / f"other_{f.name}")
    a = analyze_paths([mixed])
    (two,) = [f for f in _input_findings(a) if "more than one job" in f.message]
    assert "0x2529223d14542a77" in two.message and "0x9913440b67c3cc19" in two.message
    assert a.decision.verdict.value == "unknown" and a.decision.culprit_ranks == ()
    assert "more than one job" in a.decision.headline


def test_jobs_of_different_world_sizes(tmp_path):
    for r in range(4):
        nccl_log(tmp_path, r, 4, 100 + r, comm_id="0xaaaa")
    for r in range(2):
        nccl_log(tmp_path, r, 2, 300 + r, comm_id="0xbbbb")
    a = analyze_paths([tmp_path])
    assert a.run.job.world_size == 4
    (two,) = [f for f in _input_findings(a) if "more than one job" in f.message]
    assert "node0:300" in two.message and "communicators of 2 ranks" in two.message
    assert two.data["other_world_sizes"] == [2] and a.decision.verdict.value == "unknown"


def test_process_cut_before_init_is_flagged_not_blocking(tmp_path):
    for r in range(2):
        nccl_log(tmp_path, r, 2, 100 + r)
    (tmp_path / "node0.555.nccl.log").write_text("node0:555:555 [0] NCCL INFO Using network Socket\n")
    a = analyze_paths([tmp_path])
    (stray,) = [f for f in _input_findings(a) if "no rank in this job" in f.message]
    assert "node0:555" in stray.message and a.decision.verdict.value != "unknown"


def test_mixed_nccl_versions_and_formats_in_one_folder(tmp_path):
    nccl_log(tmp_path, 0, 2, 100, version="2.17.1", old_format=True)
    nccl_log(tmp_path, 1, 2, 101, version="2.28.9")
    a = analyze_paths([tmp_path])
    assert sorted(a.run.job.nccl_versions.values()) == ["2.17.1", "2.28.9"]
    assert {p.rank for p in a.run.job.processes} == {0, 1}
    assert any("2.17.1" in f.message and "2.28.9" in f.message for f in a.findings), [f.message for f in a.findings]


@pytest.mark.parametrize("flag", ["", "--json"])
def test_cli_reports_missing_ranks(tmp_path, flag):
    for r in range(3):
        nccl_log(tmp_path, r, 4, 100 + r)
    p = subprocess.run([sys.executable, "-m", "ncclscope", "analyze", str(tmp_path)] + ([flag] if flag else []),
                       cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    if flag:
        got = json.loads(p.stdout)
        assert any(f["kind"] == "input" and f["ranks"] == [3] for f in got["findings"])
    else:
        assert "no input from rank 3 of a world of 4" in p.stdout
