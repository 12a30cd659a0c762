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


def judged_state(run_dir: Path, a: Any, ended: str | None) -> dict[str, Any]:
    """The one judgement of the folder (``analyze``'s: ``Analysis``) as ``watch`` shows it: the verdict,
    every rank's state and progress as judged, the stuck collective. Nothing here decides anything."""
    from ..report import rank_summary

    d = a.decision
    ranks = []
    exits = {x.rank: x.exitcode for x in a.run.exits if x.rank is not None}
    for r in rank_summary(a):
        pgs = {pg: st for pg, st in r["pg_status"].items() if not pg.endswith(":p2p")}
        ranks.append({"rank": r["rank"], "host": r["host"], "state": r["state"], "detail": r["detail"],
                      "enqueued": {pg: st["last_enqueued"] for pg, st in pgs.items() if st["last_enqueued"] is not None},
                      "completed": {pg: st["last_completed"] for pg, st in pgs.items() if st["last_completed"] is not None},
                      "exit_code": exits.get(r["rank"]), "where": r["where"]})
    pending = []
    if d.stuck is not None:
        by: dict[str, list[int]] = {}
        for rank, state, _ in d.states:
            by.setdefault(state, []).append(rank)
        pending.append({"pg": d.stuck.pg, "seq": d.stuck.seq, "op": d.stuck.op,
                        "never_joined": sorted(by.get("never_joined", []) + by.get("stuck_outside_nccl", [])),
                        "mismatched": sorted(by.get("mismatched", [])),
                        "waiting": sorted(by.get("stuck_in_collective", []))})
    return {"run_dir": str(run_dir), "world_size": a.run.job.world_size, "ranks": ranks, "pending": pending,
            "verdict": {"verdict": d.verdict.value, "culprit_ranks": list(d.culprit_ranks),
                        "stuck": d.stuck.to_json() if d.stuck else None, "headline": d.headline,
                        "certainty": d.certainty_json()},
            "exited": ended is not None, "ended": ended, "files": len(a.run.files), "problems": list(a.run.problems)}


def render_judged(snap: dict[str, Any], console: Any) -> None:
    """``judged_state``'s object on the terminal: the ranks' table, then the verdict."""
    from rich.table import Table
    from rich.text import Text

    from ..rules.states import fmt_ranks
    from ..text_safety import clean, markup

    t = Table(title=markup(f"ncclscope: {snap['run_dir']}"), title_justify="left")
    hosts = len({r.get("host") for r in snap["ranks"] if r.get("host")}) > 1  # one column per host only when several
    for col in ("rank", *(("host",) if hosts else ()), "state", "enqueued", "completed", "exit", "where"):
        t.add_column(col, overflow="fold")
    for r in snap["ranks"]:
        cells = (str(r["rank"]), *((r.get("host") or "",) if hosts else ()), (r["state"] or "").replace("_", " "),
                 " ".join(f"pg{k}:{v}" for k, v in sorted(r["enqueued"].items())),
                 " ".join(f"pg{k}:{v}" for k, v in sorted(r["completed"].items())),
                 "" if r["exit_code"] is None else str(r["exit_code"]), r["where"] or "")
        t.add_row(*(Text(clean(c)) for c in cells))
    console.print(t)
    v = snap["verdict"]
    console.print(Text(clean(f"VERDICT: {v['verdict'].upper()}  {v['headline']}")))
    if v["culprit_ranks"]:
        console.print(Text(clean(f"Culprit rank(s): {fmt_ranks(v['culprit_ranks'])}")))
    for p in snap["pending"]:
        console.print(Text(clean(f"stuck: {p['op'] or 'collective'} #{p['seq']} of process group {p['pg']}; "
                                 f"never joined: {fmt_ranks(p['never_joined']) or '-'}; "
                                 f"waiting: {fmt_ranks(p['waiting']) or '-'}")))
    if snap.get("ended"):
        console.print(Text(clean(f"the job has ended: {snap['ended']}")))
    for e in snap["problems"]:
        console.print(Text.assemble(("not read:", "yellow"), " ", clean(e)))


