"""An analysis -> the CONTRACT.md JSON object, or a terminal report (verdict first)."""
from __future__ import annotations

from typing import Any

from . import __version__
from .analysis import Analysis
from .model import Severity


def to_json(a: Analysis) -> dict[str, Any]:
    d = a.decision
    run = a.run
    return {
        "verdict": d.verdict.value,
        "culprit_ranks": list(d.culprit_ranks),
        "stuck": d.stuck.to_json() if d.stuck else None,
        "headline": d.headline,
        "findings": [f.to_json() for f in a.findings],
        "job": run.job.to_json(),
        "communicators": [c.to_json() for c in run.communicators],
        "ranks": _rank_summary(a),
        "inputs": [{"file": f, "format": fmt} for f, fmt in run.files],
        "problems": list(run.problems),
        "ncclscope_version": __version__,
    }


def json_text(a: Analysis) -> str:
    """``analyze --json``'s output line (without the newline): compact, so the C encoder writes it."""
    import json

    return json.dumps(to_json(a), default=str)


def _rank_summary(a: Analysis) -> list[dict[str, Any]]:
    run = a.run
    out = []
    procs = {p.rank: p for p in run.job.processes if p.rank is not None}
    status: dict[int, dict[str, Any]] = {}
    for st in run.pg_status:
        cur = status.setdefault(st.rank, {})
        cur.setdefault(st.pg, {"last_enqueued": st.last_enqueued, "last_completed": st.last_completed,
                               "source": st.source})
    for r in run.ranks():
        p = procs.get(r)
        out.append({"rank": r, "host": p.host if p else None, "pid": p.pid if p else None,
                    "cuda_dev": p.cuda_dev if p else None, "pg_status": status.get(r, {}),
                    "where": run.stacks.get(r)})
    return out


SEV_STYLE = {Severity.CRITICAL: "bold red", Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
VERDICT_STYLE = {"healthy": "bold green", "degraded": "bold yellow", "unknown": "bold white"}


def render_text(a: Analysis, console: Any, max_evidence: int = 4) -> None:
    """Print the report on a rich Console: verdict, culprit, findings with evidence, topology, timeline."""
    from rich.table import Table

    d = a.decision
    run = a.run
    style = VERDICT_STYLE.get(d.verdict.value, "bold red")
    console.print(f"[{style}]VERDICT: {d.verdict.value.upper()}[/]  {d.headline}")
    if d.culprit_ranks:
        console.print(f"[bold]Culprit rank(s):[/] {', '.join(map(str, d.culprit_ranks))}")
    if d.stuck:
        console.print(f"[bold]Stuck at:[/] process group {d.stuck.pg}, collective #{d.stuck.seq}"
                      + (f" ({d.stuck.op})" if d.stuck.op else ""))
    for r, where in sorted(run.stacks.items()):
        console.print(f"  rank {r} is at {where}")
    console.print()
    for f in a.findings:
        console.print(f"[{SEV_STYLE[f.severity]}]{f.severity.value.upper():8}[/] [bold]{f.kind}[/]: {f.message}")
        if f.hint:
            console.print(f"           [dim]fix:[/] {f.hint}")
        for e in f.evidence[:max_evidence]:
            loc = f"{e.file}:{e.line}" if e.line else e.file
            console.print(f"           [dim]{_esc(loc)}[/] {_esc(e.text[:160])}", highlight=False)
    job = run.job
    console.print()
    console.print(f"[bold]Job:[/] world size {job.world_size or '?'}, hosts {', '.join(job.hosts) or '?'}, "
                  f"NCCL {job.nccl_version or '?'}, torch {job.torch_version or '?'}, CUDA {job.cuda_version or '?'}")
    if run.communicators:
        t = Table(title="Communicators", show_lines=False)
        for col in ("id", "ranks", "channels", "transports", "rings", "init"):
            t.add_column(col)
        for c in run.communicators:
            rings = c.unique_rings()
            t.add_row(c.id, str(c.nranks), str(c.n_channels or "?"), ", ".join(c.transports) or "-",
                      "; ".join(" ".join(map(str, r[:16])) + (" ..." if len(r) > 16 else "") for r in rings[:2])
                      + (f" (+{len(rings) - 2})" if len(rings) > 2 else ""),
                      f"{len(c.init_complete)}/{c.nranks} complete")
        console.print(t)
    timeline = run.timeline_summary()
    if timeline:
        console.print("[bold]Timeline:[/] " + ", ".join(
            f"{rows} {src} records over {ranks} ranks" for src, rows, ranks in timeline))
    if run.problems:
        console.print()
        for p in run.problems:
            console.print(f"[yellow]skipped:[/] {_esc(p)}")


def _esc(s: str) -> str:
    return s.replace("[", "\\[")
