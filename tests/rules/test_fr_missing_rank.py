"""A hang from Flight Recorder dumps alone: a rank missing from a collective the others wait in (8 and 64
ranks, two behind, a skipped coalesced group, a wrapped buffer, gloo), and how sure the verdict is by who
wrote the dumps and what else is on record."""
from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest
from fr_dumps import expected_of, judge, ranks_of, scenario_module

S = scenario_module()
CASES = S.of_class("missing_rank")


@pytest.mark.parametrize("s", CASES, ids=[s.name for s in CASES])
def test_the_rank_that_never_joined_is_named(s, tmp_path):
    s.write(tmp_path)
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == expected_of(s), j.headline
    assert j.certainty == "likely"  # PyTorch's own writer: it dumps on a timeout or an error


def _renamed(src: Path, dst: Path, stem: str, suffix: str = "") -> Path:
    dst.mkdir()
    for f in sorted(src.iterdir()):
        shutil.copy(f, dst / f"{stem}{ranks_of(f)}{suffix}")
    return dst


def test_dumps_taken_on_request_are_a_possible_hang(tmp_path):
    s = S.by_name("rank_missing_8")
    s.write(tmp_path / "w")
    j = judge(_renamed(tmp_path / "w", tmp_path / "live", "fr_live_rank", ".pkl"))
    assert (j.verdict, j.culprits, j.certainty) == ("hang", (5,), "possible")
    j = judge(_renamed(tmp_path / "w", tmp_path / "named", "dump_file_rank_"))
    assert (j.verdict, j.culprits, j.certainty) == ("hang", (5,), "likely")  # a folder of dumps, writer unknown


def test_a_watchdog_timeout_on_record_confirms_it(tmp_path):
    s = S.by_name("rank_missing_8")
    s.write(tmp_path)
    (tmp_path / "stderr.log").write_text(
        "[rank0]:[E1207 10:01:02.123456789 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank 0] Watchdog "
        "caught collective operation timeout: WorkNCCL(SeqNum=10, OpType=ALLREDUCE, NumelIn=1048576, "
        "NumelOut=1048576, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.\n")
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck, j.certainty) == ("hang", (5,), ("0", 10), "confirmed")


def test_an_entry_its_watchdog_retired_unfinished_confirms_it(tmp_path):
    S.by_name("rank_missing_8").write(tmp_path)
    f = tmp_path / "nccl_trace_rank_0"
    obj = pickle.loads(f.read_bytes())  # our own fixture: plain data
    obj["entries"][-1]["retired"] = True  # timed out: retired by the watchdog, still 'started'
    f.write_bytes(pickle.dumps(obj))
    assert judge(tmp_path).certainty == "confirmed"


def test_every_rank_in_flight_is_a_snapshot_unless_pytorch_dumped_it(tmp_path):
    s = S.by_name("all_joined_never_completed")
    s.write(tmp_path / "w")
    assert judge(tmp_path / "w").verdict == "hang"  # PyTorch wrote them: on a timeout or an error
    assert judge(tmp_path / "w").culprits == ()
    for stem, suffix in (("fr_live_rank", ".pkl"), ("dump_file_rank_", "")):
        j = judge(_renamed(tmp_path / "w", tmp_path / stem, stem, suffix))
        assert j.verdict == "healthy", (stem, j.headline)  # a running job looks like this at any moment


def test_a_cached_run_keeps_the_judgement(tmp_path, monkeypatch):
    from ncclscope.analysis import analyze_paths

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    S.by_name("cause_tp_subgroup").write(tmp_path / "run")
    first = analyze_paths([tmp_path / "run"], cache=True)
    first.finish()
    from ncclscope import cache

    entry = cache.open_entry([tmp_path / "run"])
    assert entry is not None and entry.run.flight_recorder == first.run.flight_recorder
    again = analyze_paths([tmp_path / "run"], cache=True).decision
    assert (again.verdict.value, again.culprit_ranks, again.stuck) == ("hang", (1,), first.decision.stuck)


def _only_active(folder: Path) -> None:
    """Rewrite the dumps as PyTorch writes them with only active entries (TORCH_INCLUDE_ONLY_ACTIVE)."""
    for f in folder.iterdir():
        obj = pickle.loads(f.read_bytes())  # our own fixture: plain data
        obj["entries"] = [e for e in obj["entries"] if e["state"] != "completed"]
        f.write_bytes(pickle.dumps(obj))


def test_dumps_of_active_entries_only_are_read_by_their_status(tmp_path):
    from fr_dumps import RankDump, world

    ds = [RankDump(r, world(3)) for r in range(3)]
    for d in ds:
        for _ in range(5):
            d.coll("all_reduce", [[1024]])
    for d in ds[:2]:  # ranks 0, 1 dumped while in #6; rank 2 dumped later, #6 done (its status says so)
        d.coll("all_reduce", [[1024]], state="started")
    ds[2].coll("all_reduce", [[1024]])
    (tmp_path / "later").mkdir()
    (tmp_path / "behind").mkdir()
    for d in ds:
        d.write(tmp_path / "later", "nccl_trace_rank_")
    _only_active(tmp_path / "later")
    assert judge(tmp_path / "later").verdict == "healthy"  # rank 2 has no entry left, its pg_status completed #6
    for d in ds[:2]:
        d.write(tmp_path / "behind", "nccl_trace_rank_")
    ds2 = RankDump(2, world(3))
    for _ in range(5):
        ds2.coll("all_reduce", [[1024]])
    ds2.write(tmp_path / "behind", "nccl_trace_rank_")
    _only_active(tmp_path / "behind")
    j = judge(tmp_path / "behind")
    assert (j.verdict, j.culprits, j.stuck) == ("hang", (2,), ("0", 6)), j.headline
