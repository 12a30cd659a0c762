"""Flight Recorder scenarios: every scenario of PyTorch's test_fr_analysis.py, the shapes ncclscope used
to miss, fr_trace's own faults, and other real failure modes, each written as per-rank dumps in the format
torch 2.13 writes (``tests/fr_dumps.py``) with the answer the scenario itself calls for.

An expected answer is what happened in the job the dumps describe: ``hang`` (a collective some rank
waits in for ever; the culprits are the ranks it waits on, none when every rank is in it), ``desync``
(ranks called different collectives, or a call wrong on its own; the culprits are the ranks whose call is
wrong), ``healthy`` (nothing wrong: in flight, or done). ``stuck`` is (process group, sequence number) of
the collective the answer is about; a send/recv is keyed ``<pg>:p2p`` with the waiting rank's p2p
sequence number. Not either tool's output: scenarios were written before either was run on them.

File names say who wrote the dumps: ``nccl_trace_rank_<r>`` is PyTorch's own writer (a dump on a
timeout or an error); the test-file scenarios keep the test's ``dump_file_rank_<r>`` (a folder of
dumps, the writer not known). test_fr_analysis.py's events are rebuilt as dumps with the test's ops,
states, sizes, sequence numbers and groups; its dtype strings are written as PyTorch writes them
("float32" -> "Float"), and where a placeholder size is impossible for its op on two ranks (an
all_gather_single whose output equals its input) the realistic size is used, as noted.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from fr_dumps import Member, RankDump, world

WATCHDOG = "nccl_trace_rank_"  # PyTorch's writer (TORCH_NCCL_DEBUG_INFO_TEMP_FILE's default stem)
TEST_NAMES = "dump_file_rank_"  # test_fr_analysis.py's LOADED_FR_DETAIL_TEMPLATE keys
WHERE = "train.py:88 in step"


@dataclass(frozen=True)
class Expected:
    verdict: str  # hang | desync | healthy
    culprits: tuple[int, ...] = ()
    stuck: tuple[str, int] | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    group: str  # test_fr_analysis | miss | fr_trace_fault | real
    classes: tuple[str, ...]  # what it exercises (tests pick their class's scenarios by these)
    story: str
    expected: Expected
    build: Callable[[], tuple[list[RankDump], str]] = field(repr=False)  # the dumps and their file stem

    def write(self, folder: Path) -> list[Path]:
        dumps, stem = self.build()
        folder.mkdir(parents=True, exist_ok=True)
        return [d.write(folder, stem) for d in dumps]


SCENARIOS: list[Scenario] = []


def scenario(name: str, group: str, classes: tuple[str, ...], story: str, expected: Expected):  # type: ignore[no-untyped-def]
    def wrap(fn: Callable[[], tuple[list[RankDump], str]]) -> Callable[[], tuple[list[RankDump], str]]:
        SCENARIOS.append(Scenario(name, group, classes, story, expected, fn))
        return fn
    return wrap


def ranks(n: int, groups: dict | None = None, **kw) -> list[RankDump]:  # type: ignore[no-untyped-def, type-arg]
    g = groups or world(n)
    return [RankDump(r, g, **kw) for r in range(n)]


def history(ds: list[RankDump], k: int, op: str = "all_reduce", size: int = 1 << 20, pg: str = "0") -> None:
    for d in ds:
        for _ in range(k):
            d.coll(op, [[size]], pg=pg, where=WHERE)


# ---------------------------------------------------------------- test_fr_analysis.py

DT = {"float32": "Float", "float16": "Half", "": None}
TEST_PG = {"0": ("default", [0, 1])}


def _event(d: RankDump, op: str, ins, outs, state: str, seq: int, out_dtype: str = "float32") -> None:  # type: ignore[no-untyped-def]
    d.coll(op, ins, outs, state=state, seq=seq, out_dtype=DT[out_dtype] or "", dtype="Float")


def _pair(a: tuple, b: tuple, backend: str = "nccl") -> Callable[[], tuple[list[RankDump], str]]:  # type: ignore[type-arg]
    def build() -> tuple[list[RankDump], str]:
        ds = [RankDump(r, TEST_PG, timing=False, stacks=False, backend=backend) for r in (0, 1)]
        _event(ds[0], *a)
        _event(ds[1], *b)
        return ds, TEST_NAMES
    return build


E1 = ("all_reduce", [[4, 4]], [[4, 4]], "scheduled", 1)
MATCH = [
    ("match_same_all_reduce", E1, E1, Expected("healthy"),
     "e1 vs e1: both ranks in all_reduce #1, scheduled (in flight, same call)"),
    ("match_all_reduce_vs_all_gather", E1, ("all_gather", [[4, 4]], [[4, 4]], "scheduled", 1),
     Expected("desync", (1,), ("0", 1)),
     ("e1 vs e2: rank 0 all_reduce, rank 1 all_gather at #1 (type mismatch); rank 1's all_gather is also wrong on "
      "its own (its output holds one input where two ranks gather two), so rank 1 is the one to fix")),
    ("match_all_to_all", ("all_to_all", [[4, 4]], [[4, 4]], "scheduled", 1),
     ("all_to_all", [[4, 4]], [[4, 4]], "scheduled", 1), Expected("healthy"),
     "e3 vs e4: the same all_to_all on both ranks (UNDECIDED in fr_trace: totals 32 in, 32 out)"),
    ("match_input_size", E1, ("all_reduce", [[5, 4]], [[4, 4]], "scheduled", 1), Expected("desync", (1,), ("0", 1)),
     "e1 vs e5: rank 1's all_reduce has input [5, 4] and output [4, 4]: its own call is wrong"),
    ("match_output_size", E1, ("all_reduce", [[4, 4]], [[5, 4]], "scheduled", 1), Expected("desync", (1,), ("0", 1)),
     "e1 vs e6: rank 1's all_reduce output [5, 4] differs from rank 0's and from its own input"),
    ("match_own_in_out_both", ("all_reduce", [[4, 4]], [[5, 4]], "scheduled", 2),
     ("all_reduce", [[4, 4]], [[5, 4]], "scheduled", 2), Expected("desync", (0, 1), ("0", 2)),
     "e7 vs e7: both ranks call all_reduce #2 with input [4, 4] and output [5, 4]: every call is wrong on its own"),
    ("match_state_scheduled_vs_completed", E1, ("all_reduce", [[4, 4]], [[4, 4]], "completed", 1), Expected("healthy"),
     "e1 vs e9: rank 1 completed all_reduce #1, rank 0 has not noticed yet (scheduled): it ran on both"),
    ("match_output_dtype", ("all_reduce", [[4, 4]], [[4, 4]], "completed", 1, "float16"),
     ("all_reduce", [[4, 4]], [[4, 4]], "completed", 1), Expected("desync", (0,), ("0", 1)),
     "e10 vs e9: rank 0's all_reduce writes Half output from Float input; rank 1's is Float to Float"),
    ("match_gather_root_vs_other", ("gather", [[4, 4]], [[4, 4], [4, 4]], "completed", 1),
     ("gather", [[4, 4]], [[]], "completed", 1, ""), Expected("healthy"),
     "e11 vs e12: gather, the root's output holds both inputs, the other rank passes none"),
    ("match_gather_other_output", ("gather", [[4, 4]], [[4, 4], [4, 4]], "completed", 1),
     ("gather", [[4, 4]], [[4, 4]], "completed", 1, ""), Expected("healthy"),
     "e11 vs e13: gather, a non-root output that is not the root's (outputs differ legitimately)"),
]
for _name, _a, _b, _exp, _story in MATCH:
    scenario(_name, "test_fr_analysis", ("test_match",), _story, _exp)(_pair(_a, _b))

COLLECTIVES = sorted([
    "broadcast", "_broadcast_oop", "reduce", "_reduce_oop", "all_gather", "all_gather_single", "all_gather_v",
    "all_reduce", "_all_gather_base", "all_gather_into_tensor_coalesced", "reduce_scatter", "reduce_scatter_single",
    "reduce_scatter_v", "reduce_scatter_tensor_coalesced", "_reduce_scatter_base", "gather", "scatter", "all_to_all",
    "all_to_all_single", "all_to_all_v_single", "all_reduce_barrier", "barrier", "split", "new_window",
    "allreduce_coalesced", "ALLGATHER_coalesced", "REDUCE_SCATTER_coalesced"])


def _all_events_sizes(op: str) -> tuple[list[list[int]], list[list[int]], str]:
    ins, outs, note = [[4, 4]], [[4, 4]], ""
    if op in ("reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor_coalesced"):
        outs = [[ins[0][0] * 2]]  # as the test sets it
    if op in ("all_gather", "_all_gather_base", "all_gather_into_tensor_coalesced"):
        outs = [[math.prod(ins[0]) * 2]]  # as the test sets it
    if op == "all_gather_single":
        outs, note = [[8, 4]], " (output [8, 4]: the test's [4, 4] is impossible for two ranks)"
    if op == "reduce_scatter_single":
        outs, note = [[8]], " (output [8]: the test's [4, 4] is impossible for two ranks)"
    return ins, outs, note


for _op in COLLECTIVES:
    _ins, _outs, _note = _all_events_sizes(_op)
    scenario(f"all_events_{_op}", "test_fr_analysis", ("test_all_events",),
             f"test_all_events: the same {_op} #1 on both ranks, scheduled{_note}", Expected("healthy"))(
        _pair((_op, _ins, _outs, "scheduled", 1), (_op, _ins, _outs, "scheduled", 1)))

for _backend in ("nccl", "ncclx", "gloo", "xccl", "unknown_backend"):
    _a = ("all_reduce", [[4, 4]], [[4, 4]], "completed", 1)
    scenario(f"backend_{_backend}", "test_fr_analysis", ("test_backend",),
             f"FlightRecorderOpBackendTest: a completed all_reduce #1 on both ranks, recorded as '{_backend}:'",
             Expected("healthy"))(_pair(_a, _a, backend=_backend))

def _builddb(fill: Callable[[RankDump], None]) -> Callable[[], tuple[list[RankDump], str]]:
    def build() -> tuple[list[RankDump], str]:
        # the test's template: the default group of both ranks, and on each rank a "1" (sub_pg) of itself alone
        ds = [RankDump(r, {"0": ("default_pg", [0, 1]), "1": ("sub_pg", [r])}, timing=False, stacks=False)
              for r in (0, 1)]
        for d in ds:
            fill(d)
        return ds, TEST_NAMES
    return build


def _db1(d: RankDump) -> None:
    d.coll("all_reduce", [[4, 4]])
    d.coll("all_reduce", [[5, 5]], pg="1")


def _db4(d: RankDump) -> None:
    second = [[5, 5]] if d.rank == 0 else [[4, 4]]
    d.coalesced([Member("_broadcast_oop", [[4, 4]], [[4, 4]]), Member("_broadcast_oop", second, second)],
                end="ALLGATHER_coalesced")


def _db6(d: RankDump) -> None:
    d.coll("all_reduce", [[4, 4]])
    if d.rank == 1:
        d.coalesced([Member("_reduce_oop", [[4, 4]], [[4, 4]]), Member("_reduce_oop", [[4, 4]], [[4, 4]])],
                    end="REDUCE_SCATTER_coalesced", state="scheduled")


BUILD_DB = [
    ("builddb_all_reduce_two_groups", _db1, Expected("healthy"),
     "testBuildDB case 1: all_reduce in the default group, then in each rank's own one-rank sub_pg (both named '1')"),
    ("builddb_allreduce_coalesced", lambda d: d.coll("allreduce_coalesced", [[4, 4]]), Expected("healthy"),
     "testBuildDB case 2: one allreduce_coalesced on both ranks"),
    ("builddb_broadcast_coalesced", lambda d: d.coalesced(
        [Member("broadcast", [[4, 4]], [[4, 4]]), Member("broadcast", [[4, 4]], [[4, 4]])]), Expected("healthy"),
     "testBuildDB case 3: two broadcasts coalesced (one sequence number), both ranks alike"),
    ("builddb_uneven_broadcast_coalesced", _db4, Expected("desync", (0,), ("0", 1)),
     ("testBuildDB case 4: the second broadcast of a coalesced group is [5, 5] on rank 0, [4, 4] on rank 1; rank "
      "0's call is the one no rank makes elsewhere (rank 1's [4, 4] is rank 0's own first member)")),
    ("builddb_reduce_coalesced", lambda d: d.coalesced(
        [Member("_reduce_oop", [[4, 4]], [[4, 4]]), Member("_reduce_oop", [[4, 4]], [[4, 4]])],
        end="REDUCE_SCATTER_coalesced"), Expected("healthy"),
     "testBuildDB case 5: two reduces coalesced, both ranks alike"),
    ("builddb_rank0_skips_coalesced", _db6, Expected("hang", (0,), ("0", 2)),
     ("testBuildDB case 6: rank 1 enters a coalesced group #2 that rank 0 never issues (the test marks it "
      "completed, which no collective can be without rank 0: written in flight)")),
]
for _name, _fill, _exp, _story in BUILD_DB:
    scenario(_name, "test_fr_analysis", ("test_build_db",), _story, _exp)(_builddb(_fill))


# ---------------------------------------------------------------- what ncclscope missed

def _missing_rank(n: int, culprit: int, k: int = 9) -> Callable[[], tuple[list[RankDump], str]]:
    def build() -> tuple[list[RankDump], str]:
        ds = ranks(n)
        history(ds, k)
        for d in ds:
            if d.rank != culprit:
                d.coll("all_reduce", [[1 << 20]], state="started", where=WHERE)
        return ds, WATCHDOG
    return build


for _n, _c in ((8, 5), (64, 37)):
    scenario(f"rank_missing_{_n}", "miss", ("missing_rank",),
             f"{_n} ranks: rank {_c} never issues all_reduce #10, the others wait in it (timeout dumps)",
             Expected("hang", (_c,), ("0", 10)))(_missing_rank(_n, _c))


@scenario("rank_two_behind", "miss", ("missing_rank",),
          "4 ranks: ranks 0, 1, 3 issued #11 (started) and #12 (scheduled); rank 2 completed #10 and stopped",
          Expected("hang", (2,), ("0", 11)))
def _two_behind() -> tuple[list[RankDump], str]:
    ds = ranks(4)
    history(ds, 10)
    for d in ds:
        if d.rank != 2:
            d.coll("all_reduce", [[1 << 20]], state="started", where=WHERE)
            d.coll("all_reduce", [[1 << 18]], state="scheduled", where=WHERE)
    return ds, WATCHDOG


@scenario("missing_dump_file", "miss", ("missing_dump",),
          "4 ranks: ranks 0-2 wait in all_reduce #7; rank 3 left no dump (a process stuck hard cannot dump)",
          Expected("hang", (3,), ("0", 7)))
def _missing_dump() -> tuple[list[RankDump], str]:
    ds = ranks(4)
    history(ds, 6)
    for d in ds[:3]:
        d.coll("all_reduce", [[1 << 20]], state="started", where=WHERE)
    return ds[:3], WATCHDOG


@scenario("skipped_coalesced_group", "miss", ("missing_rank", "coalesced"),
          "4 ranks: ranks 0-2 enter a coalesced all_gather group #6; rank 3 never issues it",
          Expected("hang", (3,), ("0", 6)))
def _skipped_coalesced() -> tuple[list[RankDump], str]:
    ds = ranks(4)
    history(ds, 5)
    for d in ds[:3]:
        d.coalesced([Member("_all_gather_base", [[256]], [[1024]])] * 2, end="ALLGATHER_coalesced",
                    state="started", where=WHERE)
    return ds, WATCHDOG


def _one_odd(n: int, k: int, odd: int, normal: Member, other: Member, state: str = "started"):  # type: ignore[no-untyped-def]
    def build() -> tuple[list[RankDump], str]:
        ds = ranks(n)
        history(ds, k)
        for d in ds:
            m = other if d.rank == odd else normal
            d.coll(m.op, m.ins, m.outs, dtype=m.dtype, out_dtype=m.out_dtype, state=state, where=WHERE)
        return ds, WATCHDOG
    return build


scenario("output_size_mismatch", "miss", ("mismatch",),
         "4 ranks, reduce_scatter #4: rank 2's output is [2048] where the others' (and its input's share) is [1024]",
         Expected("desync", (2,), ("0", 4)))(_one_odd(4, 3, 2, Member("_reduce_scatter_base", [[4096]], [[1024]]),
                                                      Member("_reduce_scatter_base", [[4096]], [[2048]])))
scenario("output_dtype_mismatch", "miss", ("mismatch",),
         "4 ranks, all_gather #4: rank 1 gathers Float input into a BFloat16 output",
         Expected("desync", (1,), ("0", 4)))(_one_odd(4, 3, 1, Member("_all_gather_base", [[256]], [[1024]]),
                                                      Member("_all_gather_base", [[256]], [[1024]],
                                                             out_dtype="BFloat16")))


@scenario("own_in_out_every_rank", "miss", ("mismatch",),
          "4 ranks, all_gather #3 with output [512] from input [256] on every rank (4 ranks gather 1024)",
          Expected("desync", (0, 1, 2, 3), ("0", 3)))
def _own_in_out() -> tuple[list[RankDump], str]:
    ds = ranks(4)
    history(ds, 2)
    for d in ds:
        d.coll("_all_gather_base", [[256]], [[512]], state="started", where=WHERE)
    return ds, WATCHDOG


@scenario("coalesced_member_mismatch", "miss", ("mismatch", "coalesced"),
          "4 ranks, a coalesced group #5 of three all_gathers; rank 3's second one gathers [512] where the others "
          "gather [256]", Expected("desync", (3,), ("0", 5)))
def _coalesced_member() -> tuple[list[RankDump], str]:
    ds = ranks(4)
    history(ds, 4)
    ok = Member("_all_gather_base", [[256]], [[1024]])
    for d in ds:
        second = Member("_all_gather_base", [[512]], [[2048]]) if d.rank == 3 else ok
        d.coalesced([ok, second, ok], end="ALLGATHER_coalesced", state="started", where=WHERE)
    return ds, WATCHDOG


TP = world(4, **{"1": ("tp", [0, 1]), "2": ("tp", [2, 3])})


@scenario("cause_tp_subgroup", "miss", ("cause",),
          "4 ranks, tensor-parallel pairs {0,1} ('1') and {2,3} ('2'), the data-parallel all_reduce in the default "
          "group: rank 1 never joins tp all_reduce #4, rank 0 waits in it; ranks 2, 3 finish theirs and wait in "
          "default #4 for ranks 0 and 1", Expected("hang", (1,), ("1", 4)))
def _cause_tp() -> tuple[list[RankDump], str]:
    ds = ranks(4, TP)
    for d in ds:
        tp = "1" if d.rank < 2 else "2"
        for _ in range(3):
            d.coll("all_reduce", [[4096]], pg=tp, where="model.py:41 in forward")
            d.coll("all_reduce", [[1 << 20]], where=WHERE)
        if d.rank == 0:
            d.coll("all_reduce", [[4096]], pg=tp, state="started", where="model.py:41 in forward")
        elif d.rank >= 2:
            d.coll("all_reduce", [[4096]], pg=tp, where="model.py:41 in forward")
            d.coll("all_reduce", [[1 << 20]], state="started", where=WHERE)
    return ds, WATCHDOG


def _pipeline(stuck_head: bool, cpu_blocks: bool) -> tuple[list[RankDump], dict[int, int]]:
    """Stages 0 -> 1 -> 2 -> 3 in the default group: two micro-batches done; then stage 0 never sends
    (``stuck_head``), each stage waits in its recv with its send queued behind it (or never posted, when its CPU
    waits for the recv: ``cpu_blocks``). Returns the dumps and each rank's p2p sequence number of its open recv."""
    ds = ranks(4)
    for _ in range(2):
        for d in ds:
            if d.rank > 0:
                d.recv(d.rank - 1, 1 << 16, where="pipe.py:120 in recv_forward")
            if d.rank < 3:
                d.send(d.rank + 1, 1 << 16, where="pipe.py:131 in send_forward")
    open_recv = {}
    if stuck_head:
        for d in ds[1:]:
            e = d.recv(d.rank - 1, 1 << 16, state="started", where="pipe.py:120 in recv_forward")
            open_recv[d.rank] = e["p2p_seq_id"]
            if d.rank < 3 and not cpu_blocks:
                d.send(d.rank + 1, 1 << 16, state="scheduled", where="pipe.py:131 in send_forward")
    return ds, open_recv


