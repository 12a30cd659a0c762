"""`ncclscope export RUN --perfetto FILE --prometheus FILE`: the analysis of RUN as a Chrome trace
(ui.perfetto.dev, chrome://tracing) and / or a Prometheus textfile-collector file."""
from __future__ import annotations

from pathlib import Path

import click

from ..input_names import InputError
from ..text_safety import clean


@click.command("export")
@click.argument("run", type=click.Path(exists=True, path_type=Path))
@click.option("--perfetto", "perfetto", type=click.Path(path_type=Path),
              help="Write a Chrome trace-event JSON file: one track per rank and process group (ui.perfetto.dev).")
@click.option("--prometheus", "prometheus", type=click.Path(path_type=Path),
              help="Write the state in Prometheus' text format (name it *.prom in node_exporter's textfile folder).")
@click.option("--no-cache", is_flag=True, help="Parse again; do not read or write the cache.")
def command(run: Path, perfetto: Path | None, prometheus: Path | None, no_cache: bool) -> None:
    """Export the analysis of RUN (a run folder, files or an archive) to other tools."""
    if perfetto is None and prometheus is None:
        raise click.UsageError("say what to write: --perfetto FILE and / or --prometheus FILE")
    from ..alerts_file import folder_alerts
    from ..analysis import analyze_paths
    from ..export import target_problem

    for target in (perfetto, prometheus):  # refused before the analysis, not after it
        why = target_problem(target) if target is not None else None
        if why is not None:
            raise InputError(f"cannot write {target}: {why}")
    a = analyze_paths([run], cache=not no_cache)
    if perfetto is not None:
        from ..export.perfetto import perfetto_json

        _write(perfetto, perfetto_json(a))
        click.echo(f"ncclscope: wrote {clean(perfetto)} (open it in https://ui.perfetto.dev or chrome://tracing)",
                   err=True)
    if prometheus is not None:
        from ..export.prometheus import prometheus_text

        _write(prometheus, prometheus_text(a, folder_alerts([run])))
        click.echo(f"ncclscope: wrote {clean(prometheus)} (Prometheus text format)", err=True)


def _write(path: Path, text: str) -> None:
    """``export.write_atomic``; a target it refuses or cannot write is the user's error (exit 2, one line)."""
    from ..export import write_atomic, write_problem

    try:
        write_atomic(path, text)
    except OSError as e:
        raise InputError(f"cannot write {path}: {write_problem(path, e)}") from None
