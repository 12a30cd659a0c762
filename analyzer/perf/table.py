"""A sweep's results, and their text in nccl-tests' table layout (read back by ``sources/nccl_tests.py``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .bw import SPECS


@dataclass(frozen=True, slots=True)
class Row:
    size: int  # bytes, nccl-tests' definition
    count: int  # elements of the full buffer
    dtype: str
    redop: str
    root: int
    time_us: float
    algbw: float
    busbw: float
    wrong: int | None  # None: not validated

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, "count": self.count, "type": self.dtype, "redop": self.redop, "root": self.root,
                "time_us": round(self.time_us, 3), "algbw": round(self.algbw, 4), "busbw": round(self.busbw, 4),
                "wrong": self.wrong}


@dataclass(frozen=True, slots=True)
class OpResult:
    op: str
    nranks: int
    busbw_factor: float
    rows: tuple[Row, ...]

    @property
    def avg_busbw(self) -> float:
        return sum(r.busbw for r in self.rows) / len(self.rows) if self.rows else 0.0

    @property
    def wrong(self) -> int:
        return sum(r.wrong or 0 for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        return {"test": self.op, "nranks": self.nranks, "busbw_factor": self.busbw_factor,
                "in_place": SPECS[self.op].in_place, "avg_busbw": round(self.avg_busbw, 4), "wrong": self.wrong,
                "results": [r.to_json() for r in self.rows]}


@dataclass(frozen=True, slots=True)
class RankInfo:
    rank: int
    host: str
    pid: int
    device: str  # "0" / "cpu"
    bus_id: str  # "0000:07:00" or "-"
    name: str


@dataclass(frozen=True, slots=True)
class SweepParams:
    backend: str
    min_bytes: int
    max_bytes: int
    factor: float
    iters: int
    warmup: int
    check: bool
    dtype: str = "float"


@dataclass
class Sweep:
    params: SweepParams
    nranks: int
    ranks: list[RankInfo]
    versions: dict[str, str | None]
    results: list[OpResult] = field(default_factory=list)
    link: str | None = None  # link class the sweep ran over (nvlink, pcie, network, socket, ...)
    advice: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        p = self.params
        return {"tool": "ncclscope perf", "format": 1, "backend": p.backend, "nranks": self.nranks,
                "params": {"min_bytes": p.min_bytes, "max_bytes": p.max_bytes, "factor": p.factor, "iters": p.iters,
                           "warmup": p.warmup, "check": p.check, "dtype": p.dtype},
                "versions": self.versions, "link": self.link,
                "ranks": [{"rank": r.rank, "host": r.host, "pid": r.pid, "device": r.device, "bus_id": r.bus_id,
                           "name": r.name} for r in self.ranks],
                "tests": [r.to_json() for r in self.results], "advice": list(self.advice)}


def _num(x: float, width: int) -> str:
    """nccl-tests prints times and bandwidths with 2 decimals, fewer when they would not fit."""
    for prec in (2, 1, 0):
        s = f"{x:{width}.{prec}f}"
        if len(s) <= width:
            return s
    return f"{x:{width}.0f}"


def format_row(r: Row) -> str:
    wrong = "N/A" if r.wrong is None else str(r.wrong)
    return (f"{r.size:12d}  {r.count:12d}  {r.dtype:>8s}  {r.redop:>6s}  {r.root:6d}"
            f"  {_num(r.time_us, 7)}  {_num(r.algbw, 6)}  {_num(r.busbw, 6)}  {wrong:>6s}")


def format_header(op: str, sweep: Sweep) -> list[str]:
    p = sweep.params
    v = sweep.versions
    lines = [
        (f"# ncclscope perf: {op} nranks {sweep.nranks} backend {p.backend} torch {v.get('torch')} "
        f"nccl {v.get('nccl') or 'n/a'} cuda {v.get('cuda') or 'n/a'}"),
        (f"# nThread 1 nGpus 1 minBytes {p.min_bytes} maxBytes {p.max_bytes} step: {p.factor:g}(factor) "
        f"warmup iters: {p.warmup} iters: {p.iters} agg iters: 1 validation: {int(p.check)} graph: 0"),
        "#",
        "# Using devices",
    ]
    for r in sweep.ranks:
        lines.append(f"#  Rank {r.rank:2d} Group  0 Pid {r.pid:6d} on {r.host:>10s} device {r.device:>2s} "
                     f"[{r.bus_id}] {r.name}")
    place = "in-place" if SPECS[op].in_place else "out-of-place"
    lines += [
        "#",
        f"#{place:>68s}",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        ",
    ]
    return lines


def format_footer(res: OpResult, check: bool) -> list[str]:
    wrong = res.wrong
    oob = "N/A" if not check else f"{wrong} {'OK' if wrong == 0 else 'FAILED'}"
    return [f"# Out of bounds values : {oob}", f"# Avg bus bandwidth    : {res.avg_busbw:.4f} ", "#"]


def format_op(res: OpResult, sweep: Sweep) -> list[str]:
    return format_header(res.op, sweep) + [format_row(r) for r in res.rows] + format_footer(res, sweep.params.check)


def format_sweep(sweep: Sweep) -> str:
    lines: list[str] = []
    for res in sweep.results:
        lines += format_op(res, sweep)
    if sweep.advice:
        lines.append("# advice:")
        lines += [f"#  - {a}" for a in sweep.advice]
    return "\n".join(lines) + "\n"