@scenario("p2p_chain_head", "miss", ("p2p",),
          "pipeline 0 -> 1 -> 2 -> 3: stage 0 never sends; stage 1 waits in its recv, its send to 2 queued behind "
          "it; stages 2, 3 likewise: only stage 0 is to blame", Expected("hang", (0,), ("0:p2p", 5)))
def _chain() -> tuple[list[RankDump], str]:
    return _pipeline(True, False)[0], WATCHDOG


@scenario("p2p_chain_head_cpu_blocked", "miss", ("p2p",),
          "pipeline 0 -> 1 -> 2 -> 3: stage 0 never sends; stages 1-3 wait in their recv and, blocked on it, never "
          "post their send", Expected("hang", (0,), ("0:p2p", 5)))
def _chain_blocked() -> tuple[list[RankDump], str]:
    return _pipeline(True, True)[0], WATCHDOG


@scenario("scheduled_vs_started", "miss", ("scheduled",),
          "4 ranks with timing on: all_reduce #20 started on ranks 0, 1, 3 and only scheduled on rank 2 (its stream "
          "never reached it)", Expected("hang", (2,), ("0", 20)))
def _scheduled() -> tuple[list[RankDump], str]:
    ds = ranks(4)
    history(ds, 19)
    for d in ds:
        d.coll("all_reduce", [[1 << 20]], state="scheduled" if d.rank == 2 else "started", where=WHERE)
    return ds, WATCHDOG


