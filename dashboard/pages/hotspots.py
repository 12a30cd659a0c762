"""Hotspots: where collective time goes, bus bandwidth against size, and who waits for whom."""
from __future__ import annotations

from typing import Any

import dash
import plotly.graph_objects as go
from dash import Input, Output, callback, dcc, html

from ncclscope.dashboard import figures, ids
from ncclscope.dashboard.components import not_ready
from ncclscope.dashboard.data import RunStore, current

dash.register_page(__name__, path="/hotspots", name="Hotspots", order=3, title="ncclscope - hotspots")


def layout(**_: Any) -> html.Div:
    return html.Div([
        html.Div(id=ids.HS_INFO),
        html.Div([html.Label(["time share by", dcc.RadioItems(id=ids.HS_SHARE_BY, inline=True, value="op", options=[
            {"label": "operation", "value": "op"}, {"label": "message size", "value": "size"},
            {"label": "process group", "value": "pg"}])], className="ctl")], className="controls"),
        dcc.Graph(id=ids.HS_SHARE, config={"displaylogo": False}),
        dcc.Graph(id=ids.HS_BUSBW, config={"displaylogo": False}),
        dcc.Graph(id=ids.HS_WAIT, config={"displaylogo": False}),
    ])


def share(rs: RunStore, key: str | None, by: str) -> go.Figure:
    entry = rs.get(key)
    if entry is None:
        return figures.empty_figure("no run loaded")
    return entry.cached(("share", by), lambda: figures.time_share_figure(entry.analysis.run.collectives, by))


def busbw_and_wait(rs: RunStore, key: str | None) -> tuple[go.Figure, go.Figure, Any]:
    entry = rs.get(key)
    if entry is None:
        empty = figures.empty_figure("no run loaded")
        return empty, empty, not_ready(rs, key)
    run = entry.analysis.run
    df = run.collectives

    def busbw() -> go.Figure:
        pgs = figures.pg_choices(df)
        frame = figures.busbw_frame(df, figures.pg_nranks(df, run.communicators),
                                    figures.pg_transports(run.communicators, pgs, run.job.world_size))
        return figures.busbw_figure(frame, run.nccl_tests)

    def wait() -> go.Figure:
        pgs = figures.pg_choices(df)
        stuck = entry.analysis.decision.stuck
        pg = stuck.pg if stuck and stuck.pg in pgs else (pgs[0] if pgs else None)
        return figures.wait_heatmap_figure(*figures.wait_matrix(df, pg), pg=pg)

    note = html.Div("busbw = bytes / duration x factor (allreduce 2(n-1)/n, allgather and reducescatter (n-1)/n, "
                    "broadcast 1). Durations include time spent waiting for late ranks, so job points sit at or "
                    "below the link's real bandwidth." + (" Dashed/solid lines: nccl-tests or 'ncclscope perf' rows "
                                                          "from the inputs." if run.nccl_tests else ""),
                    className="muted")
    return entry.cached("busbw", busbw), entry.cached("wait", wait), note


@callback(Output(ids.HS_SHARE, "figure"), Input(ids.RUN_KEY, "data"), Input(ids.HS_SHARE_BY, "value"))
def _share(key: str | None, by: str) -> Any:
    return share(current(), key, by)


@callback(Output(ids.HS_BUSBW, "figure"), Output(ids.HS_WAIT, "figure"), Output(ids.HS_INFO, "children"),
          Input(ids.RUN_KEY, "data"))
def _busbw_wait(key: str | None) -> tuple[Any, Any, Any]:
    return busbw_and_wait(current(), key)
