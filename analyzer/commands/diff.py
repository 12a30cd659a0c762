"""`ncclscope diff RUN_A RUN_B [--json]`: what changed between two runs of one job (a good one, A, and a bad one, B)."""
from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command("diff")
@click.argument("run_a", type=click.Path(exists=True, path_type=Path))
@click.argument("run_b", type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object on stdout (docs/interfaces.md; schema: ncclscope/schema/diff.schema.json).")
@click.option("--evidence", "-e", is_flag=True, help="Under each difference, the line that shows it in A and in B.")
@click.option("--no-cache", is_flag=True, help="Parse again; do not read or write the cache.")
def command(run_a: Path, run_b: Path, as_json: bool, evidence: bool, no_cache: bool) -> None:
    """Compare RUN_A with RUN_B (each a run folder, files or an archive, as `analyze` takes them): versions,
    settings, layout, transports, rings and trees, NCCL's algorithms, init time, bus bandwidth, time shares,
    hotspots, stragglers and verdicts, one line per difference, most likely to matter for speed first."""
    from ..analysis import analyze_paths
    from ..compare import compare

    a = analyze_paths([run_a], cache=not no_cache)
    b = analyze_paths([run_b], cache=not no_cache)
    result = compare(a, b, str(run_a), str(run_b))
    from ..compare.render import json_text, render_text

    if as_json:
        sys.stdout.write(json_text(result) + "\n")
    else:
        from ..consoles import full_line_console

        render_text(result, full_line_console(highlight=False), evidence=evidence)
