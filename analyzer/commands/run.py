"""`ncclscope run [--run-dir DIR] [options] -- COMMAND...`: run a training command traced."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click


@click.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--run-dir", type=click.Path(path_type=Path), default=None,
              help="Folder for everything the run writes (default ./ncclscope-runs/<timestamp>).")
@click.option("--shared-run-dir", is_flag=True,
              help="Accept a --run-dir that other users own or can write to (refused otherwise). The hook's code "
                   "still comes from a private temporary folder and no file is written through a link.")
@click.option("--coll", is_flag=True, help="Also log NCCL COLL lines (one per collective; ~10% on short steps).")
@click.option("--no-hook", is_flag=True, help="Do not inject the in-process collective tracer.")
@click.option("--stall-seconds", type=float, default=None,
              help="Alert when progress stops this long (default: judged from the job's rhythm).")
@click.option("--webhook", default=None, metavar="URL", help="POST each alert as JSON to URL.")
@click.option("--alert-command", default=None, metavar="CMD", help="Run CMD for each alert (alert JSON on stdin).")
@click.option("--kill-on-hang", is_flag=True, help="End the job once a hang is confirmed and evidence is saved.")
@click.option("--poll", is_flag=True, help="Watch files by polling (network filesystems).")
@click.option("--dashboard", is_flag=True,
              help="Also serve the live dashboard (ncclscope serve --live DIR). On a terminal it stays up after the "
                   "job until Ctrl-C; otherwise it stops when the job ends.")
@click.option("--dashboard-port", type=click.IntRange(0, 65535), default=8050, show_default=True,
              help="The dashboard's port; when another process holds it, the next free one (the URL is printed).")
@click.option("--quiet", is_flag=True, help="Print only the job's own output and errors.")
@click.option("--inspector", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              metavar="PLUGIN.so",
              help="Load NCCL's Inspector profiler plugin (libnccl-profiler-inspector.so) into NCCL: per-collective "
                   "kernel times written into the run folder, read back by the analysis (no COLL lines needed).")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def command(run_dir: Path | None, shared_run_dir: bool, coll: bool, no_hook: bool, stall_seconds: float | None, webhook: str | None,
            alert_command: str | None, kill_on_hang: bool, poll: bool, dashboard: bool, dashboard_port: int,
            quiet: bool, inspector: Path | None, command: tuple[str, ...]) -> None:
    """Run COMMAND (torchrun, srun, mpirun, deepspeed, a script) with NCCL / PyTorch tracing set up,
    tee its output, then analyse the run. Exits with COMMAND's exit code."""
    from ..launch import RunOptions, UnsafeRunDir, default_run_dir, run_job

    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise click.UsageError("no command given: ncclscope run [OPTIONS] -- COMMAND...")
    if webhook is not None:
        from ..live.alerts import WebhookError, check_webhook_url

        try:
            check_webhook_url(webhook)
        except WebhookError as e:
            raise click.BadParameter(str(e), param_hint="--webhook") from None
    folder = run_dir if run_dir is not None else default_run_dir()

    def note(text: str) -> None:
        from ..text_safety import clean

        click.echo(f"ncclscope: {clean(text)}", err=True)  # notes may quote file names and log text

    def render(result: Any) -> None:
        from ..consoles import full_line_console
        from ..report import render_text

        render_text(result, full_line_console(stderr=True, highlight=False))

    if not quiet:
        note(f"run folder: {folder}")
    opts = RunOptions(command=command, run_dir=folder, coll=coll, hook=not no_hook, stall_seconds=stall_seconds,
                      webhook=webhook, alert_command=alert_command, kill_on_hang=kill_on_hang, poll=poll,
                      dashboard=dashboard, dashboard_port=dashboard_port, quiet=quiet, shared_dir=shared_run_dir,
                      inspector=inspector.resolve() if inspector is not None else None)
    from ..run_dashboard import until_interrupted

    try:
        code = run_job(opts, note if not quiet else _errors_only(note), render=None if quiet else render,
                       stdout=sys.stdout.buffer, stderr=sys.stderr.buffer,
                       hold=until_interrupted if dashboard and _interactive() else None)
    except UnsafeRunDir as e:
        raise click.ClickException(str(e)) from None
    except OSError as e:
        raise click.ClickException(f"cannot use run folder {folder}: {e.strerror or e}") from None
    if not quiet:
        note(f"exit code {code}; report: {folder / 'report.json'}")
    # click (standalone_mode=False) would swallow click.exceptions.Exit and main() would return 0
    raise SystemExit(code)


def _interactive() -> bool:
    """Someone at a terminal can press Ctrl-C (a batch job's ``run`` must end with its job)."""
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except ValueError:  # closed
        return False


def _errors_only(note: Any) -> Any:
    def quiet_note(text: str) -> None:
        if text.startswith(("cannot", "could not", "the command failed to start", "dashboard")):
            note(text)

    return quiet_note
