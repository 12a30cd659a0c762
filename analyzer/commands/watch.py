"""`ncclscope watch DIR`: attach the live monitor to a run folder written by any launcher."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

EXIT_GRACE_S = 2.0  # after every rank exited: the last crash alert, the last lines


def render_state(snap: dict[str, Any], console: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from ..text_safety import clean, markup

    t = Table(title=markup(f"ncclscope: {snap['run_dir']}"), title_justify="left")
    hosts = len({r.get("host") for r in snap["ranks"] if r.get("host")}) > 1  # one column per host only when several
    for col in ("rank", *(("host",) if hosts else ()), "step", "enqueued", "completed", "idle s", "exit", "where"):
        t.add_column(col, overflow="fold")
    for r in snap["ranks"]:
        cells = (str(r["rank"]), *((r.get("host") or "",) if hosts else ()), "" if r["step"] is None else str(r["step"]),
                 " ".join(f"pg{k}:{v}" for k, v in sorted(r["enqueued"].items())),
                 " ".join(f"pg{k}:{v}" for k, v in sorted(r["completed"].items())),
                 "" if r["idle_s"] is None else f"{r['idle_s']:.1f}",
                 "" if r["exit_code"] is None else str(r["exit_code"]), r["where"] or "")
        t.add_row(*(Text(clean(c)) for c in cells))  # from the logs: never parsed as markup
    console.print(t)
    rh = snap["rhythm"]
    p99 = f"{rh['p99_gap_s']:.3f} s" if rh.get("p99_gap_s") is not None else "-"
    console.print(Text(clean(f"stall threshold {snap['threshold_s']:.1f} s (p99 gap between completions {p99}, "
                             f"{rh['gaps']} gaps); files read: {snap['files']}")))
    for p in snap["pending"]:
        console.print(Text(clean(f"pending: {p['op'] or 'collective'} #{p['seq']} of process group {p['pg']}; "
                                 f"never joined: {p['never_joined'] or '-'}; waiting: {p['waiting'] or '-'}")))
    from ..rules.states import fmt_ranks

    for n in snap.get("silent_nodes") or []:
        console.print(Text(clean(f"silent node: {n['host']} (ranks {fmt_ranks(n['ranks'])}): nothing for "
                                 f"{n['silent_s']:.1f} s, the last {n['last_line'] or '?'}")))
    if snap["exited"]:
        console.print("every rank has exited")
    for e in snap["problems"]:
        console.print(Text.assemble(("warning:", "yellow"), " ", clean(e)))


def not_read(mon: Any) -> list[str]:
    """The files the tailer refused to open (a link planted in the folder, a FIFO), one line each."""
    try:
        refused = {**getattr(mon.watcher, "skipped", {}), **getattr(mon.tailer, "refused", {})}
    except RuntimeError:  # changed while copied by the monitor's thread: next time
        return []
    return [f"not read: {path} ({why})" for path, why in sorted(refused.items())]


@click.command("watch")
@click.argument("run_dir", metavar="DIR", type=click.Path(path_type=Path, file_okay=False))
@click.option("--stall-seconds", type=click.FloatRange(min=0.1), default=None,
              help="Alert after this many seconds without progress while a collective is pending "
                   "[default: max(5 s, 3 x p99 of the job's gaps between completions)].")
@click.option("--webhook", metavar="URL", default=None, help="POST every alert as JSON (Slack-compatible 'text').")
@click.option("--alert-command", metavar="CMD", default=None, help="Run CMD with the alert JSON on stdin.")
@click.option("--poll", is_flag=True, help="Poll the folder instead of file events (NFS, Lustre, GPFS).")
@click.option("--once", is_flag=True, help="Read what is there, print the state and the alerts, exit 0.")
@click.option("--json", "as_json", is_flag=True, help="With --once: one JSON object (state and alerts) on stdout.")
def command(run_dir: Path, stall_seconds: float | None, webhook: str | None, alert_command: str | None,
            poll: bool, once: bool, as_json: bool) -> None:
    """Watch a run folder (ncclscope run, Slurm, Kubernetes...) and alert on hangs, desyncs and crashes.

    Runs until Ctrl-C or until every rank has exited. Alerts are printed, appended to
    DIR/alerts.jsonl and sent to the webhook / command.
    """
    from ..consoles import box_console, full_line_console
    from ..live.alerts import WebhookError, check_webhook_url
    from ..live.monitor import LiveConfig, LiveMonitor
    from ..text_safety import markup

    if webhook is not None:
        try:
            check_webhook_url(webhook)
        except WebhookError as err:
            raise click.BadParameter(str(err), param_hint="--webhook") from None
    out = full_line_console(highlight=False)  # the state and notes: full lines when piped
    boxes = box_console(highlight=False)  # the alerts' panels fill the width: rich's own
    if once:
        if not run_dir.is_dir():
            raise click.ClickException(f"{run_dir} is not a folder")
        cfg = LiveConfig(stall_seconds=stall_seconds, poll=poll, console=not as_json, write=False)
        mon = LiveMonitor(run_dir, cfg, console=boxes)
        try:
            alerts = mon.run_once()
            snap = mon.snapshot()
        finally:
            mon.stop()
        if as_json:
            click.echo(json.dumps({"state": snap, "alerts": alerts}, default=str))
        else:
            render_state(snap, out)
            for e in not_read(mon):
                out.print(f"[yellow]warning:[/] {markup(e)}")
            if not alerts:
                out.print("no alert")
        return
    cfg = LiveConfig(stall_seconds=stall_seconds, webhook=webhook, command=alert_command, poll=poll)
    mon = LiveMonitor(run_dir, cfg, console=boxes)
    if not run_dir.is_dir():
        out.print(f"waiting for {markup(run_dir)} to appear (Ctrl-C to stop)")
    rule = f"{stall_seconds:g} s" if stall_seconds else "from the job rhythm"
    out.print(f"watching {markup(run_dir)} (stall threshold: {rule}; Ctrl-C to stop)")
    reported: set[str] = set()
    mon.start()
    exited_at = None
    try:
        while True:
            time.sleep(0.5)
            for e in [*mon.errors(), *not_read(mon)]:
                if e not in reported:
                    reported.add(e)
                    out.print(f"[yellow]warning:[/] {markup(e)}")
            if mon.state.exited():
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at >= EXIT_GRACE_S:
                    break
    except KeyboardInterrupt:
        pass
    finally:
        mon.stop()
    render_state(mon.snapshot(), out)
    out.print(f"{len(mon.alerts)} alert(s)")
