"""Hotspots: where collective time goes, where the volume goes (calls and bytes, from any record with a
size: NCCL's COLL lines alone suffice), bus bandwidth against size, and who waits for whom. Every
number is ``ncclscope.metrics``' (the hotspot finding of the text report quotes the same table)."""
from __future__ import annotations

from typing import Any

import dash
import plotly.graph_objects as go
from dash import Input, Output, callback, dcc, html
from ncclscope.dashboard import figures, ids
from ncclscope.dashboard.components import not_ready, table
from ncclscope.dashboard.data import Entry, RunStore, current
from ncclscope.metrics.busbw import with_transport
from ncclscope.metrics.records import pg_choices
from ncclscope.metrics.share import run_busbw, run_volume, time_share, volume
from ncclscope.metrics.waiting import late_counts, run_late_arrivals, wait_matrix

dash.register_page(__name__, path="/hotspots", name="Hotspots", order=3, title="ncclscope - hotspots")


def layout(**_: Any) -> html.Div:
    return html.Div([
        html.Div(id=ids.HS_INFO),
        html.Div([html.Label(["group by", dcc.RadioItems(id=ids.HS_SHARE_BY, inline=True, value="op", options=[
            {"label": "operation", "value": "op"}, {"label": "message size", "value": "size"},
            {"label": "process group", "value": "pg"}, {"label": "all three", "value": "top"}])], className="ctl")],
            className="controls"),
        html.Div(id=ids.HS_TOP),
        dcc.Graph(id=ids.HS_SHARE, config={"displaylogo": False}),
        dcc.Graph(id=ids.HS_VOLUME, config={"displaylogo": False}),
        dcc.Graph(id=ids.HS_BUSBW, config={"displaylogo": False}),
        dcc.Graph(id=ids.HS_WAIT, config={"displaylogo": False}),
    ])


def share_table(entry: Entry, by: str) -> Any:
    return time_share(run_busbw(entry.analysis.run), by)


def share(rs: RunStore, key: str | None, by: str) -> go.Figure:
    entry = rs.get(key)
    if entry is None:
        return figures.empty_figure("no run loaded")
    return entry.cached(("share", by), lambda: figures.time_share_figure(share_table(entry, by), by))


def volume_fig(rs: RunStore, key: str | None, by: str) -> go.Figure:
    entry = rs.get(key)
    if entry is None:
        return figures.empty_figure("no run loaded")
    by = "op" if by == "top" else by
    return entry.cached(("volume", by), lambda: figures.volume_figure(volume(run_volume(entry.analysis.run), by), by))


def top_table(rs: RunStore, key: str | None) -> Any:
    """The three largest (op, size, pg) time shares: the hotspot line of the text report, as a table."""
    entry = rs.get(key)
    if entry is None:
        return None
    top = share_table(entry, "top").head(3)
    if not len(top):
        return None
    rows = [{"collective": r.group, "share": f"{r.share:.1%}", "time": figures.fmt_ms(r.time_ms),
             "calls": int(r.calls)} for r in top.itertuples()]
    return html.Div([html.H4("Where collective time goes"), table(rows, ["collective", "share", "time", "calls"])],
                    id="hs-top-table")


def busbw_and_wait(rs: RunStore, key: str | None) -> tuple[go.Figure, go.Figure, Any]:
    entry = rs.get(key)
    if entry is None:
        empty = figures.empty_figure("no run loaded")
        return empty, empty, not_ready(rs, key)
    run = entry.analysis.run

    def busbw() -> go.Figure:
        return figures.busbw_figure(with_transport(run_busbw(run), run.communicators, run.job.world_size),
                                    run.nccl_tests)

    def wait() -> go.Figure:
        pgs = pg_choices(run.collectives)
        stuck = entry.analysis.decision.stuck
        pg = stuck.pg if stuck and stuck.pg in pgs else (pgs[0] if pgs else None)
        return figures.wait_heatmap_figure(*wait_matrix(run.collectives, pg), pg=pg)

    late = late_counts(run_late_arrivals(run)).head(3)
    lines: list[Any] = [html.Div(
        "busbw = bytes / time x factor (allreduce 2(n-1)/n, allgather and reducescatter (n-1)/n, broadcast 1), "
        "each collective timed by its shortest rank; #1 of a group is left out (connection set-up)."
        + (" Dashed/solid lines: nccl-tests or 'ncclscope perf' rows from the inputs." if run.nccl_tests else ""),
        className="muted")]
    if len(late):
        lines.append(html.Div("arrived last most often: " + "; ".join(
            f"rank {int(r.rank)} at {int(r.late)} collectives ({r.wait_ms / 1e3:.2f} s of others' waiting)"
            for r in late.itertuples()), className="muted", id="hs-late"))
    return entry.cached("busbw", busbw), entry.cached("wait", wait), html.Div(lines)


@callback(Output(ids.HS_SHARE, "figure"), Output(ids.HS_VOLUME, "figure"), Output(ids.HS_TOP, "children"),
          Input(ids.RUN_KEY, "data"), Input(ids.HS_SHARE_BY, "value"))
def _share(key: str | None, by: str) -> tuple[Any, Any, Any]:
    rs = current()
    return share(rs, key, by), volume_fig(rs, key, by), top_table(rs, key)


@callback(Output(ids.HS_BUSBW, "figure"), Output(ids.HS_WAIT, "figure"), Output(ids.HS_INFO, "children"),
          Input(ids.RUN_KEY, "data"))
def _busbw_wait(key: str | None) -> tuple[Any, Any, Any]:
    return busbw_and_wait(current(), key)
