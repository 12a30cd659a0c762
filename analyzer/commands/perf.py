"""`ncclscope perf` (not built yet)."""
from __future__ import annotations

import click


@click.command("perf", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def command(args: tuple[str, ...]) -> None:
    """Not available in this version yet."""
    raise click.ClickException("'ncclscope perf' is not available in this version yet")
