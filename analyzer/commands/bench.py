"""`ncclscope bench`: parse + analyse speed on generated runs, against ``grep -c`` on the same files.

For each rank count a hang run is generated in a temporary folder (``ncclscope.synth``), then, in
this one invocation: ``grep -c "NCCL INFO"`` over its files (the baseline: best of 3 before and
3 after the analysis, so a machine that slows down mid-run makes our ratio worse, not better), a
fresh analysis in a child process timed phase by phase (parse = files to records, build = the
model, detect = detectors and decision; their sum is the time to the verdict; then the cache
write, which ``analyze`` does after printing), its CPU seconds and the peak RSS of the child and
of its parse workers, and whether the verdict and culprit match the generated truth. The cached
re-open is timed as a user sees it: a whole ``ncclscope analyze DIR --json`` process (best of 3),
next to the start-up alone (Python plus the imports ``analyze`` needs). Last, the figure a user
waits for: whole ``ncclscope analyze --no-cache --json DIR`` processes against ``grep -c "NCCL INFO"
-r DIR``, run in turn (five pairs after one unmeasured pair), wall and CPU as the kernel accounts the
reaped child (``wait4``), the medians of the pair-by-pair ratios.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import click

DEFAULT_STEPS = {64: 1700, 512: 420, 4096: 215, 16384: 25}  # about 1.2 M, 2.4 M, 9.8 M and 3.9 M lines
# (16,384 ranks: 777 MB in 16,385 files, the per-file costs at their largest)


@dataclass(frozen=True)
class BenchRow:
    ranks: int
    lines: int
    mbytes: float
    gen_s: float
    grep_s: float
    parse_s: float  # files -> records (ingest), wall
    build_s: float  # records -> Run model
    detect_s: float  # detectors + decision
    store_s: float  # cache write, after the verdict is out
    cpu_s: float
    peak_main_mb: float
    peak_workers_mb: float
    right: bool
    verdict: str
    reopen_s: float = float("nan")  # whole `ncclscope analyze DIR --json` process on a warm cache, wall
    reopen_cpu_s: float = float("nan")
    startup_s: float = float("nan")  # python start + imports, wall
    startup_cpu_s: float = float("nan")
    process: PairedProcesses | None = None  # whole `analyze --no-cache --json DIR` process vs `grep -c -r DIR`

    @property
    def verdict_s(self) -> float:
        """Time to the verdict: parse, model, detectors (what ``analyze`` takes before it prints)."""
        return self.parse_s + self.build_s + self.detect_s

    @property
    def lines_per_s(self) -> float:
        return self.lines / self.parse_s if self.parse_s else 0.0


def _child(path: str) -> None:
    """Run in a child process: analyse ``path`` from scratch, phase by phase, and print timings and
    peak memory as JSON."""
    import os

    from ncclscope import cache as run_cache
    from ncclscope.analysis import _json_line, analyze_run
    from ncclscope.model_build import build_run
    from ncclscope.ingest import ingest
    from ncclscope.malloc import keep_freed_memory

    keep_freed_memory()  # as analyze does
    c0 = os.times()
    t0 = time.perf_counter()  # after the imports: this times parsing and analysis, not start-up
    parsed = ingest([Path(path)])
    t1 = time.perf_counter()
    run = build_run(parsed, release=True)
    del parsed
    t2 = time.perf_counter()
    res = analyze_run(run)
    t3 = time.perf_counter()
    run_cache.store([Path(path)], run, res.findings, res.decision, _json_line(res))  # what analyze writes
    t4 = time.perf_counter()
    c1 = os.times()
    out = {
        "parse_s": t1 - t0, "build_s": t2 - t1, "detect_s": t3 - t2, "store_s": t4 - t3,
        "cpu_s": (c1.user - c0.user) + (c1.system - c0.system) + (c1.children_user - c0.children_user)
        + (c1.children_system - c0.children_system),
        "peak_main_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_workers_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "verdict": res.decision.verdict.value, "culprits": list(res.decision.culprit_ranks),
    }
    sys.stdout.write(json.dumps(out) + "\n")


def _analyze_in_child(path: Path) -> dict:
    code = f"from ncclscope.commands.bench import _child; _child({str(path)!r})"
    env = dict(os.environ)
    env.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")  # as the CLI sets it (cli.py)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                       cwd=Path(__file__).resolve().parents[2], env=env)
    if p.returncode != 0:
        raise RuntimeError(f"analyze failed on {path}: {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _process_seconds(argv: list[str], repeat: int = 3) -> tuple[float, float]:
    """Best wall and CPU seconds of a whole process (its children included), stdout discarded."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                       cwd=Path(__file__).resolve().parents[2])
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = min(best, (wall, cpu))
    return best