# ---------------------------------------------------------------- fr_trace's own faults

for _odd in (0, 1):
    scenario(f"first_file_blame_2ranks_odd{_odd}", "fr_trace_fault", ("mismatch", "order"),
             f"2 ranks, all_reduce #6: rank {_odd} writes Half output from Float input (its own call is wrong); "
             "whichever file is listed first, the culprit is the same", Expected("desync", (_odd,), ("0", 6)))(
        _one_odd(2, 5, _odd, Member("all_reduce", [[1024]], [[1024]]),
                 Member("all_reduce", [[1024]], [[1024]], out_dtype="Half")))

scenario("first_file_blame_4ranks_odd0", "fr_trace_fault", ("mismatch", "order"),
         "4 ranks, all_reduce #6: rank 0 reduces [2048] where ranks 1-3 reduce [1024]: the odd one out is rank 0",
         Expected("desync", (0,), ("0", 6)))(_one_odd(4, 5, 0, Member("all_reduce", [[1024]], [[1024]]),
                                                      Member("all_reduce", [[2048]], [[2048]])))


@scenario("missing_dump_other_culprit", "fr_trace_fault", ("missing_dump", "missing_rank"),
          "4 ranks: rank 3 left no dump; ranks 0 and 2 wait in all_reduce #7, rank 1 never issued it",
          Expected("hang", (1,), ("0", 7)))
