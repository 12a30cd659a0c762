"""Topology figures, pure (communicator and processes in, ``go.Figure`` out): a channel's ring laid
out as a ring (arcs with arrows, so 2 ranks show both directions), a tree top-down by depth, and
hosts with the edges between them. Ranks of one host share a colour, the culprit is red and the
ring / tree edges that touch it are drawn red and dashed (the stuck edge). Readable at 2 to 1,024
ranks: labels shrink to rank numbers above 16 ranks and disappear above 64 (hover names them)."""
from __future__ import annotations

import math
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from ncclscope.metrics.busbw import transport_class
from ncclscope.model import Communicator, Process

from .base import NODE_COLOR, STUCK_COLOR, TRANSPORT_COLORS, empty_figure

FULL_LABELS = 16  # up to this many ranks, nodes carry "r<rank> host/GPU<dev>"
LABEL_LIMIT = 64  # above this many ranks, nodes carry no text (hover still names them)
HOST_PALETTE = ["#4c72b0", "#55a868", "#8172b2", "#ccb974", "#64b5cd", "#8c8c8c", "#dd8452", "#937860"]


def rank_labels(comm: Communicator, processes: Iterable[Process]) -> dict[int, str]:
    """comm rank -> ``r<global> host/GPU<dev>`` (what is known of it)."""
    by_rank = {p.rank: p for p in processes if p.rank is not None}
    out = {}
    for cr, gr in comm.members.items():
        p = by_rank.get(gr)
        where = f" {p.host}/GPU{p.cuda_dev}" if p is not None and p.cuda_dev is not None else (
            f" {p.host}" if p is not None else "")
        out[cr] = f"r{gr}{where}"
    return out


def rank_hosts(comm: Communicator, processes: Iterable[Process]) -> dict[int, str]:
    by_rank = {p.rank: p.host for p in processes if p.rank is not None}
    return {cr: by_rank.get(gr, "?") for cr, gr in comm.members.items()}


def _edge_transports(comm: Communicator) -> dict[tuple[int, int, int], str]:
    """(channel, src, dst) -> transport class, from the Connection lines."""
    return {(c.channel, c.src, c.dst): transport_class(c.transport) for c in comm.connections}


def _edge_class(conn: dict[tuple[int, int, int], str], pair_any: dict[tuple[int, int], str], channel: int,
                a: int, b: int) -> str:
    return conn.get((channel, a, b)) or conn.get((channel, b, a)) or pair_any.get((a, b)) or pair_any.get(
        (b, a)) or "unknown"


def _pair_any(conn: dict[tuple[int, int, int], str]) -> dict[tuple[int, int], str]:
    out: dict[tuple[int, int], str] = {}
    for (_, s, d), t in conn.items():
        out.setdefault((s, d), t)
    return out


