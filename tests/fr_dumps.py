"""Flight Recorder dumps written as PyTorch writes them, one rank at a time.

The layout is ``FlightRecorder::dump`` of torch 2.13 (``FlightRecorderDetail.hpp``, format "2.10"):
a pickled dict of ``version``, ``pg_config`` ({name: {name, desc, ranks: "[0, 1]"}}, the groups the
rank is a member of), ``comm_lib_version``, ``pg_status`` ({str(pg_id): {last_enqueued_collective,
last_started_collective, last_completed_collective}}, -1 for none) and ``entries``, each with the
keys in the order PyTorch inserts them (``frames`` first when stacks are dumped, ``duration_ms`` only
when timing is on and the op completed). What PyTorch counts is counted here the same way: record
ids per process over every group (a ring buffer keeps the last ``capacity``), collective sequence
numbers per group (one per coalesced group, shared by its members and its end entry), p2p
sequence numbers per group (one per send/recv or batch), op ids per group. A coalesced group's
members are recorded without events, so they stay ``scheduled``; its end entry carries its state.
Without timing nothing is ever ``started``. gloo retires an entry when its work ends and never
writes ``completed`` (``gloo_style``).

Used by the Flight Recorder benchmark (benchmarks/fr_trace) and the tests of its classes.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

T0_NS = 1_795_000_000_000_000_000  # a fixed clock: nothing here reads the wall clock
STEP_NS = 4_000_000  # 4 ms between entries
TIMEOUT_MS = 600_000

Sizes = list[list[int]]


@dataclass
class Member:
    """One op of a coalesced group."""

    op: str
    ins: Sizes
    outs: Sizes
    dtype: str = "Float"
    out_dtype: str | None = None


@dataclass
class RankDump:
    rank: int
    groups: dict[str, tuple[str, list[int]]]  # pg name -> (desc, members' global ranks), in creation order
    backend: str = "nccl"
    timing: bool = True
    stacks: bool = True
    gloo_style: bool = False  # completed ops: state "scheduled", retired
    version: str = "2.10"
    lib: str = "2.27.5"
    capacity: int | None = None  # ring buffer size
    thread: str = "python"
    t_ns: int = T0_NS
    entries: list[dict[str, Any]] = field(default_factory=list)
    seq: dict[str, int] = field(default_factory=dict)
    p2p_seq: dict[str, int] = field(default_factory=dict)
    op_id: dict[str, int] = field(default_factory=dict)
    next_record: int = 0
    pg_config_override: dict[str, Any] | None = None

    # -- what a training script calls

    def coll(self, op: str, ins: Sizes, outs: Sizes | None = None, *, pg: str = "0", state: str = "completed",
             dtype: str = "Float", out_dtype: str | None = None, where: str | None = None,
             seq: int | None = None) -> dict[str, Any]:
        """One collective (its own sequence number, or ``seq``); ``out_dtype`` "" writes no output dtypes."""
        s = self._next_seq(pg, seq)
        return self._entry(op, pg, s, self.p2p_seq.get(pg, 0), ins, ins if outs is None else outs, dtype,
                           dtype if out_dtype is None else out_dtype, state, where, p2p=False)

    def coalesced(self, members: list[Member], *, end: str = "coalesced", pg: str = "0", state: str = "completed",
                  where: str | None = None) -> list[dict[str, Any]]:
        """A coalesced group: its members (recorded without events) and its end entry, one sequence number."""
        s = self._next_seq(pg, None)
        out = [self._entry(m.op, pg, s, self.p2p_seq.get(pg, 0), m.ins, m.outs, m.dtype,
                           m.dtype if m.out_dtype is None else m.out_dtype,
                           "scheduled", where, p2p=False, events=False) for m in members]
        out.append(self._entry(end, pg, s, self.p2p_seq.get(pg, 0), [], [], None, None, state, where, p2p=False,
                               bump_op=False))
        return out

    def send(self, dst: int, n: int, *, pg: str = "0", state: str = "completed", where: str | None = None,
             dtype: str = "Float") -> dict[str, Any]:
        return self._p2p("send", dst, n, pg, state, where, dtype)

    def recv(self, src: int, n: int, *, pg: str = "0", state: str = "completed", where: str | None = None,
             dtype: str = "Float") -> dict[str, Any]:
        return self._p2p("recv", src, n, pg, state, where, dtype)

    def skip(self, pg: str = "0", n: int = 1) -> None:
        """The group's sequence number moves on as if ``n`` collectives happened before this buffer."""
        self.seq[pg] = self.seq.get(pg, 0) + n

    # -- the dump

    def obj(self) -> dict[str, Any]:
        entries = self.entries[-self.capacity:] if self.capacity else list(self.entries)
        pg_ids = {name: i for i, name in enumerate(self.groups)}
        status: dict[str, dict[str, int]] = {}
        for name, pid in pg_ids.items():
            mine = [e for e in self.entries if e["process_group"][0] == name and not e["is_p2p"]]
            enq = max((e["collective_seq_id"] for e in mine), default=-1)
            done = max((e["collective_seq_id"] for e in mine if self._done(e)), default=-1)
            started = max((e["collective_seq_id"] for e in mine if e["time_discovered_started_ns"]), default=-1)
            status[str(pid)] = {"last_enqueued_collective": enq, "last_started_collective": started if self.timing else -1,
                                "last_completed_collective": done}
        config = self.pg_config_override if self.pg_config_override is not None else {
            name: {"name": name, "desc": desc, "ranks": str(list(ranks))}
            for name, (desc, ranks) in self.groups.items() if self.rank in ranks}
        return {"version": self.version, "pg_config": config, "comm_lib_version": self.lib, "pg_status": status,
                "entries": entries}

    def write(self, folder: Path, prefix: str) -> Path:
        path = Path(folder) / f"{prefix}{self.rank}"
        path.write_bytes(pickle.dumps(self.obj(), protocol=2))
        return path

    # -- PyTorch's counters

    def _next_seq(self, pg: str, seq: int | None) -> int:
        self.seq[pg] = seq if seq is not None else self.seq.get(pg, 0) + 1
        return self.seq[pg]

    def _group_rank(self, pg: str, rank: int) -> int:
        return sorted(self.groups[pg][1]).index(rank)

    def _p2p(self, kind: str, peer: int, n: int, pg: str, state: str, where: str | None, dtype: str) -> dict[str, Any]:
        self.p2p_seq[pg] = self.p2p_seq.get(pg, 0) + 1
        me, other = self._group_rank(pg, self.rank), self._group_rank(pg, peer)
        name = f"send {me}->{other}" if kind == "send" else f"recv {me}<-{other}"
        return self._entry(name, pg, self.seq.get(pg, 0), self.p2p_seq[pg], [[n]], [[n]], dtype, dtype, state,
                           where, p2p=True)

    def _done(self, e: dict[str, Any]) -> bool:
        return e["state"] == "completed" or (self.gloo_style and e["retired"])

    def _entry(self, op: str, pg: str, seq: int, p2p_seq: int, ins: Sizes, outs: Sizes, dtype: str | None,
               out_dtype: str | None, state: str, where: str | None, *, p2p: bool, events: bool = True,
               bump_op: bool = True) -> dict[str, Any]:
        if bump_op:
            self.op_id[pg] = self.op_id.get(pg, 0) + 1
        self.t_ns += STEP_NS
        created = self.t_ns
        started = completed = None
        if events and self.timing and state in ("started", "completed"):
            started = created + 1_000_000
        if events and state == "completed":
            completed = created + 2_000_000
        e: dict[str, Any] = {}
        if self.stacks:
            e["frames"] = _frames(where)
        desc = self.groups[pg][0]
        e.update({
            "record_id": self.next_record, "pg_id": list(self.groups).index(pg), "process_group": (pg, desc),
            "thread_name": self.thread, "thread_id": str(140_000_000_000_000 + self.rank),
            "collective_seq_id": seq, "p2p_seq_id": p2p_seq, "op_id": self.op_id.get(pg, 0),
            "profiling_name": f"{self.backend}:{op}", "time_created_ns": created})
        if completed is not None and self.timing:
            e["duration_ms"] = 1.0
        e.update({
            "input_sizes": ins, "input_dtypes": [dtype] * len(ins) if dtype else [],
            "output_sizes": outs, "output_dtypes": [out_dtype] * len(outs) if out_dtype else [],
            "state": "scheduled" if self.gloo_style and state == "completed" else state,
            "time_discovered_started_ns": started, "time_discovered_completed_ns": completed,
            "retired": completed is not None, "timeout_ms": TIMEOUT_MS, "is_p2p": p2p})
        if self.gloo_style:
            e["time_discovered_completed_ns"] = None
        self.next_record += 1
        self.entries.append(e)
        return e