def _missing_other() -> tuple[list[RankDump], str]:
    ds = ranks(4)
    history(ds, 6)
    for d in (ds[0], ds[2]):
        d.coll("all_reduce", [[1 << 20]], state="started", where=WHERE)
    return ds[:3], WATCHDOG


@scenario("p2p_pipeline_healthy", "fr_trace_fault", ("p2p",),
          "pipeline 0 -> 1 -> 2 -> 3 in the 4-rank default group, two micro-batches, every send and recv completed",
          Expected("healthy"))
def _pipe_ok() -> tuple[list[RankDump], str]:
    return _pipeline(False, False)[0], WATCHDOG


@scenario("p2p_ring_healthy", "fr_trace_fault", ("p2p",),
          "ring exchange in a 4-rank group: each rank sends to the next and receives from the previous, three rounds, "
          "all completed", Expected("healthy"))
def _ring_ok() -> tuple[list[RankDump], str]:
    ds = ranks(4)
    for _ in range(3):
        for d in ds:
            d.send((d.rank + 1) % 4, 4096, where="ring.py:30 in exchange")
            d.recv((d.rank - 1) % 4, 4096, where="ring.py:31 in exchange")
    return ds, WATCHDOG


def _wrapped(hang: bool) -> tuple[list[RankDump], str]:
    ds = ranks(4, world(4, **{"1": ("tp", [0, 1])}), capacity=24)
    for i in range(40):
        for d in ds:
            if d.rank < 2 and i % 2 == 0:
                d.coll("all_reduce", [[4096]], pg="1", where="model.py:41 in forward")
            d.coll("all_reduce", [[1 << 20]], where=WHERE)
    if hang:
        for d in ds:
            if d.rank != 2:
                d.coll("all_reduce", [[1 << 20]], state="started", where=WHERE)
    return ds, WATCHDOG


