"""Two measurements of the same thing in one input, one far below the other: the slower one is degraded.

- nccl-tests run more than once in one console (the same test, the same number of ranks, e.g. one GPU pair and then
  another, or one setting and then another): each table's best busbw over the large sizes both tables measured. When
  the first table shown (the run the user asks about) reaches at most 1/``GAP`` of a later one, it is slow for its path;
  on one host the hint is GPU peer-to-peer (consumer GPUs have none, so a pair under one PCIe switch goes up to the CPU
  and back down the same uplink; ACS or an IOMMU does the same to data-centre GPUs).
- The same nccl-tests table run again under a newer NCCL release (the earlier run's release kept by
  ``model_build.runs``), the last run at most 1/``GAP`` of an earlier one under an older release: the release is slow
  there (``slower_release``); the hint compares both releases' topology and tuning.
- A program's own prints of one collective's measured time or rate (``ProgramTiming``, lines of one shape: the same op, the
  same sizes, only ids and ranks differing), e.g. one line per process group: the slowest ``GAP`` times the fastest or
  more is a slow path for some groups (a NIC order swapped behind a PCIe switch, a slow node or link). The first line
  of a shape printed three times or more is left out (a warm-up); of four or more lines, two must be slow (one is a
  spike); a shape printed more than ``MOST_LINES`` times is a stream of iterations and is not judged.

Pure: events and nccl-tests rows to findings.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics.link_floor import HGX_GPU_RE, link_facts
from ..model import EventKind, Evidence, Finding, FindingKind, LogEvent, Run, Severity, Verdict
from ..sources.program_facts import RATE_MARK
from .common import human_bytes

GAP = 1.5  # a measurement this many times slower than its twin is not noise
MIN_BYTES = 8 << 20  # sizes compared: bandwidth-bound rows
TOP_SIZES = 3
MOST_LINES = 64  # more lines of one shape are a stream of iterations, whose spikes are no slow path

P2P_HINT = ("Both runs are on one host: the slower pair's traffic does not go GPU to GPU. GeForce / consumer GPUs have "
            "no PCIe P2P, so two of them under one PCIe switch go up to the CPU and back down the same uplink (about "
            "half the bandwidth of a pair on different sockets); on data-centre GPUs turn PCIe ACS off (or the IOMMU "
            "to passthrough). Check `nvidia-smi topo -p2p r`, and the channel lines with NCCL_DEBUG=INFO (P2P/IPC "
            "versus SHM); NCCL_P2P_LEVEL / NCCL_P2P_DISABLE=1 tell the paths apart.")
NET_HINT = ("The runs differ in the path they take: compare their NCCL_DEBUG=INFO channel lines (NET/IB/N and "
            "/GDRDMA, P2P or SHM) and settings (NCCL_IB_HCA, NCCL_P2P_LEVEL, NCCL_ALGO), and each NIC's link rate.")
GROUP_HINT = ("Groups of the same collective and size run at different speeds: their path differs. Compare each slow "
              "group's nodes (NCCL_DEBUG=INFO channel lines: which NET/IB/N each GPU uses, /GDRDMA), the NIC order each "
              "GPU sees behind its PCIe switch (NCCL_TOPO_DUMP_FILE; a wrong PCIe topology is fixed with NCCL_TOPO_FILE "
              "or a BIOS update), and run nccl-tests on each slow group's nodes.")


@dataclass(frozen=True, slots=True)
class Table:
    """One nccl-tests table: its rows (out-of-place and in-place) in the order printed."""

    test: str | None
    nranks: int | None
    rows: tuple[dict[str, Any], ...]

    def best(self, sizes: set[int]) -> float:
        return max((float(r.get("busbw") or 0) for r in self.rows if int(r["size"]) in sizes), default=0.0)

    def sizes(self) -> set[int]:
        return {int(r["size"]) for r in self.rows if int(r["size"]) >= MIN_BYTES}


def tables(rows: Sequence[dict[str, Any]]) -> list[Table]:
    """The tables of the rows: a new one where the file, the test or the ranks change or the size goes back down."""
    out: list[list[dict[str, Any]]] = []
    last: tuple[Any, Any, Any, int, int] | None = None
    for r in rows:
        size, line = int(r.get("size") or 0), int(r.get("line") or 0)
        key = (r.get("file"), r.get("test"), r.get("nranks"))
        if last is None or key != last[:3] or (line != last[4] and size <= last[3]):
            out.append([])
        out[-1].append(r)
        last = (*key, size, line)
    return [Table(t[0].get("test"), t[0].get("nranks"), tuple(t)) for t in out]


def slower_first(ts: Sequence[Table]) -> tuple[Table, Table, set[int]] | None:
    """(the first table, a later twin of it at least ``GAP`` times faster, the sizes compared), or None."""
    if len(ts) < 2:
        return None
    first = ts[0]
    for t in ts[1:]:
        if (t.test, t.nranks) != (first.test, first.nranks):
            continue
        shared = sorted(first.sizes() & t.sizes())[-TOP_SIZES:]
        if not shared:
            continue
        slow, fast = first.best(set(shared)), t.best(set(shared))
        if 0 < slow and fast >= GAP * slow:
            return first, t, set(shared)
    return None


def slower_release(ts: Sequence[Table], judged: str | None) -> tuple[Table, Table, set[int]] | None:
    """(the last table, an earlier twin of it at least ``GAP`` times faster under an older NCCL release, the sizes
    compared), or None. ``judged``: the release of the last run (the job's); an earlier table's is its rows'."""
    if len(ts) < 2 or not judged or any(r.get("version") for r in ts[-1].rows):
        return None
    last = ts[-1]
    for t in ts[:-1]:
        older = {str(r.get("version") or "") for r in t.rows}
        if (t.test, t.nranks) != (last.test, last.nranks) or len(older) != 1 or not _older(older.pop(), judged):
            continue
        shared = sorted(last.sizes() & t.sizes())[-TOP_SIZES:]
        slow, fast = last.best(set(shared)), t.best(set(shared))
        if shared and 0 < slow and fast >= GAP * slow:
            return last, t, set(shared)
    return None


def _older(a: str, b: str) -> bool:
    """Release ``a`` (``2.18.5``) comes before release ``b``."""
    parts = [tuple(int(x) for x in v.split(".")[:3] if x.isdigit()) for v in (a, b)]
    return all(len(p) == 3 for p in parts) and parts[0] < parts[1]


RELEASE_HINT = ("The same benchmark ran slower under the newer NCCL release: the release, not the hardware, changed. "
                "Compare both runs with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING (the topology each detects, "
                "its channels, algorithm and protocol); on virtualised or unusual PCIe topologies give the platform's "
                "topology file (NCCL_TOPO_FILE), or pin the older release until it is understood.")


def _release_finding(run: Run) -> list[Finding]:
    judged = run.job.nccl_version
    pair = slower_release(tables(all_rows(run)), judged)
    if pair is None:
        return []
    slow, fast, sizes = pair
    a, b = slow.best(sizes), fast.best(sizes)
    older = str(fast.rows[0].get("version"))
    test = slow.test or "the benchmark"
    return [Finding(
        kind=FindingKind.SLOW_LINK, severity=Severity.WARNING, verdict=Verdict.DEGRADED,
        message=f"{test} under NCCL {judged} reached at most {a:.2f} GB/s bus bandwidth from {human_bytes(min(sizes))} up, "
        f"{b / a:.1f}x below the {b:.2f} GB/s of an earlier run of the same sizes and ranks under NCCL {older}",
        hint=RELEASE_HINT, evidence=(_row_ev(slow, sizes), _row_ev(fast, sizes)),
        data={"culprits": [], "busbw": a, "twin_busbw": b, "sizes": sorted(sizes), "gap": round(b / a, 2),
              "releases": [older, str(judged)]})]


def all_rows(run: Run) -> list[dict[str, Any]]:
    """The nccl-tests rows of every run the input holds: the earlier runs' (kept by ``model_build.runs``) first."""
    earlier = [r for e in run.events if e.kind == EventKind.EARLIER_RUNS for r in e.data.get("earlier_tests") or ()]
    return [dict(r) for r in earlier] + list(run.nccl_tests)


def _table_finding(run: Run) -> list[Finding]:
    pair = slower_first(tables(all_rows(run)))
    if pair is None:
        return []
    slow, fast, sizes = pair
    facts = link_facts(run)
    one_host = facts.nnodes <= 1
    pcie = one_host and not (facts.gpus and all(HGX_GPU_RE.search(g) for g in facts.gpus))
    a, b = slow.best(sizes), fast.best(sizes)
    test = slow.test or "the benchmark"
    ev = [_row_ev(t, sizes) for t in (slow, fast)]
    return [Finding(
        kind=FindingKind.SLOW_LINK, severity=Severity.WARNING, verdict=Verdict.DEGRADED,
        message=f"{test} was run more than once in this input with {slow.nranks or 'the same number of'} ranks: the first "
        f"run reached at most {a:.2f} GB/s bus bandwidth from {human_bytes(min(sizes))} up, {b / a:.1f}x below the "
        f"{b:.2f} GB/s of a later run of the same sizes" + (" on the same host" if one_host else ""),
        hint=P2P_HINT if pcie else NET_HINT, evidence=tuple(ev) + facts.evidence[:2],
        data={"culprits": [], "busbw": a, "twin_busbw": b, "sizes": sorted(sizes), "gap": round(b / a, 2)})]


def _row_ev(t: Table, sizes: set[int]) -> Evidence:
    r = max((r for r in t.rows if int(r["size"]) in sizes), key=lambda r: float(r.get("busbw") or 0))
    return Evidence(str(r["file"]), int(r["line"]), f"size {int(r['size'])} B: busbw {float(r['busbw']):.2f} GB/s")


def timing_gaps(events: Sequence[LogEvent]) -> list[tuple[LogEvent, LogEvent]]:
    """(the slowest, the fastest) of each shape of the program's timing lines whose gap is ``GAP`` or more."""
    by_shape: dict[str, list[LogEvent]] = defaultdict(list)
    for e in events:
        if e.kind == EventKind.PROGRAM_TIMING and float(e.data.get("ms") or 0) > 0:
            by_shape[str(e.data.get("shape"))].append(e)
    out = []
    for lines in by_shape.values():
        judged = lines[1:] if len(lines) >= 3 else lines  # the first of three or more: a warm-up
        if not 2 <= len(judged) <= MOST_LINES:
            continue
        slow = max(judged, key=lambda e: float(e.data["ms"]))
        fast = min(judged, key=lambda e: float(e.data["ms"]))
        least = float(fast.data["ms"])
        slow_n = sum(float(e.data["ms"]) >= GAP * least for e in judged)
        if slow_n and (len(judged) < 4 or slow_n >= 2):  # of four or more, one slow line alone is a spike
            out.append((slow, fast))
    return out


def _timing_findings(run: Run) -> list[Finding]:
    out = []
    for slow, fast in timing_gaps(run.events):
        a, b = float(slow.data["ms"]), float(fast.data["ms"])
        said = (f"{1000 / a:.3g} GB/s against {1000 / b:.3g} GB/s" if RATE_MARK in str(slow.data.get("shape"))
                else f"{a:g} ms against {b:g} ms")
        out.append(Finding(
            kind=FindingKind.SLOW_LINK, severity=Severity.WARNING, verdict=Verdict.DEGRADED,
            message=f"the program's own measurements of one {slow.data.get('what')} differ {a / b:.1f}x between lines "
            f"of the same shape ({said}): the collectives complete, some of them on a slower path",
            hint=GROUP_HINT, evidence=(slow.evidence, fast.evidence),
            data={"culprits": [], "slow_ms": a, "fast_ms": b, "gap": round(a / b, 2)}))
    return out[:2]


def detect(run: Run) -> list[Finding]:
    return (_table_finding(run) or _release_finding(run)) + _timing_findings(run)