def judge_folder(run_dir: Path, ended: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the judged state, the judgement as an alert: none for a job judged healthy, degraded or unknown)."""
    from ..analysis import analyze_paths
    from ..live.alerts import judgement_alert

    a = analyze_paths([run_dir], cache=False)
    alert = judgement_alert(a)
    return judged_state(run_dir, a, ended), [alert] if alert else []


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
@click.option("--debug-server", metavar="URL", default=None,
              help="Also poll PyTorch's debug server (torch.distributed.debug.start_debug_server, torch 2.10+) for "
                   "every rank's Flight Recorder state: http://HOST:PORT, or PORT for 127.0.0.1.")
def command(run_dir: Path, stall_seconds: float | None, webhook: str | None, alert_command: str | None,
            poll: bool, once: bool, as_json: bool, debug_server: str | None) -> None:
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
    if debug_server is not None:
        from ..live.debug_server import DebugServerError, parse_server_url

        try:
            parse_server_url(debug_server)
        except DebugServerError as err:
            raise click.BadParameter(str(err), param_hint="--debug-server") from None
    out = full_line_console(highlight=False)  # the state and notes: full lines when piped
    boxes = box_console(highlight=False)  # the alerts' panels fill the width: rich's own
    if once:
        if not run_dir.is_dir():
            raise click.ClickException(f"{run_dir} is not a folder")
        snap, alerts = _judge_or_refuse(run_dir, None)
        if as_json:
            click.echo(json.dumps({"state": snap, "alerts": alerts}, default=str))
        else:
            render_judged(snap, out)
            if not alerts:
                out.print("no alert")
        return
    cfg = LiveConfig(stall_seconds=stall_seconds, webhook=webhook, command=alert_command, poll=poll,
                     debug_server=debug_server)
    mon = LiveMonitor(run_dir, cfg, console=boxes)
    if not run_dir.is_dir():
        out.print(f"waiting for {markup(run_dir)} to appear (Ctrl-C to stop)")
    rule = f"{stall_seconds:g} s" if stall_seconds else "from the job rhythm"
    reported: set[str] = set()
    mon.start()
    ended = None
    try:  # a Ctrl-C from here on ends the watch with the judgement of what it saw
        out.print(f"watching {markup(run_dir)} (stall threshold: {rule}; Ctrl-C to stop)")
        ended = _follow(mon, run_dir, lambda e: out.print(f"[yellow]warning:[/] {markup(e)}"), reported)
    except KeyboardInterrupt:
        pass
    finally:
        mon.stop()
    out.print(f"{len(mon.alerts)} alert(s) raised while watching")
    if run_dir.is_dir():
        render_judged(_judge_or_refuse(run_dir, ended)[0], out)


def _follow(mon: Any, run_dir: Path, warn: Any, reported: set[str]) -> str | None:
    """Follow the folder until the job has ended (``live.ended``); the reason."""
    from ..live.ended import job_ended

    ended_at, why = None, None
    size, grew_at = -1, time.monotonic()
    while True:
        time.sleep(0.5)
        for e in [*mon.errors(), *not_read(mon)]:
            if e not in reported:
                reported.add(e)
                warn(e)
        now_size = _size(mon)
        if now_size != size:
            size, grew_at = now_size, time.monotonic()
        hosts = [rs.host for rs in list(mon.state.ranks.values())]
        why = why or job_ended(run_dir, mon.state.exited(), time.monotonic() - grew_at, hosts)
        if why is not None:
            ended_at = ended_at or time.monotonic()
            if time.monotonic() - ended_at >= EXIT_GRACE_S:
                return str(why)


def _size(mon: Any) -> int:
    """Bytes the monitor has read so far: the folder's growth as the monitor sees it."""
    try:
        return sum(getattr(st, "offset", 0) for st in list(mon.tailer.files.values()))
    except RuntimeError:  # changed while copied by the monitor's thread: next time
        return -1


def _judge_or_refuse(run_dir: Path, ended: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from ..input_names import InputError

    try:
        return judge_folder(run_dir, ended)
    except InputError as e:  # nothing readable yet: no judgement, said as such
        empty: dict[str, Any] = {"run_dir": str(run_dir), "world_size": None, "ranks": [], "pending": [],
                 "verdict": {"verdict": "unknown", "culprit_ranks": [], "stuck": None,
                             "headline": f"nothing to judge yet: {e}", "certainty": None},
                 "exited": ended is not None, "ended": ended, "files": 0, "problems": []}
        return empty, []
