"""An analysis -> the report object (docs/interfaces.md, schema/report.schema.json), or a terminal report (verdict first)."""
from __future__ import annotations

from typing import Any

from . import __version__
from .result import Analysis
from .metrics.progress import judged_progress
from .model import EventKind, Severity
from .text_fit import evidence_line
from .text_safety import clean


def to_json(a: Analysis) -> dict[str, Any]:
    d = a.decision
    run = a.run
    return {
        "verdict": d.verdict.value,
        "culprit_ranks": list(d.culprit_ranks),
        "stuck": d.stuck.to_json() if d.stuck else None,
        "headline": d.headline,
        "certainty": d.certainty_json(),
        "findings": [f.to_json() for f in a.findings],
        "job": run.job.to_json(),
        "communicators": [c.to_json() for c in run.communicators],
        "ranks": rank_summary(a),
        "inputs": _inputs(run),
        "problems": list(run.problems),
        "ncclscope_version": __version__,
    }


def _inputs(run: Any) -> list[dict[str, Any]]:
    """Each file read and its format; ``unread_nccl_lines`` where NCCL-looking lines of it were not understood,
    ``unread_pytorch_lines`` where it held PyTorch / launcher lines of which none was read."""
    unread: dict[str, dict[str, int]] = {}
    for e in run.events:
        if e.kind in (EventKind.NCCL_UNREAD, EventKind.PYTORCH_UNREAD):
            unread.setdefault(e.data["file"], {})[f"unread_{e.kind.split('_')[0]}_lines"] = e.data["count"]
    return [{"file": f, "format": fmt, **unread.get(f, {})} for f, fmt in run.files]


def json_text(a: Analysis) -> str:
    """``analyze --json``'s output line (without the newline): compact, so the C encoder writes it."""
    import json

    return json.dumps(to_json(a), default=str)


def rank_summary(a: Analysis) -> list[dict[str, Any]]:
    run = a.run
    out = []
    procs = {p.rank: p for p in run.job.processes if p.rank is not None}
    status: dict[int, dict[str, Any]] = {}
    for pg, by_rank in judged_progress(run, a.findings, a.decision.stuck).items():  # as judged (metrics.progress)
        for r, s in by_rank.items():
            status.setdefault(r, {})[pg] = {"last_enqueued": s.enqueued, "last_completed": s.completed,
                                            "source": s.source}
    for st in run.pg_status:  # PyTorch's <pg>:p2p send/recv counters, which the hang rule leaves out
        status.setdefault(st.rank, {}).setdefault(st.pg, {"last_enqueued": st.last_enqueued,
                                                         "last_completed": st.last_completed, "source": st.source})
    states = {r: (state, detail) for r, state, detail in a.decision.states}
    for r in sorted(set(run.ranks()) | set(states)):
        p = procs.get(r)
        state, detail = states.get(r, (None, None))
        out.append({"rank": r, "host": p.host if p else None, "pid": p.pid if p else None,
                    "cuda_dev": p.cuda_dev if p else None, "pg_status": status.get(r, {}),
                    "where": run.stacks.get(r), "state": state, "detail": detail})
    return out


def _render_states(states: tuple[tuple[int, str, str | None], ...], console: Any) -> None:
    """``Ranks: stuck_in_collective 0, 2-63; never_joined 37``, then each rank's detail when few."""
    from rich.text import Text

    from .rules.states import states_text

    if not states:
        return
    console.print(Text.assemble(("Ranks:", "bold"), " ", clean(states_text(states))))
    if len(states) <= 8:
        for r, state, detail in states:
            if detail:
                console.print(Text(clean(f"  rank {r}: {state}: {detail}"[:300])))


INDENT = 11  # under a finding's kind, past its severity column


