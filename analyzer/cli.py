"""Command line: the only place that prints or exits.

``main(argv)`` returns the exit code; errors below the CLI are exceptions, mapped here:
InputError -> one line on stderr, exit 2.
"""
from __future__ import annotations

import os
import sys

# numpy's transparent-huge-page hint off for this process: where the kernel compacts memory to find
# huge pages (THP defrag "madvise", the default), the fresh arrays of a large model stall on page
# faults (measured in docs/performance.md, "model build"). Set before numpy is imported; a user's
# NUMPY_MADVISE_HUGEPAGE=1 wins.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
from collections.abc import Sequence
from pathlib import Path

from typing import TYPE_CHECKING

import click

from . import __version__

if TYPE_CHECKING:
    from rich.console import Console

    from .stdin_input import Spool


class _LazyGroup(click.Group):
    """The subcommands in ``commands/`` are imported when one is named (or all, when ``--help`` lists them):
    ``analyze``, the command users wait on, loads none of them (~9 ms of start-up before its workers fork)."""

    LAZY = ("bench", "diff", "doctor", "export", "perf", "run", "serve", "watch")

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.LAZY and cmd_name not in self.commands:
            import importlib

            self.add_command(importlib.import_module(f"{__package__}.commands.{cmd_name}").command)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ncclscope")
def cli() -> None:
    """Find out why multi-GPU PyTorch training (torch.distributed + NCCL) is stuck or slow."""


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout (docs/interfaces.md; schema: ncclscope/schema/report.schema.json).")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
@click.option("--no-cache", is_flag=True, help="Parse again; do not read or write the cache (in ~/.cache/ncclscope).")
def analyze(paths: tuple[Path, ...], as_json: bool, no_progress: bool, no_cache: bool) -> None:
    """Analyse a run folder, log files, Flight Recorder dumps, or a .zip / .tar(.gz) of them; - reads a paste
    or a pipe from standard input (ncclscope analyze - < log.txt)."""
    if _WHOLE_PROCESS:  # this process ends with the analysis (gc_pause.py); numpy is not loaded yet
        from .gc_pause import gc_off_for_process

        gc_off_for_process()
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # no BLAS thread per core: 40 ms of CPU, no matrix product
        _clean_up_on_sigterm()
    spool = _read_stdin() if any(str(p) == "-" for p in paths) else None
    try:
        if spool is not None:  # the same analysis as of a file; never cached (its path is new every time)
            paths = tuple(spool.path if str(p) == "-" else p for p in paths)
        _analyze(paths, as_json, no_progress, no_cache or spool is not None)
    finally:
        if spool is not None:
            spool.remove()
    if _WHOLE_PROCESS:  # nothing is left to do: the interpreter's teardown (freeing every record) is skipped
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _read_stdin() -> Spool:
    """Standard input in a private temporary file (``stdin_input``), said on a terminal how to end it."""
    from .stdin_input import spool_stdin

    try:
        if sys.stdin.isatty():
            click.echo("ncclscope: reading the log from standard input; end it with Ctrl-D", err=True)
    except ValueError:  # closed
        pass
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        from .input_names import InputError

        raise InputError("standard input is closed; give a file or a folder")
    return spool_stdin(stream)


def _analyze(paths: tuple[Path, ...], as_json: bool, no_progress: bool, no_cache: bool) -> None:
    from .analysis import analyze_paths
    from .malloc import keep_freed_memory
    from .text_safety import markup

    if as_json and not no_cache:  # an unchanged folder analysed before: the stored line, nothing parsed or decoded
        from .cache import open_report

        cached = open_report(list(paths))
        if cached is not None:
            sys.stdout.write(cached + "\n")
            return
    keep_freed_memory()  # this process ends with the analysis (malloc.py)
    said: list[Console] = []  # rich's stderr console, made (rich loaded) when there is something to show there

    def err() -> Console:
        if not said:
            from .consoles import full_line_console

            said.append(full_line_console(stderr=True))
        return said[0]

    progress = None
    if not no_progress and _may_be_terminal() and err().is_terminal:
        from rich.progress import Progress

        bar = Progress(transient=True, console=err())
        task = bar.add_task("parsing", total=None)
        bar.start()

        def progress(i: int, n: int) -> None:
            bar.update(task, completed=i, total=n)
    try:
        result = analyze_paths(list(paths), progress=progress, cache=not no_cache, defer_store=True,
                               note=lambda text: err().print(f"ncclscope: {markup(text)}", highlight=False))
    finally:
        if progress is not None:
            bar.stop()
    from .report import json_text, render_text

    if as_json:
        sys.stdout.write(json_text(result) + "\n")
    else:
        from .consoles import full_line_console

        render_text(result, full_line_console(highlight=False))
    sys.stdout.flush()  # the verdict is out before the cache entry is written
    result.finish()


# main() called as the program (argv None: the console script, python -m ncclscope), not by a caller
_WHOLE_PROCESS = False


def _may_be_terminal() -> bool:
    """Whether rich could take stderr for a terminal (a tty, or forced by the variables rich reads)."""
    try:
        tty = sys.stderr.isatty()
    except ValueError:  # closed
        tty = False
    return tty or "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ


def _clean_up_on_sigterm() -> None:
    """A scheduler's or a user's SIGTERM, a closed terminal's SIGHUP or a SIGQUIT still ends ``analyze`` by the
    signal, but first removes the folder archives were extracted into and standard input's spool (the parse
    workers' results are nameless memory files, freed with the processes whatever the signal, SIGKILL too). The
    handler does not raise: an exception from a signal handler can land in a finaliser and be ignored
    there, and the analysis would run on. A handler someone else installed (or an ignored SIGHUP) is kept."""
    import signal

    def _term(signum: int, _frame: object) -> None:
        mod = sys.modules.get(f"{__package__}.ingest")
        if mod is not None:
            mod.remove_live_results()
        spools = sys.modules.get(f"{__package__}.stdin_input")
        if spools is not None:
            spools.remove_live_spools()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    try:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            if signal.getsignal(signum) is signal.SIG_DFL:
                signal.signal(signum, _term)
    except ValueError:  # not the main thread
        pass


def main(argv: Sequence[str] | None = None) -> int:
    from .input_names import InputError
    from .text_safety import clean

    global _WHOLE_PROCESS
    _WHOLE_PROCESS = argv is None
    try:
        rv = cli.main(args=list(argv) if argv is not None else None, prog_name="ncclscope", standalone_mode=False)
    except InputError as e:
        click.echo(f"ncclscope: {clean(e)}", err=True)  # may name input files: no control characters
        return 2
    except click.exceptions.Abort:
        click.echo("ncclscope: aborted", err=True)
        return 130
    except click.ClickException as e:
        e.show()
        return 2
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as e:
        if not e.name or e.name.split(".")[0] == "ncclscope":
            click.echo(f"ncclscope: internal error: {type(e).__name__}: {clean(e)} (please report it)", err=True)
            return 3
        # a dependency left out of this Python (a copy of the sources run without `pip install`): say which
        click.echo(f"ncclscope: cannot run: the package '{clean(e.name.split('.')[0])}' is not installed for "
                   f"{clean(sys.executable)}; install ncclscope with its dependencies (`pip install .` or "
                   "`make setup` in the repository)", err=True)
        return 3
    except Exception as e:  # noqa: BLE001 - the last resort: one line, never a traceback
        click.echo(f"ncclscope: internal error: {type(e).__name__}: {clean(e)} (please report it)", err=True)
        return 3
    return rv if isinstance(rv, int) else 0
