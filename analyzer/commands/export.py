"""`ncclscope export RUN --perfetto FILE --prometheus FILE`: the analysis of RUN as a Chrome trace
(ui.perfetto.dev, chrome://tracing) and / or a Prometheus textfile-collector file."""
from __future__ import annotations

from pathlib import Path

import click


@click.command("export")
@click.argument("run", type=click.Path(exists=True, path_type=Path))
@click.option("--perfetto", "perfetto", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a Chrome trace-event JSON file: one track per rank and process group (ui.perfetto.dev).")
@click.option("--prometheus", "prometheus", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the state in Prometheus' text format (name it *.prom in node_exporter's textfile folder).")
@click.option("--no-cache", is_flag=True, help="Parse again; do not read or write the cache.")
def command(run: Path, perfetto: Path | None, prometheus: Path | None, no_cache: bool) -> None:
    """Export the analysis of RUN (a run folder, files or an archive) to other tools."""
    if perfetto is None and prometheus is None:
        raise click.UsageError("say what to write: --perfetto FILE and / or --prometheus FILE")
    from ..analysis import analyze_paths
    from ..export import read_alerts, write_atomic

    a = analyze_paths([run], cache=not no_cache)
    if perfetto is not None:
        from ..export.perfetto import perfetto_json

        write_atomic(perfetto, perfetto_json(a))
        click.echo(f"ncclscope: wrote {perfetto} (open it in https://ui.perfetto.dev or chrome://tracing)", err=True)
    if prometheus is not None:
        from ..export.prometheus import prometheus_text

        write_atomic(prometheus, prometheus_text(a, read_alerts(run / "alerts.jsonl") if run.is_dir() else []))
        click.echo(f"ncclscope: wrote {prometheus} (Prometheus text format)", err=True)
