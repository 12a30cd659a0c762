"""`ncclscope perf`: an all_reduce_perf-style sweep through torch.distributed, under torchrun."""
from __future__ import annotations

import os

import click


@click.command("perf")
@click.option("--backend", type=click.Choice(["nccl", "gloo"]), default=None,
              help="Process group backend [default: nccl when CUDA is available, else gloo].")
@click.option("--ops", default="all_reduce", show_default=True,
              help="Comma-separated: all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, or 'all'.")
@click.option("--min-bytes", default="8", show_default=True, help="Smallest message (8, 64K, 1M, ...).")
@click.option("--max-bytes", default="256M", show_default=True, help="Largest message.")
@click.option("--factor", type=float, default=2.0, show_default=True, help="Size multiplier between steps.")
@click.option("--iters", type=int, default=20, show_default=True, help="Timed calls per size.")
@click.option("--warmup", type=int, default=5, show_default=True, help="Untimed calls per size.")
@click.option("--check/--no-check", default=True, show_default=True, help="Validate results (#wrong column).")
@click.option("--nproc", type=int, default=None,
              help="Ranks to launch on this host [default: GPU count for nccl, 2 for gloo]; ignored under torchrun.")
@click.option("--out", default=None, help="Run folder [default: ./ncclscope-runs/perf-<timestamp>].")
@click.option("--timeout", "timeout_s", type=float, default=None, help="Stop the launched sweep after this many s.")
def command(backend: str | None, ops: str, min_bytes: str, max_bytes: str, factor: float, iters: int, warmup: int,
            check: bool, nproc: int | None, out: str | None, timeout_s: float | None) -> None:
    """Measure collective time, algbw and busbw per message size (nccl-tests' table layout).

    Run it as is (it launches itself under torchrun with --nproc ranks) or inside an existing torchrun job.
    The table and a JSON copy are saved to the run folder, which `ncclscope analyze` reads.
    """
    from .. import perf

    try:
        opts = perf.resolve_options(backend, ops, min_bytes, max_bytes, factor, iters, warmup, check, out)
        perf.check_options(opts)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    if perf.in_launcher(os.environ):
        perf.run_rank(opts, click.echo)
        return
    n = nproc if nproc is not None else perf.nproc_default(opts.backend)
    if n < 1:
        raise click.BadParameter("--nproc must be >= 1")
    click.echo(f"# launching {n} rank(s): {' '.join(perf.torchrun_command(opts, n)[1:])}", err=True)
    try:
        rc = perf.launch(opts, n, click.echo, timeout_s=timeout_s)
    except TimeoutError as e:
        raise click.ClickException(str(e)) from None
    if rc != 0:
        raise click.ClickException(f"the sweep failed (torchrun exit code {rc}); see the ranks' messages above")
