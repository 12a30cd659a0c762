"""Ring and channel-connection lines folded into one record per run (``sources.fold``) give the model
exactly what the lines one by one give it: the same rings, the same connections in the same order, on
the same communicator. Real NCCL 2.19+ order: the init's ring lines, its first COLL line, then the
channel connections that first collective sets up, then a second communicator's init on the same
thread, and a second process's lines interleaved in the same file (two ranks writing one log)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from ncclscope.ingest import parse_file
from ncclscope.model_build import build_run
from ncclscope.sources import fold
from ncclscope.sources.records import NcclConnection, NcclRing, NcclTopologyRun

HEAD = "[2026-12-02 01:00:00.{us:06d}] {host}:{pid}:{pid} [{dev}] NCCL INFO "


def _init(host: str, pid: int, dev: int, rank: int, comm: str, cid: str, lines: list[str]) -> None:
    h = HEAD.format(us=len(lines), host=host, pid=pid, dev=dev)
    lines.append(h + f"ncclCommInitRankConfig comm {comm} rank {rank} nranks 2 cudaDev {dev} nvmlDev {dev} "
                     f"busId {dev}a000 commId {cid} - Init START")
    lines.append(h + f"comm {comm} rank {rank} nRanks 2 nNodes 1 localRanks 2 localRank {rank} MNNVL 0")
    for c in range(4):
        lines.append(h + f"Ring {c:02d} : {1 - rank} -> {rank} -> {1 - rank}")
    lines.append(h + f"Trees [0] -1/-1/-1->{rank}->{1 - rank} [1] -1/-1/-1->{rank}->{1 - rank}")
    lines.append(h + f"ncclCommInitRankConfig comm {comm} rank {rank} nranks 2 cudaDev {dev} nvmlDev {dev} "
                     f"busId {dev}a000 commId {cid} - Init COMPLETE")


def _coll(host: str, pid: int, dev: int, comm: str, op_count: int, lines: list[str]) -> None:
    lines.append(HEAD.format(us=len(lines), host=host, pid=pid, dev=dev)
                 + f"AllReduce: opCount {op_count:x} sendbuff 0x7f0000000000 recvbuff 0x7f0000000000 count 1024 "
                 f"datatype 7 op 0 root 0 comm {comm} [nranks=2] stream 0x5600000000")


def _channels(host: str, pid: int, dev: int, rank: int, via: str, lines: list[str]) -> None:
    h = HEAD.format(us=len(lines), host=host, pid=pid, dev=dev)
    for c in range(4):
        lines.append(h + f"Channel {c:02d}/0 : {rank}[{dev}] -> {1 - rank}[{1 - dev}] via {via}")
    lines.append(h + "Connected all rings, use ring PXN 0 GDR 1")


def _log(tmp_path: Path) -> Path:
    lines: list[str] = []
    _init("nodeA", 11, 0, 0, "0x1000", "0xaaa", lines)
    _coll("nodeA", 11, 0, "0x1000", 0, lines)
    _channels("nodeA", 11, 0, 0, "P2P/CUMEM/read", lines)
    _init("nodeA", 22, 1, 1, "0x2000", "0xaaa", lines)  # the second rank's lines in the same file
    for k in range(1, 4):
        _coll("nodeA", 11, 0, "0x1000", k, lines)
    _init("nodeA", 11, 0, 0, "0x3000", "0xbbb", lines)  # a second communicator on the same thread
    _coll("nodeA", 22, 1, "0x2000", 0, lines)
    _channels("nodeA", 22, 1, 1, "SHM/direct/direct", lines)
    _coll("nodeA", 11, 0, "0x3000", 0, lines)
    _channels("nodeA", 11, 0, 0, "NET/IB/0/GDRDMA", lines)
    path = tmp_path / "both.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def _unfolded(monkeypatch: pytest.MonkeyPatch, path: Path):
    monkeypatch.setattr("ncclscope.ingest.assemble.fold_topology", lambda recs, batches: recs)
    try:
        return parse_file(path, path.name)
    finally:
        monkeypatch.undo()


def _topology(run) -> list[dict]:
    return [dataclasses.asdict(c) for c in run.communicators]


def test_folded_records_build_the_same_communicators(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _log(tmp_path)
    plain = _unfolded(monkeypatch, path)
    folded = parse_file(path, path.name)
    runs = [r for r in folded.records if isinstance(r, NcclTopologyRun)]
    assert runs, "ring and channel lines were folded"
    assert not any(isinstance(r, (NcclRing, NcclConnection)) for r in folded.records)
    n_plain = sum(isinstance(r, (NcclRing, NcclConnection)) for r in plain.records)
    assert sum(len(r.rings) + len(r.conns) for r in runs) == n_plain
    got = _topology(build_run([folded]))
    assert got == _topology(build_run([plain]))
    assert {c["id"] for c in got} == {"0xaaa", "0xbbb"}
    assert all(c["connections"] for c in got) and any(c["rings"] for c in got)


def test_a_run_breaks_at_another_thread_and_at_a_coll_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _log(tmp_path)
    plain = _unfolded(monkeypatch, path)
    recs = [r for r in plain.records if not hasattr(r, "procs")]  # the records alone, no COLL rows
    batches = [r for r in plain.records if hasattr(r, "procs")]
    for r in fold.fold_topology(recs, batches):
        if isinstance(r, NcclTopologyRun):
            members = [x for x in recs if isinstance(x, (NcclRing, NcclConnection)) and r.line <= x.line <= r.last_line]
            assert {(x.host, x.pid, x.tid) for x in members} == {(r.host, r.pid, r.tid)}
            assert len(members) == len(r.rings) + len(r.conns)


def test_a_coll_row_between_two_ring_lines_ends_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A COLL line can move its process's current communicator, so the lines after it start a new run."""
    lines: list[str] = []
    h = HEAD.format(us=0, host="n", pid=5, dev=0)
    lines += [h + "Ring 00 : 1 -> 0 -> 1", h + "Ring 01 : 1 -> 0 -> 1"]
    _coll("n", 5, 0, "0x1000", 0, lines)
    lines += [h + "Ring 02 : 1 -> 0 -> 1", h + "Ring 03 : 1 -> 0 -> 1"]
    path = tmp_path / "cut.log"
    path.write_text("\n".join(lines) + "\n")
    plain = _unfolded(monkeypatch, path)
    recs = [r for r in plain.records if not hasattr(r, "procs")]
    batches = [r for r in plain.records if hasattr(r, "procs")]
    assert [len(r.rings) for r in fold.fold_topology(recs, batches)] == [2, 2]
    assert [len(r.rings) for r in fold.fold_topology(recs, [])] == [4]