def _arc(p: tuple[float, float], q: tuple[float, float], bend: float, k: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """Points of a quadratic curve from p to q bowed by ``bend`` x its length to the left of p -> q."""
    (x0, y0), (x1, y1) = p, q
    mx, my = (x0 + x1) / 2 - bend * (y1 - y0), (y0 + y1) / 2 + bend * (x1 - x0)
    t = np.linspace(0.0, 1.0, k)
    return (1 - t) ** 2 * x0 + 2 * (1 - t) * t * mx + t ** 2 * x1, (1 - t) ** 2 * y0 + 2 * (1 - t) * t * my + t ** 2 * y1


def _edge_traces(fig: go.Figure, pos: dict[int, tuple[float, float]], edges: Sequence[tuple[int, int, str]],
                 highlight: set[int], bend: float, arrows: bool) -> None:
    """One trace per transport class (NaN-separated segments); the culprit's edges again on top, red, dashed."""
    big = len(pos) > LABEL_LIMIT
    trace = go.Scattergl if big else go.Scatter
    groups: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for a, b, cls in edges:
        if a in pos and b in pos:
            groups[cls].append((a, b))
            if a in highlight or b in highlight:
                groups["~stuck"].append((a, b))
    for cls, pairs in sorted(groups.items()):
        stuck = cls == "~stuck"
        xs: list[np.ndarray] = []
        ys: list[np.ndarray] = []
        for a, b in pairs:
            x, y = _arc(pos[a], pos[b], bend if not big else 0.0, 9 if not big else 2)
            xs += [x, np.array([np.nan])]
            ys += [y, np.array([np.nan])]
        color = STUCK_COLOR if stuck else TRANSPORT_COLORS.get(cls, "#7f7f7f")
        name = f"edges of the culprit ({len(pairs)})" if stuck else f"{cls} ({len(pairs)})"
        width = (2 if big else 3.5) if stuck else (1 if big else 2.5)
        fig.add_trace(trace(x=np.concatenate(xs), y=np.concatenate(ys), mode="lines", name=name, hoverinfo="skip",
                            line={"color": color, "width": width, **({"dash": "dash"} if stuck else {})}))
        if arrows and not big and not stuck:
            for a, b in pairs:
                x, y = _arc(pos[a], pos[b], bend)
                fig.add_annotation(x=x[6], y=y[6], ax=x[4], ay=y[4], xref="x", yref="y", axref="x", ayref="y",
                                   showarrow=True, arrowhead=2, arrowwidth=1.5, arrowcolor=color, text="")


def _edges_figure(pos: dict[int, tuple[float, float]], edges: Sequence[tuple[int, int, str]], labels: dict[int, str],
                  hosts: dict[int, str], highlight: set[int], title: str, arrows: bool, bend: float = 0.0) -> go.Figure:
    fig = go.Figure()
    _edge_traces(fig, pos, edges, highlight, bend, arrows)
    nodes = sorted(pos)
    n = len(nodes)
    host_list = sorted({hosts.get(r, "?") for r in nodes})
    hcolor = {h: HOST_PALETTE[i % len(HOST_PALETTE)] for i, h in enumerate(host_list)} if len(host_list) > 1 else {}
    colors = [STUCK_COLOR if r in highlight else hcolor.get(hosts.get(r, "?"), NODE_COLOR) for r in nodes]
    text = [labels.get(r, str(r)) if n <= FULL_LABELS else labels.get(r, str(r)).split()[0][1:] for r in nodes]
    trace = go.Scattergl if n > LABEL_LIMIT else go.Scatter
    fig.add_trace(trace(
        x=[pos[r][0] for r in nodes], y=[pos[r][1] for r in nodes],
        mode="markers" if n > LABEL_LIMIT else "markers+text", name="ranks", showlegend=False,
        text=text, hovertext=[f"{labels.get(r, r)}" + (" (culprit)" if r in highlight else "") for r in nodes],
        hoverinfo="text", textposition="top center", textfont={"size": 12 if n <= FULL_LABELS else 9},
        marker={"size": 5 if n > LABEL_LIMIT else (16 if n <= FULL_LABELS else 9),
                "color": colors, "line": {"width": 1, "color": "white"}},
    ))
    if hcolor and len(host_list) <= 32:
        for h in host_list:  # one legend entry per host: ranks of one host share a colour
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"host {h}",
                                     marker={"size": 9, "color": hcolor[h]}, legendgroup="hosts"))
    fig.update_layout(title=title, template="plotly_white", height=560, showlegend=True,
                      xaxis={"visible": False}, yaxis={"visible": False, "scaleanchor": "x"},
                      margin={"l": 10, "r": 10, "t": 50, "b": 10}, legend={"title": "edges and hosts"})
    return fig