def _print_indented(console: Any, label: str, body: str) -> None:
    """``label body`` wrapped to the console's width, every line indented under the finding; ``label`` dim."""
    import textwrap

    from rich.text import Text

    width = max(40, int(getattr(console, "width", 80) or 80) - INDENT)
    lines = textwrap.wrap(f"{label} {body}", width=width, break_on_hyphens=False) or [label]
    for i, line in enumerate(lines):
        t = Text(" " * INDENT)
        if i == 0 and line.startswith(label):
            t.append(label, style="dim")
            t.append(line[len(label):])
        else:
            t.append(line)
        console.print(t, no_wrap=True, overflow="ignore", crop=False)


SEV_STYLE = {Severity.CRITICAL: "bold red", Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
VERDICT_STYLE = {"healthy": "bold green", "degraded": "bold yellow", "unknown": "bold white"}


def render_text(a: Analysis, console: Any, max_evidence: int = 4) -> None:
    """Print the report on a rich Console: verdict, culprit, findings with evidence, topology, timeline.

    Everything that came from the input is printed as ``rich.text.Text`` of ``text_safety.clean``:
    never parsed as markup, with no control character left (a log line may hold ESC sequences or
    brackets that rich would read as tags).
    """
    from rich.table import Table
    from rich.text import Text

    d = a.decision
    run = a.run
    style = VERDICT_STYLE.get(d.verdict.value, "bold red")
    console.print(Text.assemble((f"VERDICT: {clean(d.verdict.value).upper()}", style), "  ", clean(d.headline)))
    if d.culprit_ranks:
        console.print(Text.assemble(("Culprit rank(s):", "bold"), " ", clean(", ".join(map(str, d.culprit_ranks)))))
    if d.stuck:
        console.print(Text.assemble(("Stuck at:", "bold"), clean(
            f" process group {d.stuck.pg}, collective #{d.stuck.seq}" + (f" ({d.stuck.op})" if d.stuck.op else ""))))
    if d.certainty:
        console.print(Text.assemble(("Certainty:", "bold"), " ", clean(f"{d.certainty} ({d.certainty_why})")))
    _render_states(d.states, console)
    for r, where in sorted(run.stacks.items()):
        console.print(Text(clean(f"  rank {r} is at {where}")))
    console.print()
    for f in a.findings:
        console.print(Text.assemble((f"{f.severity.value.upper():8}", SEV_STYLE[f.severity]), " ",
                                    (clean(f.label), "bold"), ": ", clean(f.message)))
        if f.hint:
            _print_indented(console, "fix:", clean(f.hint))
        for e in f.evidence[:max_evidence]:
            loc = f"{e.file}:{e.line}" if e.line else e.file
            _print_indented(console, clean(loc), clean(evidence_line(e.text)))
    job = run.job
    console.print()
    console.print(Text.assemble(("Job:", "bold"), clean(
        f" world size {job.world_size or '?'}, hosts {', '.join(job.hosts) or '?'}, NCCL {job.nccl_version or '?'}, "
        f"torch {job.torch_version or '?'}, CUDA {job.cuda_version or '?'}")))
    if run.communicators:
        t = Table(title="Communicators", show_lines=False)
        for col in ("id", "ranks", "channels", "transports", "rings", "init"):
            t.add_column(col)
        for c in run.communicators:
            rings = c.unique_rings()
            cells = (c.id, str(c.nranks), str(c.n_channels or "?"), ", ".join(c.transports) or "-",
                     "; ".join(" ".join(map(str, r[:16])) + (" ..." if len(r) > 16 else "") for r in rings[:2])
                     + (f" (+{len(rings) - 2})" if len(rings) > 2 else ""),
                     f"{len(c.init_complete)}/{c.nranks} complete")
            t.add_row(*(Text(clean(x)) for x in cells))
        console.print(t)
    timeline = run.timeline_summary()
    if timeline:
        console.print(Text.assemble(("Timeline:", "bold"), " ", clean(", ".join(
            f"{rows} {src} records over {ranks} ranks" for src, rows, ranks in timeline))))
    if run.problems:
        console.print()
        for p in run.problems:
            console.print(Text.assemble(("skipped:", "yellow"), " ", clean(p)))
