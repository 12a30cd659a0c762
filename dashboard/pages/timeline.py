"""Timeline: per-rank swimlanes of one process group's collectives, by sequence number or by time; at
scale (or on request) the progress matrix: ranks x the collectives around the stuck one, ranks with
the same progress grouped so that the ones that differ stand out. Below: per-rank counts."""
from __future__ import annotations

from typing import Any

import dash
import plotly.graph_objects as go
from dash import Input, Output, callback, dcc, html
from ncclscope.dashboard import figures, ids
from ncclscope.dashboard.components import not_ready, table
from ncclscope.dashboard.data import Entry, RunStore, current
from ncclscope.dashboard.tables import timeline_counts
from ncclscope.metrics.progress import states_at_stuck
from ncclscope.metrics.records import pg_choices
from ncclscope.metrics.timeline import completed_through, pg_records, progress_matrix, run_end

dash.register_page(__name__, path="/timeline", name="Timeline", order=2, title="ncclscope - timeline")

LANES_MAX_RANKS = 64  # more ranks than this: the progress matrix by default
LANES_MAX_POINTS = 200_000
COUNT_COLUMNS = ["rank", "records", "completed", "not completed", "completion not logged", "at stuck", "culprit"]


def layout(**_: Any) -> html.Div:
    return html.Div([
        html.Div([
            html.Label(["process group", dcc.Dropdown(id=ids.TL_PG, clearable=False)], className="ctl wide"),
            html.Label(["view", dcc.RadioItems(id=ids.TL_VIEW, inline=True, value="auto", options=[
                {"label": "auto", "value": "auto"}, {"label": "ranks x collectives", "value": "lanes"},
                {"label": "progress around the stuck collective", "value": "matrix"}])], className="ctl"),
            html.Label(["x axis", dcc.RadioItems(id=ids.TL_AXIS, inline=True, value="seq", options=[
                {"label": "sequence number", "value": "seq"}, {"label": "time", "value": "time"}])], className="ctl"),
        ], className="controls"),
        html.Div(id=ids.TL_INFO, className="muted"),
        dcc.Graph(id=ids.TL_GRAPH, config={"displaylogo": False, "scrollZoom": True}),
        html.Div(id=ids.TL_COUNTS, className="counts"),
    ])


def pg_options(rs: RunStore, key: str | None) -> tuple[list[dict[str, Any]], Any]:
    entry = rs.get(key)
    if entry is None:
        return [], None
    pgs = entry.cached("pgs", lambda: pg_choices(entry.analysis.run.collectives))
    stuck = entry.analysis.decision.stuck
    default = stuck.pg if stuck and stuck.pg in pgs else (pgs[0] if pgs else None)
    return [{"label": p, "value": p} for p in pgs], default


def _use_matrix(entry: Entry, pg: str | None, view: str) -> bool:
    if view in ("lanes", "matrix"):
        return view == "matrix"
    n_rows = entry.cached(("pg_rows", pg), lambda: len(pg_records(entry.analysis.run.collectives, pg)))
    return len(entry.analysis.run.ranks()) > LANES_MAX_RANKS or n_rows > LANES_MAX_POINTS


def _build(entry: Entry, pg: str | None, axis: str, matrix: bool) -> go.Figure:
    a = entry.analysis
    stuck = a.decision.stuck
    view = pg_records(a.run.collectives, pg, completed_through(a.run, a.findings, pg, stuck))
    states = states_at_stuck(a.run, a.findings, stuck) if stuck is not None and str(stuck.pg) == str(pg) else {}
    if matrix:
        pm = progress_matrix(view, a.run.ranks(), stuck if states else None, states)
        return figures.progress_figure(pm, stuck, pg, len(set(a.run.ranks()) | set(view["rank"].tolist())))
    return figures.timeline_figure(view, a.run.ranks(), stuck, states, axis, pg, run_end(a.run))


def figure(rs: RunStore, key: str | None, pg: str | None, axis: str, view: str = "auto") -> tuple[go.Figure, Any]:
    entry = rs.get(key)
    if entry is None:
        return figures.empty_figure("no run loaded"), not_ready(rs, key)
    a = entry.analysis
    if pg is None:
        return figures.empty_figure(
            "no collectives in the inputs: the hook (ncclscope run), a Flight Recorder dump "
            "(TORCH_FR_BUFFER_SIZE) or NCCL's COLL lines (NCCL_DEBUG_SUBSYS=COLL) record them"), None
    matrix = _use_matrix(entry, pg, view)
    fig = entry.cached(("timeline", pg, axis, matrix), lambda: _build(entry, pg, axis, matrix))
    stuck = a.decision.stuck
    if matrix:
        info = ("Each row is a group of ranks with the same progress over these collectives; the ranks that "
                "differ are rows of their own.")
    else:
        info = ("Filled squares: completed; open: issued, not completed. " + (
            f"At #{stuck.seq}: a red x where a rank waits in it, a black diamond where a rank never joined it. "
            if stuck else "") + "Drag to zoom, double-click to reset.")
    return fig, info


def counts(rs: RunStore, key: str | None, pg: str | None) -> Any:
    entry = rs.get(key)
    if entry is None or pg is None:
        return None
    rows = entry.cached(("tl_counts", pg), lambda: timeline_counts(entry.analysis, pg))
    if len(rows) > LANES_MAX_RANKS:
        rows = [r for r in rows if r["at stuck"] and "waiting" not in r["at stuck"] or r["culprit"]][:64]
        head = html.H4("Ranks that differ from the rest (the culprit, and any rank that never joined the stuck "
                       "collective)")
    else:
        head = html.H4(f"Per rank, process group {pg}")
    cols = [c for c in COUNT_COLUMNS if c != "completion not logged" or any(r[c] for r in rows)]
    return html.Div([head, table(rows, cols, cls="grid", max_rows=LANES_MAX_RANKS)], id="tl-counts-table")


@callback(Output(ids.TL_PG, "options"), Output(ids.TL_PG, "value"), Input(ids.RUN_KEY, "data"))
def _pgs(key: str | None) -> tuple[Any, Any]:
    return pg_options(current(), key)


@callback(Output(ids.TL_GRAPH, "figure"), Output(ids.TL_INFO, "children"), Output(ids.TL_COUNTS, "children"),
          Input(ids.RUN_KEY, "data"), Input(ids.TL_PG, "value"), Input(ids.TL_AXIS, "value"),
          Input(ids.TL_VIEW, "value"))
def _figure(key: str | None, pg: str | None, axis: str, view: str) -> tuple[Any, Any, Any]:
    rs = current()
    fig, info = figure(rs, key, pg, axis, view)
    return fig, info, counts(rs, key, pg)