def ring_figure(comm: Communicator, processes: Iterable[Process], channel: int | None = None,
                highlight: Iterable[int] = ()) -> go.Figure:
    """The ring of one channel: ranks on a circle in ring order, arcs coloured by transport."""
    if not comm.rings:
        return empty_figure("no ring order in the logs: NCCL prints it with NCCL_DEBUG=INFO and "
                            "NCCL_DEBUG_SUBSYS including INIT or GRAPH (ncclscope run sets both)")
    channel = channel if channel in comm.rings else min(comm.rings)
    order = list(comm.rings[channel])
    n = len(order)
    # ring order clockwise from the top, so hosts (consecutive in NCCL's rings) sit together
    pos = {r: (math.sin(2 * math.pi * i / n), math.cos(2 * math.pi * i / n)) for i, r in enumerate(order)}
    conn = _edge_transports(comm)
    pair_any = _pair_any(conn)
    edges = [(a, b, _edge_class(conn, pair_any, channel, a, b)) for a, b in zip(order, order[1:] + order[:1])
             if a != b]
    hl = {cr for cr, gr in comm.members.items() if gr in set(highlight)}
    return _edges_figure(pos, edges, rank_labels(comm, processes), rank_hosts(comm, processes), hl,
                         f"ring, channel {channel} of {len(comm.rings)} ({n} ranks)", arrows=True,
                         bend=0.25 if n == 2 else 0.08)


def tree_figure(comm: Communicator, processes: Iterable[Process], channel: int | None = None,
                highlight: Iterable[int] = ()) -> go.Figure:
    """The tree of one channel, drawn top-down by depth; edges child -> parent coloured by transport."""
    if not comm.trees:
        return empty_figure("no tree in the logs for this communicator: NCCL prints trees with "
                            "NCCL_DEBUG_SUBSYS including INIT or GRAPH on multi-node jobs")
    channel = channel if channel in comm.trees else min(comm.trees)
    parents = comm.trees[channel]
    children: dict[int, list[int]] = defaultdict(list)
    for c, p in parents.items():
        if p >= 0:
            children[p].append(c)
    roots = sorted(r for r in parents if parents[r] < 0 or parents[r] not in parents) or sorted(parents)[:1]
    depth: dict[int, int] = {}
    queue = deque((r, 0) for r in roots)
    while queue:
        r, d = queue.popleft()
        if r in depth:
            continue
        depth[r] = d
        for c in sorted(children.get(r, ())):
            queue.append((c, d + 1))
    levels: dict[int, list[int]] = defaultdict(list)
    for r, d in sorted(depth.items(), key=lambda kv: (kv[1], kv[0])):
        levels[d].append(r)
    pos: dict[int, tuple[float, float]] = {}
    for d in sorted(levels):
        # children under their parents (ordered by the parent's place), so edges do not cross the drawing
        members = sorted(levels[d], key=lambda r: (pos.get(parents.get(r, -1), (0.0, 0.0))[0], r))
        for i, r in enumerate(members):
            pos[r] = ((i + 1) / (len(members) + 1) * 2 - 1, -d * 0.5)
    conn = _edge_transports(comm)
    pair_any = _pair_any(conn)
    edges = [(c, p, _edge_class(conn, pair_any, channel, c, p)) for c, p in parents.items() if p >= 0]
    hl = {cr for cr, gr in comm.members.items() if gr in set(highlight)}
    fig = _edges_figure(pos, edges, rank_labels(comm, processes), rank_hosts(comm, processes), hl,
                        f"tree, channel {channel} of {len(comm.trees)}", arrows=True)
    fig.update_layout(yaxis={"visible": False, "scaleanchor": None})
    return fig


