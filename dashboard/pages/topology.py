"""Topology: per communicator, the ring of each channel, the tree of each channel, and a host-level view."""
from __future__ import annotations

from typing import Any

import dash
import plotly.graph_objects as go
from dash import Input, Output, callback, dcc, html
from ncclscope.dashboard import figures, ids
from ncclscope.dashboard.components import not_ready
from ncclscope.dashboard.data import Entry, RunStore, current

dash.register_page(__name__, path="/topology", name="Topology", order=1, title="ncclscope - topology")

HOST_VIEW_ABOVE = 64  # ranks; bigger communicators open on the host-level view


def layout(**_: Any) -> html.Div:
    return html.Div([
        html.Div([
            html.Label(["communicator", dcc.Dropdown(id=ids.TOPO_COMM, clearable=False)], className="ctl wide"),
            html.Label(["view", dcc.RadioItems(id=ids.TOPO_VIEW, inline=True, value=None, options=[
                {"label": "ring", "value": "ring"}, {"label": "tree", "value": "tree"},
                {"label": "hosts", "value": "hosts"}])], className="ctl"),
            html.Label(["channel", dcc.Dropdown(id=ids.TOPO_CHANNEL, clearable=False, placeholder="all channels")], className="ctl"),
        ], className="controls", id="topo-controls"),
        html.Div(id=ids.TOPO_INFO),
        dcc.Graph(id=ids.TOPO_GRAPH, config={"displaylogo": False}),
    ])


def comm_options(rs: RunStore, key: str | None) -> tuple[list[dict[str, Any]], Any, Any]:
    """(communicator options, default communicator, default view)."""
    entry = rs.get(key)
    if entry is None or not entry.analysis.run.communicators:
        return [], None, "ring"
    comms = entry.analysis.run.communicators
    opts = [{"label": f"{c.id} ({c.nranks} ranks, {', '.join(c.transports) or 'transport ?'})", "value": c.id}
            for c in comms]
    first = max(comms, key=lambda c: c.nranks)
    return opts, first.id, ("hosts" if first.nranks > HOST_VIEW_ABOVE else "ring")


def channel_options(rs: RunStore, key: str | None, comm_id: str | None, view: str | None) -> tuple[list, Any]:
    entry = rs.get(key)
    comm = next((c for c in entry.analysis.run.communicators if c.id == comm_id), None) if entry else None
    if comm is None or view == "hosts":
        return [], None
    chans = sorted(comm.trees if view == "tree" else comm.rings)
    return [{"label": str(c), "value": c} for c in chans], (chans[0] if chans else None)


def figure(rs: RunStore, key: str | None, comm_id: str | None, view: str | None, channel: int | None) -> tuple[go.Figure, Any]:
    entry = rs.get(key)
    if entry is None:
        return figures.empty_figure("no run loaded"), not_ready(rs, key)
    run = entry.analysis.run
    comm = next((c for c in run.communicators if c.id == comm_id), None)
    if comm is None and not run.communicators:
        return figures.empty_figure("no NCCL communicator in the inputs", height=160), no_topology(entry)
    if comm is None:
        return figures.empty_figure("choose a communicator"), None
    hl = tuple(entry.analysis.decision.culprit_ranks)
    procs = run.job.processes
    fig = entry.cached(("topo", comm.id, view, channel), lambda: (
        figures.host_figure(comm, procs, hl) if view == "hosts" else
        figures.tree_figure(comm, procs, channel, hl) if view == "tree" else
        figures.ring_figure(comm, procs, channel, hl)))
    info = html.Div(f"{comm.nranks} ranks, {comm.n_channels or '?'} channels, {len(comm.unique_rings())} distinct "
                    f"ring order(s), {len(comm.unique_trees())} distinct tree(s); transports: "
                    f"{', '.join(comm.transports) or '?'}" + (f"; parent {comm.parent}" if comm.parent else "")
                    + ("; the culprit in red, its ring and tree edges dashed red" if hl else ""), className="muted")
    return fig, info


def no_topology(entry: Entry) -> html.Div:
    """What a run without NCCL communicators can say, and how to get the topology."""
    from ncclscope.metrics.records import pg_choices

    run = entry.analysis.run
    pgs = [p for p in pg_choices(run.collectives) if not p.endswith(":p2p")]
    ranks = run.ranks()
    return html.Div([
        html.P("This run has no NCCL communicator: it ran on gloo (CPU), or its NCCL logs are not among the inputs. "
               "Rings, trees and the transport of each link come from NCCL's INFO lines: run the job under "
               "'ncclscope run' (it sets NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH), or set them "
               "yourself and add the NCCL_DEBUG_FILE logs to the inputs."),
        html.P(f"What is known: {len(ranks)} rank(s)" + (f", process group(s) {', '.join(pgs[:12])}" if pgs else "")
               + " (see the Timeline)."),
    ], className="empty-why", id="topo-empty")


@callback(Output(ids.TOPO_COMM, "options"), Output(ids.TOPO_COMM, "value"), Output(ids.TOPO_VIEW, "value"),
          Output("topo-controls", "style"), Input(ids.RUN_KEY, "data"))
def _comms(key: str | None) -> tuple[Any, Any, Any, Any]:
    opts, first, view = comm_options(current(), key)
    return opts, first, view, ({} if opts else {"display": "none"})


@callback(Output(ids.TOPO_CHANNEL, "options"), Output(ids.TOPO_CHANNEL, "value"), Output(ids.TOPO_CHANNEL, "disabled"),
          Input(ids.RUN_KEY, "data"), Input(ids.TOPO_COMM, "value"), Input(ids.TOPO_VIEW, "value"))
def _channels(key: str | None, comm_id: str | None, view: str | None) -> tuple[Any, Any, bool]:
    opts, value = channel_options(current(), key, comm_id, view)
    return opts, value, not opts  # the hosts view sums every channel: no empty list to choose from


@callback(Output(ids.TOPO_GRAPH, "figure"), Output(ids.TOPO_INFO, "children"),
          Input(ids.RUN_KEY, "data"), Input(ids.TOPO_COMM, "value"), Input(ids.TOPO_VIEW, "value"),
          Input(ids.TOPO_CHANNEL, "value"))
def _figure(key: str | None, comm_id: str | None, view: str | None, channel: int | None) -> tuple[Any, Any]:
    return figure(current(), key, comm_id, view, channel)