def test_a_lone_topology_line_stays_a_record(tmp_path: Path) -> None:
    h = HEAD.format(us=0, host="n", pid=5, dev=0)
    path = tmp_path / "one.log"
    path.write_text(h + "Ring 00 : 1 -> 0 -> 1\n" + h + "Connected all rings\n")
    recs = parse_file(path, path.name).records
    assert [type(r) for r in recs if isinstance(r, (NcclRing, NcclTopologyRun))] == [NcclRing]


def test_a_batch_is_cut_only_where_the_model_needs_the_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rank log's COLL rows stay one batch across the channel lines its first collective sets up (one
    process, one communicator: where they fall among the rows changes nothing), and the model is the one
    made when every record cuts the batches, communicators and collectives table alike."""
    import pandas as pd
    from ncclscope.ingest import assemble
    from ncclscope.sources.records import Rec

    lines: list[str] = []
    _init("n", 5, 0, 0, "0x1000", "0xaaa", lines)
    _coll("n", 5, 0, "0x1000", 0, lines)
    _channels("n", 5, 0, 0, "P2P/CUMEM/read", lines)
    for k in range(1, 6):
        _coll("n", 5, 0, "0x1000", k, lines)
    one = tmp_path / "one.log"
    one.write_text("\n".join(lines) + "\n")
    assert sum(hasattr(r, "procs") for r in parse_file(one, one.name).records) == 1
    two = _log(tmp_path)  # two processes in one file, a second communicator's init between rows
    for path in (one, two):
        now = build_run([parse_file(path, path.name)])
        monkeypatch.setattr(assemble, "_MOVES_CURRENT", (Rec,))  # every record cuts, as before
        cut = build_run([parse_file(path, path.name)])
        monkeypatch.undo()
        assert _topology(now) == _topology(cut)
        pd.testing.assert_frame_equal(now.collectives, cut.collectives)
    assert sum(hasattr(r, "procs") for r in parse_file(two, two.name).records) > 1  # the Init lines still cut