def host_edges(comm: Communicator, processes: Iterable[Process]) -> pd.DataFrame:
    """Every ring and tree edge of every channel, aggregated to (host a, host b, transport) -> count."""
    hosts = rank_hosts(comm, processes)
    conn = _edge_transports(comm)
    pair_any = _pair_any(conn)
    counts: Counter[tuple[str, str, str]] = Counter()
    for ch, order in comm.rings.items():
        o = list(order)
        for a, b in zip(o, o[1:] + o[:1]):
            if a == b:
                continue
            ha, hb = sorted((hosts.get(a, "?"), hosts.get(b, "?")))
            counts[(ha, hb, _edge_class(conn, pair_any, ch, a, b))] += 1
    for ch, parents in comm.trees.items():
        for c, p in parents.items():
            if p < 0:
                continue
            ha, hb = sorted((hosts.get(c, "?"), hosts.get(p, "?")))
            counts[(ha, hb, _edge_class(conn, pair_any, ch, c, p))] += 1
    rows = [{"host_a": a, "host_b": b, "transport": t, "edges": n} for (a, b, t), n in sorted(counts.items())]
    return pd.DataFrame(rows, columns=["host_a", "host_b", "transport", "edges"])


def host_figure(comm: Communicator, processes: Iterable[Process], highlight: Iterable[int] = ()) -> go.Figure:
    """Hosts on a circle; lines between hosts weighted by ring/tree edge counts, per transport.

    Edges inside one host are summed into the node's hover text. Readable at 1,024 ranks / 128 hosts.
    """
    hosts_of = rank_hosts(comm, processes)
    ranks_per_host = Counter(hosts_of.values())
    edges = host_edges(comm, processes)
    hosts = sorted(ranks_per_host)
    n = len(hosts)
    pos = {h: (math.cos(2 * math.pi * i / max(n, 1)), math.sin(2 * math.pi * i / max(n, 1))) for i, h in
           enumerate(hosts)}
    if n == 1:
        pos = {hosts[0]: (0.0, 0.0)}
    hl_hosts = {hosts_of[cr] for cr, gr in comm.members.items() if gr in set(highlight) and cr in hosts_of}
    fig = go.Figure()
    inter = edges[edges.host_a != edges.host_b]
    for t, grp in inter.groupby("transport", sort=True):
        mx = max(grp.edges.max(), 1)
        xs: list[float | None] = []
        ys: list[float | None] = []
        for a, b, k in zip(grp.host_a, grp.host_b, grp.edges, strict=False):
            xs += [pos[a][0], pos[b][0], None]
            ys += [pos[a][1], pos[b][1], None]
        known = t != "unknown"  # edges no Connection line names (trees, mostly): faint, so the links stay readable
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=f"{t} ({int(grp.edges.sum())} edges)",
                                 line={"color": TRANSPORT_COLORS.get(t, "#7f7f7f") if known else "#d9d9d9",
                                       "width": (1 + 5 * float(grp.edges.mean()) / mx) if known else 0.6},
                                 opacity=1.0 if known else 0.5, hoverinfo="skip"))
    intra = edges[edges.host_a == edges.host_b].groupby("host_a").apply(
        lambda g: ", ".join(f"{t}: {k}" for t, k in zip(g.transport, g.edges, strict=False)),
        include_groups=False) if len(edges) else pd.Series(dtype=str)
    text = [f"{h}<br>{ranks_per_host[h]} ranks<br>inside: {intra.get(h, '-')}" for h in hosts]
    fig.add_trace(go.Scatter(
        x=[pos[h][0] for h in hosts], y=[pos[h][1] for h in hosts], mode="markers+text" if n <= 64 else "markers",
        text=[f"{h} ({ranks_per_host[h]})" for h in hosts], hovertext=text, hoverinfo="text",
        textposition="top center", showlegend=False,
        marker={"size": [10 + min(30, 2 * math.sqrt(ranks_per_host[h])) for h in hosts],
                "color": [STUCK_COLOR if h in hl_hosts else NODE_COLOR for h in hosts]},
    ))
    fig.update_layout(title=f"hosts: {n}, ranks: {len(hosts_of)} (all channels, rings and trees)",
                      template="plotly_white", height=560, xaxis={"visible": False},
                      yaxis={"visible": False, "scaleanchor": "x"}, margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      legend={"title": "transport between hosts"})
    return fig