scenario("wrapped_ring_buffers_healthy", "fr_trace_fault", ("wrap",),
         "4 ranks, ring buffers of 24 records; ranks 0, 1 also run a tp group, so their buffers hold other record ids "
         "than ranks 2, 3: all completed", Expected("healthy"))(lambda: _wrapped(False))
scenario("wrapped_ring_buffers_hang", "fr_trace_fault", ("wrap", "missing_rank"),
         "the same wrapped buffers, then rank 2 never issues all_reduce #41 the others wait in",
         Expected("hang", (2,), ("0", 41)))(lambda: _wrapped(True))


# ---------------------------------------------------------------- other real failure modes

@scenario("all_joined_never_completed", "real", ("all_joined",),
          "4 ranks all inside all_reduce #9 when PyTorch's watchdog dumped (a network-side hang: no rank to blame)",
          Expected("hang", (), ("0", 9)))
def _all_joined() -> tuple[list[RankDump], str]:
    ds = ranks(4)
    history(ds, 8)
    for d in ds:
        d.coll("all_reduce", [[1 << 20]], state="started", where=WHERE)
    return ds, WATCHDOG


@scenario("healthy_all_completed_8", "real", ("healthy",), "8 ranks, 20 all_reduces, every one completed",
          Expected("healthy"))
