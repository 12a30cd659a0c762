"""`ncclscope bench` (not built yet)."""
from __future__ import annotations

import click


@click.command("bench", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def command(args: tuple[str, ...]) -> None:
    """Not available in this version yet."""
    raise click.ClickException("'ncclscope bench' is not available in this version yet")
