"""Each input file's format (an enum) and origin (who wrote it), told once where ingest opens it and
carried to the model: the hook's exit records and a run folder's files are known by that, not by the
detectors reading file names again."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclscope.analysis import analyze_paths
from ncclscope.ingest import Format, Origin, ingest, origin_of
from ncclscope.ingest import groups, pool

T0 = 1_765_000_000.0


@pytest.mark.parametrize(("name", "origin"), [
    ("ncclscope-rank3.jsonl", Origin.HOOK),
    ("20261207-101500/ncclscope-rank0.jsonl", Origin.HOOK),  # a folder of runs analysed at once
    ("gpu-b3-ncclscope-rank0.jsonl", Origin.HOOK),  # gathered from the nodes under their names
    ("ncclscope-runs/20261207-101500/stdout.log", Origin.RUN),
    ("jobs/ncclscope-runs/a/stderr.log", Origin.RUN),
    ("ncclscope-env.json", Origin.RUN),
    ("train.log", Origin.INPUT),
    ("logs/rank0.jsonl", Origin.INPUT),
    ("ncclscope.log", Origin.INPUT),  # no "ncclscope-" prefix: the user's own name
    ("my-ncclscope-notes.txt", Origin.INPUT),
])
def test_origin_of_a_name(name: str, origin: Origin) -> None:
    assert origin_of(name) is origin


def _hook_run(d: Path, exits: dict[int, int], names: str = "ncclscope-rank{r}.jsonl", world: int = 2) -> Path:
    """``world`` ranks whose hook saw 5 all-reduces complete everywhere; the ranks in ``exits`` then exited
    with that code; the job was ended by SIGTERM (exit.txt, as ``ncclscope run`` writes it)."""
    d.mkdir(parents=True)
    for r in range(world):
        recs: list[dict] = [{"type": "start", "rank": r, "world": world, "host": "gpu-b3", "pid": 7300 + r, "t": T0}]
        for s in range(1, 6):
            t = T0 + s * 0.2
            recs.append({"type": "coll", "rank": r, "pg": "0", "seq": s, "op": "allreduce", "numel": 8,
                         "dtype": "float32", "where": "fit.py:88 in step", "t": t})
            recs.append({"type": "done", "rank": r, "pg": "0", "seq": s, "t": t + 0.01, "dur_ms": 2.0})
        recs.append({"type": "hb", "rank": r, "t": T0 + 1.5, "step": 5, "pgs": {"0": {"enq": 5, "start": None, "done": 5}}})
        if r in exits:
            recs.append({"type": "exit", "rank": r, "code": exits[r], "t": T0 + 1.6})
        (d / names.format(r=r)).write_text("".join(json.dumps(x) + "\n" for x in recs))
    (d / "exit.txt").write_text("exit=143\n")
    return d


def test_files_carry_format_and_origin_to_the_model(tmp_path: Path) -> None:
    run = _hook_run(tmp_path / "run", {0: 0})
    (run / "ncclscope-runs").mkdir()
    (run / "ncclscope-runs" / "stdout.log").write_text("gpu-b3:7300:7300 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n")
    parsed = {p.file: p for p in ingest([run], workers=1)}
    assert {f: (p.fmt, p.origin) for f, p in parsed.items()} == {
        "exit.txt": (Format.ENV, Origin.INPUT), "ncclscope-rank0.jsonl": (Format.JSONL, Origin.HOOK),
        "ncclscope-rank1.jsonl": (Format.JSONL, Origin.HOOK), "ncclscope-runs/stdout.log": (Format.LOG, Origin.RUN)}
    a = analyze_paths([run], cache=False)
    assert a.run.origins == {"ncclscope-rank0.jsonl": Origin.HOOK, "ncclscope-rank1.jsonl": Origin.HOOK,
                             "ncclscope-runs/stdout.log": Origin.RUN}
    assert a.run.origin("exit.txt") is Origin.INPUT and a.run.from_ncclscope()
    assert [(x.rank, x.exitcode, x.origin) for x in a.run.exits] == [(0, 0, Origin.HOOK)]
    assert all(type(fmt) is Format for _, fmt in a.run.files)


def test_origin_survives_the_worker_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _hook_run(tmp_path / "run", {0: 0, 1: 0}, world=6)
    monkeypatch.setattr(pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(groups, "GROUP_BYTES", 1500)  # a few files a group: several groups, several workers
    with pool.start_ingest([run], workers=2) as job:
        assert job.parallel and len(job.groups) > 2
        pooled = job.result()
    assert [(p.file, p.fmt, p.origin) for p in pooled] == [(p.file, p.fmt, p.origin) for p in ingest([run], workers=1)]
    assert sum(p.origin is Origin.HOOK for p in pooled) == 6


def test_the_hook_exit_records_tell_who_never_exited(tmp_path: Path) -> None:
    """Every collective completed, the job was ended by SIGTERM and only rank 0's hook wrote an exit record:
    rank 1 hangs on its way out. The same records in files that are not the hook's say no rank exited."""
    def exit_hang(run: Path) -> list[tuple[int, ...]]:
        a = analyze_paths([run], cache=False)
        return [f.ranks for f in a.findings if f.kind == "hang" and f.data.get("class") == "exit"]

    assert exit_hang(_hook_run(tmp_path / "hooked", {0: 0})) == [(1,)]
    _hook_run(tmp_path / "runs" / "20261207-101500", {0: 0})
    assert exit_hang(tmp_path / "runs") == [(1,)]  # a folder of runs: the hook's files one level down
    assert exit_hang(_hook_run(tmp_path / "renamed", {0: 0}, names="trace{r}.jsonl")) == [(0, 1)]


def test_every_rank_exited_zero_by_its_hook_is_a_finished_job(tmp_path: Path) -> None:
    """The hook's exit records say every rank ended with 0: whatever the job's own exit says, no hang."""
    a = analyze_paths([_hook_run(tmp_path / "run", {0: 0, 1: 0})], cache=False)
    assert not any(f.kind == "hang" for f in a.findings), [f.message for f in a.findings]
    assert all(x.origin is Origin.HOOK for x in a.run.exits) and len(a.run.exits) == 2