@dataclass(frozen=True)
class PairedProcesses:
    """Medians over ``n`` pairs of whole processes run in turn (A B A B ...): each ratio is taken pair
    by pair, so a machine whose speed drifts during the measurement moves both sides of a ratio."""
    n: int
    a_wall_s: float
    a_cpu_s: float
    b_wall_s: float
    b_cpu_s: float
    wall_ratio: float
    cpu_ratio: float
    a_peak_mb: float = float("nan")  # median over the runs of A's largest single process (its parse workers' too)


def _run_once(argv: list[str]) -> tuple[float, float, float]:
    """Wall and CPU seconds (user + system, the kernel's accounting of the reaped child and of what it
    waited for) of one process, and its peak RSS in MB (the largest of it and the children it waited for,
    ``wait4``'s). Its output is read through a pipe and thrown away: GNU grep writing to /dev/null stops at
    the first match, as if given -q."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            cwd=Path(__file__).resolve().parents[2])
    assert proc.stdout is not None
    with proc.stdout:
        while proc.stdout.read(1 << 16):
            pass
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped here: Popen must not wait for it again
    wall = time.perf_counter() - t
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def paired_processes(a: list[str], b: list[str], n: int = 5, warmup: int = 1) -> PairedProcesses:
    """``a`` and ``b`` run in turn ``n`` times each after ``warmup`` unmeasured pairs."""
    import statistics

    for _ in range(warmup):
        _run_once(a)
        _run_once(b)
    pairs = [(_run_once(a), _run_once(b)) for _ in range(n)]
    med = statistics.median
    return PairedProcesses(n, med(x[0] for x, _ in pairs), med(x[1] for x, _ in pairs), med(y[0] for _, y in pairs),
                           med(y[1] for _, y in pairs), med(x[0] / y[0] for x, y in pairs),
                           med(x[1] / max(y[1], 1e-3) for x, y in pairs), med(x[2] for x, _ in pairs))


def analyze_vs_grep(path: Path, n: int = 5) -> PairedProcesses:
    """A whole ``ncclscope analyze --no-cache --json DIR`` process against ``grep -c "NCCL INFO" -r DIR``.
    The package is byte-compiled first, as an installed one is: from a source tree whose modules changed since
    their last import, with ``PYTHONDONTWRITEBYTECODE`` set, every process would compile them again (~70 ms at
    64 ranks, a tenth of the figure)."""
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[1]), quiet=2)
    exe = Path(sys.executable).with_name("ncclscope")
    cli = [str(exe)] if exe.exists() else [sys.executable, "-m", "ncclscope"]
    return paired_processes([*cli, "analyze", "--no-cache", "--json", str(path)], ["grep", "-c", "NCCL INFO", "-r", str(path)], n)


def reopen_seconds(path: Path) -> tuple[float, float, float, float]:
    """(re-open wall, CPU, start-up wall, CPU): ``analyze --json`` on a warm cache, and the imports alone."""
    cli = [sys.executable, "-m", "ncclscope", "analyze", str(path), "--json", "--no-progress"]
    imports = [sys.executable, "-c", "import ncclscope.cli, ncclscope.analysis, ncclscope.cache, ncclscope.report"]
    return (*_process_seconds(cli), *_process_seconds(imports))


def _grep_seconds(files: list[str], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(["grep", "-c", "NCCL INFO", *files], capture_output=True, check=False)
        best = min(best, time.perf_counter() - t)
    return best


def bench_one(nranks: int, steps: int, workdir: Path, seed: int = 0) -> BenchRow:
    from ncclscope.synth import generate_run

    dest = workdir / f"run{nranks}"
    t = time.perf_counter()
    truth = generate_run(dest, nranks=nranks, steps=steps, fault="hang", fault_step=max(1, steps - 10), seed=seed)
    gen_s = time.perf_counter() - t
    files = sorted(str(p) for p in dest.iterdir() if p.is_file())
    _grep_seconds(files, repeat=1)  # warm the page cache for both contenders
    grep_before = _grep_seconds(files)
    fresh = _analyze_in_child(dest)
    grep_s = min(grep_before, _grep_seconds(files))  # the faster grep, before or after: the ratio errs high
    right = fresh["verdict"] == truth.verdict and tuple(fresh["culprits"]) == truth.culprit_ranks
    reopen = reopen_seconds(dest)
    process = analyze_vs_grep(dest)
    shutil.rmtree(dest, ignore_errors=True)
    return BenchRow(nranks, truth.lines, truth.bytes / 1e6, gen_s, grep_s, fresh["parse_s"], fresh["build_s"],
                    fresh["detect_s"], fresh["store_s"], fresh["cpu_s"], fresh["peak_main_mb"],
                    fresh["peak_workers_mb"], right, f"{fresh['verdict']} {fresh['culprits']}", *reopen, process)


def format_rows(rows: list[BenchRow]) -> str:
    head = ("ranks", "lines", "MB", "grep -c s", "parse s", "parse x grep", "lines/s", "verdict s", "verdict x grep",
            "build s", "detect s", "cache write s", "CPU s", "peak MB main/workers", "verdict right",
            "re-open s (CPU)", "start-up s (CPU)", "process s (CPU)", "process x grep wall (CPU)")
    out = [head]
    for r in rows:
        out.append((f"{r.ranks}", f"{r.lines:,}", f"{r.mbytes:,.0f}", f"{r.grep_s:.2f}", f"{r.parse_s:.2f}",
                    f"{r.parse_s / r.grep_s:.1f}x", f"{r.lines_per_s:,.0f}", f"{r.verdict_s:.2f}",
                    f"{r.verdict_s / r.grep_s:.1f}x", f"{r.build_s:.2f}", f"{r.detect_s:.2f}", f"{r.store_s:.2f}",
                    f"{r.cpu_s:.2f}", f"{r.peak_main_mb:,.0f} / {r.peak_workers_mb:,.0f}",
                    "yes" if r.right else f"NO ({r.verdict})", f"{r.reopen_s:.2f} ({r.reopen_cpu_s:.2f})",
                    f"{r.startup_s:.2f} ({r.startup_cpu_s:.2f})", *_process_cells(r.process)))
    widths = [max(len(row[i]) for row in out) for i in range(len(head))]
    lines = [" | ".join(c.rjust(w) for c, w in zip(row, widths)) for row in out]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def _process_cells(p: PairedProcesses | None) -> tuple[str, str]:
    if p is None:
        return "-", "-"
    return f"{p.a_wall_s:.2f} ({p.a_cpu_s:.2f})", f"{p.wall_ratio:.1f}x ({p.cpu_ratio:.1f}x)"


def coll_reader() -> str:
    """Which COLL-line reader this process's parse uses, as ``analyze`` would pick it for a large input: the
    module compiled ahead of time, numba's JIT, or the numpy reader (without numba, with ``NCCLSCOPE_NO_JIT=1``,
    or where neither loads)."""
    from ncclscope.sources.coll import kernel as coll_kernel

    fn = coll_kernel.ready()
    if fn is None:
        return "numpy (no compiled reader could be loaded)"
    return "compiled by numba's JIT" if type(fn).__module__.startswith("numba") else "compiled ahead of time (numba)"


def run_bench(ranks: list[int], steps: int | None, workdir: Path | None = None,
              echo=None) -> list[BenchRow]:  # noqa: ANN001 - a print-like callable
    from ncclscope.sources.coll import kernel as coll_kernel

    # the compiled COLL reader is built once per version (about 10 s): here, not inside a timed parse
    coll_kernel.arm(note=echo)
    if echo:
        echo("COLL reader: " + coll_reader())
    rows = []
    with tempfile.TemporaryDirectory(prefix="ncclscope-bench-", dir=workdir) as tmp:
        for n in ranks:
            s = steps or DEFAULT_STEPS.get(n) or max(20, 9_800_000 // (n * 11))
            row = bench_one(n, s, Path(tmp))
            rows.append(row)
            if echo:
                echo(f"{n} ranks: {row.lines:,} lines, parse {row.parse_s:.2f} s = {row.parse_s / row.grep_s:.1f}x "
                     f"grep ({row.grep_s:.2f} s), verdict {row.verdict_s:.2f} s = {row.verdict_s / row.grep_s:.1f}x "
                     f"grep, re-open process {row.reopen_s:.2f} s (start-up {row.startup_s:.2f} s)"
                     + (f", analyze --no-cache --json process {row.process.a_wall_s:.2f} s = {row.process.wall_ratio:.1f}x "
                        f"grep -c -r wall, {row.process.cpu_ratio:.1f}x CPU (medians of {row.process.n} pairs)"
                        if row.process else ""))
    return rows


@click.command("bench")
@click.option("--ranks", default="64,512,4096", show_default=True, help="Comma-separated rank counts.")
@click.option("--steps", type=int, default=None, help="Training steps per run (default: about 1.2 M / 2.4 M / "
              "9.8 M / 3.9 M lines for 64 / 512 / 4096 / 16384 ranks).")
@click.option("--workdir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the generated runs go (a temporary folder inside it; default: the system temp dir).")
def command(ranks: str, steps: int | None, workdir: Path | None) -> None:
    """Time parse + analyse on generated hang runs against grep -c on the same files."""
    try:
        counts = [int(x) for x in ranks.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter("--ranks takes integers separated by commas") from None
    rows = run_bench(counts, steps, workdir, echo=lambda s: click.echo(s, err=True))
    click.echo(format_rows(rows))