def _frames(where: str | None) -> list[dict[str, Any]]:
    """A stack as PyTorch symbolizes it: torch's own frames, then the training script's line."""
    frames = [{"name": "all_reduce", "filename": "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py",
               "line": 2806}]
    if where:
        file, _, rest = where.partition(":")
        line, _, func = rest.partition(" in ")
        frames.append({"name": func or "<module>", "filename": f"/home/runner/job/{file}", "line": int(line or 1)})
    return frames


def world(n: int, **groups: tuple[str, list[int]]) -> dict[str, tuple[str, list[int]]]:
    """The default group of ``n`` ranks, then ``groups`` (name -> (desc, members))."""
    return {"0": ("default_pg", list(range(n))), **groups}


def write_job(folder: Path, dumps: list[RankDump], prefix: str = "nccl_trace_rank_") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [d.write(folder, prefix) for d in dumps]


def scenario_module() -> Any:
    """benchmarks/fr_trace/scenarios.py (the benchmark's scenarios, with their expected answers), loaded once."""
    import importlib.util
    import sys

    name = "fr_trace_scenarios"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "benchmarks" / "fr_trace" / "scenarios.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


@dataclass(frozen=True)
class Judged:
    verdict: str
    culprits: tuple[int, ...]
    stuck: tuple[str, int] | None
    certainty: str | None
    headline: str


def judge(paths: list[Path] | Path) -> Judged:
    """ncclscope's decision on a folder (or files) of dumps, without the cache."""
    from ncclscope.analysis import analyze_paths

    d = analyze_paths(paths if isinstance(paths, list) else [paths], cache=False).decision
    return Judged(d.verdict.value, tuple(sorted(d.culprit_ranks)), (d.stuck.pg, d.stuck.seq) if d.stuck else None,
                  d.certainty, d.headline)


def expected_of(s: Any) -> tuple[str, tuple[int, ...], tuple[str, int] | None]:
    return s.expected.verdict, tuple(sorted(s.expected.culprits)), s.expected.stuck


def ranks_of(path: Path) -> int:
    """The global rank a dump's file name ends with."""
    import re

    m = re.search(r"(\d+)(?:\.\w+)?$", path.name)
    assert m is not None, path
    return int(m.group(1))
