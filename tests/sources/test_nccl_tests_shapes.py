"""nccl-tests output in the shapes it reaches an analysis in: pasted through a renderer that ate the '#' marks, quoted
with '> ', printed by nccl-tests before 2.x (no root column, 'error' columns), and under mpirun from a build without
MPI=1 (every process its own test: one header, device block and table per host)."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths
from ncclscope.model import FindingKind, Verdict
from ncclscope.sources.nccl_tests import parse_nccl_tests_lines, restore_marks
from ncclscope.sources.records import ExitCode, NcclTestsRow, WorldSize

OLD = [  # nccl-tests 1.x/2.0 era, '#' lost
    "nThread 1 nGpus 4 minBytes 8 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 ",
    "",
    "Using devices",
    "   Rank  0 Pid  51022 on    node-x1 device  0 [0x1a] Tesla V100-SXM2-32GB",
    "   Rank  1 Pid  51022 on    node-x1 device  1 [0x1c] Tesla V100-SXM2-32GB",
    "   Rank  2 Pid  51022 on    node-x1 device  2 [0x1d] Tesla V100-SXM2-32GB",
    "   Rank  3 Pid  51022 on    node-x1 device  3 [0x1e] Tesla V100-SXM2-32GB",
    "",
    "                                                     out-of-place                       in-place          ",
    "       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
    "        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
    "   268435456      67108864   float     sum   2811.4   95.48  143.22  0e+00   2809.1   95.56  143.34  0e+00",
    " Out of bounds values : 0 OK",
    " Avg bus bandwidth    : 143.28 ",
]


def _recs(lines: list[str]) -> list[object]:
    return list(parse_nccl_tests_lines(enumerate(lines, 1), "t.txt"))


def test_a_table_without_its_marks_reads_as_the_table() -> None:
    recs = _recs(OLD)
    rows = [r for r in recs if isinstance(r, NcclTestsRow)]
    assert [(r.size, r.redop, r.root, r.busbw, r.in_place) for r in rows] == [
        (268435456, "sum", -1, 143.22, False), (268435456, "sum", -1, 143.34, True)]
    assert [r.world_size for r in recs if isinstance(r, WorldSize)] == [4]
    assert any(isinstance(r, ExitCode) and r.code == 0 for r in recs)  # "Out of bounds values : 0 OK"


def test_quoted_lines_read_as_unquoted() -> None:
    quoted = [("> " + x) if x else ">" for x in ["# " + OLD[0], *("#" + x for x in OLD[3:7]), OLD[11], "# " + OLD[12].strip()]]
    recs = _recs(quoted)
    assert sum(isinstance(r, NcclTestsRow) for r in recs) == 2
    assert [r.world_size for r in recs if isinstance(r, WorldSize)] == [4]
    assert any(isinstance(r, ExitCode) for r in recs)


def test_restore_marks_leaves_rows_and_other_lines_alone() -> None:
    assert restore_marks(OLD[11]) == OLD[11]
    assert restore_marks("  Rank 3 Pid 9 on h device 3 [0x1] A40").startswith("# Rank 3")
    assert restore_marks("node1: Test CUDA failure common.cu:963 'invalid device ordinal'").startswith("node1:")
    assert restore_marks("h:1:2 [0] NCCL INFO Using network IB") == "h:1:2 [0] NCCL INFO Using network IB"
    assert restore_marks("> h:1:2 [0] NCCL INFO Using network IB") == "h:1:2 [0] NCCL INFO Using network IB"


def test_a_table_without_redop_or_root_reads() -> None:  # the oldest all_gather / broadcast tables
    rows = [r for r in _recs(["     1048576        262144   float    52.10   20.13   15.10  0e+00    51.90   20.20   15.15  0e+00"])
            if isinstance(r, NcclTestsRow)]
    assert [(r.dtype, r.redop, r.busbw) for r in rows] == [("float", "", 15.10), ("float", "", 15.15)]


def _per_host(hosts: list[str], marks: str) -> list[str]:
    head = [f"{marks}nThread 1 nGpus 2 minBytes 8 maxBytes 67108864 step: 2(factor) warmup iters: 5 iters: 20 validation: 1"]
    out = head * len(hosts)
    for i, h in enumerate(hosts):
        out += [f"{marks}  Rank  {r} Pid {700 + i} on {h} device  {r} [0x3{r}] Tesla T4" for r in range(2)]
    row = "    67108864      16777216   float     sum   9901.2    6.78    6.78  0e+00   9899.0    6.78    6.78  0e+00"
    return out + [row] * len(hosts) + [f"{marks}Out of bounds values : 0 OK"] * len(hosts)


def test_one_standalone_test_per_host_is_a_config_error(tmp_path: Path) -> None:
    for marks in ("#", ""):
        p = tmp_path / f"out{len(marks)}.txt"
        p.write_text("\n".join(["#  out-of-place", *_per_host(["hx1", "hx2", "hx3"], marks)]) + "\n")
        a = analyze_paths([p], cache=False)
        assert a.decision.verdict == Verdict.CONFIG_ERROR
        f = next(f for f in a.findings if f.kind == FindingKind.CONFIG)
        assert "MPI=1" in f.hint and f.data["hosts"] == ["hx1", "hx2", "hx3"] and f.data["ranks_per_job"] == 2
        assert not any("missing_ranks" in f.data for f in a.findings)  # no rank of either test is missing


def test_one_job_across_hosts_or_runs_one_after_another_are_not(tmp_path: Path) -> None:
    one = _per_host(["hx1"], "#")
    two = [x.replace("hx1", "hx2") for x in one]
    p = tmp_path / "seq.txt"
    p.write_text("\n".join(["#  out-of-place", *one, *two]) + "\n")  # the second run's header after the first table
    assert not any(f.kind == FindingKind.CONFIG for f in analyze_paths([p], cache=False).findings)
    mpi = _per_host(["hx1"], "#")[:1] + [f"#  Rank  {r} Pid {700 + r} on hx{1 + r // 2} device {r % 2} [0x3] Tesla T4"
                                         for r in range(4)] + _per_host(["hx1"], "#")[3:]
    q = tmp_path / "mpi.txt"
    q.write_text("\n".join(["#  out-of-place", *mpi]) + "\n")
    assert not any(f.kind == FindingKind.CONFIG for f in analyze_paths([q], cache=False).findings)


def test_one_gpu_tests_of_several_processes_on_one_host_are_a_config_error(tmp_path: Path) -> None:
    head = "# nThread 1 nGpus 1 minBytes 8 maxBytes 67108864 step: 2(factor) warmup iters: 5 iters: 20 validation: 1"
    dev = [f"#  Rank  0 Group  0 Pid {900 + i} on gx1 device  {i} [0x3{i}] NVIDIA H100 80GB HBM3" for i in range(4)]
    row = "    67108864      16777216   float     sum      -1   30.1 2229.2    0.00      0   29.9 2244.1    0.00      0"
    p = tmp_path / "srun.txt"  # srun -n 4 on one node, each task a one-GPU test: every busbw is 0
    p.write_text("\n".join(["#  out-of-place", *([head] * 4), *dev, *([row] * 4)]) + "\n")
    a = analyze_paths([p], cache=False)
    f = next(f for f in a.findings if f.kind == FindingKind.CONFIG)
    assert (a.decision.verdict, f.data["processes"], f.data["ranks_per_job"]) == (Verdict.CONFIG_ERROR, 4, 1)