def _healthy() -> tuple[list[RankDump], str]:
    ds = ranks(8)
    history(ds, 20)
    return ds, WATCHDOG


scenario("desync_op_8", "real", ("mismatch",),
         "8 ranks, collective #12: rank 6 calls broadcast where the other seven call all_reduce",
         Expected("desync", (6,), ("0", 12)))(_one_odd(8, 11, 6, Member("all_reduce", [[1 << 20]], [[1 << 20]]),
                                                       Member("broadcast", [[1 << 20]], [[1 << 20]])))


@scenario("gloo_hang", "real", ("missing_rank", "gloo"),
          "gloo, 3 ranks (entries stay 'scheduled', retired when done; pg_config as gloo writes it): ranks 0, 1 wait "
          "in all_reduce #17, rank 2 never issued it", Expected("hang", (2,), ("0", 17)))
def _gloo() -> tuple[list[RankDump], str]:
    ds = ranks(3, backend="gloo", gloo_style=True, timing=False, lib="")
    history(ds, 16, size=8320)
    for d in ds:
        d.pg_config_override = {"": {"name": "", "desc": "", "ranks": "[0, 1, 2]"}}
        if d.rank < 2:
            d.coll("all_reduce", [[8320]], state="scheduled", where=WHERE)
    return ds, WATCHDOG


@scenario("subgroup_only_hang_8", "real", ("missing_rank", "cause"),
          "8 ranks, tp groups {0-3} ('1') and {4-7} ('2'): rank 6 never joins tp all_reduce #5 of group '2'; "
          "ranks 4, 5, 7 wait in it; group '1' is fine", Expected("hang", (6,), ("2", 5)))
def _subgroup() -> tuple[list[RankDump], str]:
    ds = ranks(8, world(8, **{"1": ("tp", [0, 1, 2, 3]), "2": ("tp", [4, 5, 6, 7])}))
    for d in ds:
        tp = "1" if d.rank < 4 else "2"
        for _ in range(4):
            d.coll("all_reduce", [[4096]], pg=tp, where="model.py:41 in forward")
        if tp == "1":
            d.coll("all_reduce", [[4096]], pg=tp, where="model.py:41 in forward")
        elif d.rank != 6:
            d.coll("all_reduce", [[4096]], pg=tp, state="started", where="model.py:41 in forward")
    return ds, WATCHDOG


def by_name(name: str) -> Scenario:
    return next(s for s in SCENARIOS if s.name == name)


def of_class(cls: str) -> list[Scenario]:
    return [s for s in SCENARIOS if cls in s.classes]
