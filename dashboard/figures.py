"""Pure figure functions: model objects or DataFrames in, ``go.Figure`` out. No I/O, no Dash.

Large inputs are handled with WebGL traces (``Scattergl``), one trace per category with ``None``
separators between segments, and numpy instead of Python loops over rows, so a 1,024-rank job
with 100k+ collectives builds each figure in well under a second.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ncclscope.model import Communicator, Process, Stuck
from ncclscope.perf.bw import busbw_factor

TRANSPORT_COLORS = {
    "P2P/NVLink": "#2ca02c",
    "SHM": "#1f77b4",
    "NET/IB": "#9467bd",
    "NET/Socket": "#ff7f0e",
    "NET": "#8c564b",
    "NVLS/CollNet": "#17becf",
    "unknown": "#7f7f7f",
}
OP_COLORS = {
    "allreduce": "#1f77b4", "allgather": "#2ca02c", "reducescatter": "#ff7f0e", "broadcast": "#9467bd",
    "reduce": "#8c564b", "alltoall": "#e377c2", "send": "#bcbd22", "recv": "#17becf", "barrier": "#7f7f7f",
    "allreducebarrier": "#7f7f7f",
}
STUCK_COLOR = "#d62728"
SOURCE_PRIORITY = {"fr": 0, "hook": 1, "completion_hook": 2, "nccl": 3}
SIZE_EDGES = [1024, 64 * 1024, 1024**2, 16 * 1024**2, 256 * 1024**2]
SIZE_LABELS = ["< 1 KiB", "1-64 KiB", "64 KiB-1 MiB", "1-16 MiB", "16-256 MiB", ">= 256 MiB"]
BUSBW_OPS = {  # collectives with an nccl-tests busbw factor (perf.bw.busbw_factor), by the name to ask it for
    "allreduce": "all_reduce", "allreducebarrier": "all_reduce", "allgather": "all_gather",
    "reducescatter": "reduce_scatter", "alltoall": "all_to_all", "broadcast": "broadcast", "reduce": "reduce",
}
LABEL_LIMIT = 64  # above this many ranks, nodes carry no text (hover still names them)


def warm_up() -> None:
    """Build one tiny figure of each trace type: plotly's first figure in a process costs ~1 s of
    imports, paid here at start-up instead of by the first page a user opens."""
    fig = go.Figure([go.Scatter(x=[0], y=[0]), go.Scattergl(x=[0], y=[0]), go.Bar(x=[1], y=["a"], orientation="h"),
                     go.Heatmap(z=[[0.0]])])
    fig.add_annotation(x=0, y=0, text="")
    fig.add_vrect(x0=0, x1=1)
    fig.update_layout(template="plotly_white")
    fig.to_json()


# -- helpers --------------------------------------------------------------------------------------
def empty_figure(message: str, height: int = 260) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font={"size": 14, "color": "#555"})
    fig.update_layout(height=height, xaxis={"visible": False}, yaxis={"visible": False},
                      margin={"l": 20, "r": 20, "t": 20, "b": 20}, template="plotly_white")
    return fig


def transport_class(transport: str | None) -> str:
    """NCCL's transport string (``P2P/CUMEM``, ``SHM/direct``, ``NET/IB/0/GDRDMA``) -> a legend class."""
    t = (transport or "").upper()
    if t.startswith("P2P"):
        return "P2P/NVLink"
    if t.startswith("SHM"):
        return "SHM"
    if t.startswith(("NET/IB", "IB")) or "GDRDMA" in t:
        return "NET/IB"
    if t.startswith(("NET/SOCKET", "SOCKET")):
        return "NET/Socket"
    if t.startswith("NET"):
        return "NET"
    if t.startswith(("NVLS", "COLLNET")):
        return "NVLS/CollNet"
    return "unknown"


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


def _edges_figure(pos: dict[int, tuple[float, float]], edges: Sequence[tuple[int, int, str]],
                  labels: dict[int, str], highlight: set[int], title: str, arrows: bool) -> go.Figure:
    fig = go.Figure()
    by_class: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for a, b, cls in edges:
        if a in pos and b in pos:
            by_class[cls].append((a, b))
    big = len(pos) > LABEL_LIMIT
    trace = go.Scattergl if big else go.Scatter
    for cls, pairs in sorted(by_class.items()):
        xs = np.empty(len(pairs) * 3)
        ys = np.empty(len(pairs) * 3)
        xs[2::3] = np.nan
        ys[2::3] = np.nan
        xs[0::3] = [pos[a][0] for a, _ in pairs]
        ys[0::3] = [pos[a][1] for a, _ in pairs]
        xs[1::3] = [pos[b][0] for _, b in pairs]
        ys[1::3] = [pos[b][1] for _, b in pairs]
        fig.add_trace(trace(x=xs, y=ys, mode="lines", name=f"{cls} ({len(pairs)})", hoverinfo="skip",
                            line={"color": TRANSPORT_COLORS.get(cls, "#7f7f7f"), "width": 1 if big else 2.5}))
        if arrows and not big:
            for a, b in pairs:
                (x0, y0), (x1, y1) = pos[a], pos[b]
                fig.add_annotation(x=x0 + 0.8 * (x1 - x0), y=y0 + 0.8 * (y1 - y0), ax=x0 + 0.6 * (x1 - x0),
                                   ay=y0 + 0.6 * (y1 - y0), xref="x", yref="y", axref="x", ayref="y",
                                   showarrow=True, arrowhead=2, arrowwidth=1.5,
                                   arrowcolor=TRANSPORT_COLORS.get(cls, "#7f7f7f"), text="")
    nodes = sorted(pos)
    colors = [STUCK_COLOR if n in highlight else "#333" for n in nodes]
    fig.add_trace(trace(
        x=[pos[n][0] for n in nodes], y=[pos[n][1] for n in nodes],
        mode="markers" if big else "markers+text", name="ranks", showlegend=False,
        text=[labels.get(n, str(n)) for n in nodes], textposition="top center", hoverinfo="text",
        marker={"size": 5 if big else 16, "color": colors, "line": {"width": 1, "color": "white"}},
    ))
    fig.update_layout(title=title, template="plotly_white", height=560, showlegend=True,
                      xaxis={"visible": False}, yaxis={"visible": False, "scaleanchor": "x"},
                      margin={"l": 10, "r": 10, "t": 50, "b": 10}, legend={"title": "transport"})
    return fig


# -- topology -------------------------------------------------------------------------------------
def ring_figure(comm: Communicator, processes: Iterable[Process], channel: int | None = None,
                highlight: Iterable[int] = ()) -> go.Figure:
    """The ring of one channel: ranks on a circle in ring order, edges coloured by transport."""
    if not comm.rings:
        return empty_figure("no ring order in the logs (NCCL_DEBUG_SUBSYS needs INIT or GRAPH)")
    channel = channel if channel in comm.rings else min(comm.rings)
    order = list(comm.rings[channel])
    n = len(order)
    pos = {r: (math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n)) for i, r in enumerate(order)}
    conn = _edge_transports(comm)
    pair_any = _pair_any(conn)
    edges = [(a, b, _edge_class(conn, pair_any, channel, a, b)) for a, b in zip(order, order[1:] + order[:1])]
    if n == 2:
        edges = edges[:1]
    labels = rank_labels(comm, processes)
    hl = {cr for cr, gr in comm.members.items() if gr in set(highlight)}
    return _edges_figure(pos, edges, labels, hl, f"ring, channel {channel} of {len(comm.rings)} ({n} ranks)",
                         arrows=True)


def tree_figure(comm: Communicator, processes: Iterable[Process], channel: int | None = None,
                highlight: Iterable[int] = ()) -> go.Figure:
    """The tree of one channel, drawn top-down by depth; edges child -> parent coloured by transport."""
    if not comm.trees:
        return empty_figure("no tree in the logs for this communicator")
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
    pos = {}
    for d, members in levels.items():
        for i, r in enumerate(members):
            pos[r] = ((i + 1) / (len(members) + 1) * 2 - 1, -d * 0.5)
    conn = _edge_transports(comm)
    pair_any = _pair_any(conn)
    edges = [(c, p, _edge_class(conn, pair_any, channel, c, p)) for c, p in parents.items() if p >= 0]
    labels = rank_labels(comm, processes)
    hl = {cr for cr, gr in comm.members.items() if gr in set(highlight)}
    fig = _edges_figure(pos, edges, labels, hl, f"tree, channel {channel} of {len(comm.trees)}", arrows=True)
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
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=f"{t} ({int(grp.edges.sum())} edges)",
                                 line={"color": TRANSPORT_COLORS.get(t, "#7f7f7f"),
                                       "width": 1 + 5 * float(grp.edges.mean()) / mx},
                                 hoverinfo="skip"))
    intra = edges[edges.host_a == edges.host_b].groupby("host_a").apply(
        lambda g: ", ".join(f"{t}: {k}" for t, k in zip(g.transport, g.edges, strict=False)),
        include_groups=False) if len(edges) else pd.Series(dtype=str)
    text = [f"{h}<br>{ranks_per_host[h]} ranks<br>inside: {intra.get(h, '-')}" for h in hosts]
    fig.add_trace(go.Scatter(
        x=[pos[h][0] for h in hosts], y=[pos[h][1] for h in hosts], mode="markers+text" if n <= 64 else "markers",
        text=[f"{h} ({ranks_per_host[h]})" for h in hosts], hovertext=text, hoverinfo="text",
        textposition="top center", showlegend=False,
        marker={"size": [10 + min(30, 2 * math.sqrt(ranks_per_host[h])) for h in hosts],
                "color": [STUCK_COLOR if h in hl_hosts else "#333" for h in hosts]},
    ))
    fig.update_layout(title=f"hosts: {n}, ranks: {len(hosts_of)} (all channels, rings and trees)",
                      template="plotly_white", height=560, xaxis={"visible": False},
                      yaxis={"visible": False, "scaleanchor": "x"}, margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      legend={"title": "transport between hosts"})
    return fig


# -- collectives ----------------------------------------------------------------------------------
def strs(s: pd.Series) -> np.ndarray:
    """A column as an object array of str, fast for categoricals (no per-row string conversion)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = np.asarray([str(c) for c in s.cat.categories] + [""], dtype=object)
        return cats[s.cat.codes.to_numpy()]  # code -1 (missing) picks the trailing ""
    return np.asarray([str(v) for v in s.to_numpy()], dtype=object)


def best_source(df: pd.DataFrame) -> pd.DataFrame:
    """One record per collective: for each (rank, pg), keep the rows of its best source (fr > hook > nccl)."""
    if not len(df):
        return df
    if df["source"].nunique() <= 1:
        return df.drop_duplicates(["rank", "pg", "seq"], keep="last")
    pri = pd.Series(strs(df["source"])).map(SOURCE_PRIORITY).fillna(9).to_numpy()
    best = pd.Series(pri, index=df.index).groupby([df["rank"], df["pg"]], observed=True).transform("min").to_numpy()
    out = df[pri == best]
    return out.drop_duplicates(["rank", "pg", "seq"], keep="last")


def pg_choices(df: pd.DataFrame) -> list[str]:
    """Process groups by number of rows, largest first (torch pgs before NCCL-only comms)."""
    if not len(df):
        return []
    vc = df["pg"].value_counts()
    counts = {str(k): int(v) for k, v in vc.items() if v > 0}
    return sorted(counts, key=lambda p: (p.startswith("nccl:"), -counts[p], p))


def _arrival(df: pd.DataFrame) -> np.ndarray:
    t = df["t_started"].to_numpy(dtype=float)
    c = df["t_created"].to_numpy(dtype=float)
    return np.where(np.isfinite(t), t, c)


def timeline_figure(df: pd.DataFrame, pg: str | None, stuck: Stuck | None = None, axis: str = "seq",
                    ranks: Sequence[int] = (), max_points: int = 500_000) -> go.Figure:
    """Per-rank swimlanes of one process group's collectives, by sequence number or by time.

    ``df`` is the collectives table (best_source applied or not). The stuck collective is marked
    on every rank of ``ranks`` (and every rank in the table), whether or not the rank reached it.
    """
    view = best_source(df[(df["pg"] == pg).to_numpy()]) if (pg is not None and len(df)) else df.iloc[0:0]
    lanes = sorted(set(view["rank"].astype(int).tolist()) | set(ranks))
    if not len(view):
        return empty_figure(f"no collectives recorded for process group {pg}")
    truncated = len(view) > max_points
    if truncated:
        view = view.sort_values("seq").iloc[-max_points:]
    fig = go.Figure()
    ops = strs(view["op"])
    rank = view["rank"].to_numpy(dtype=float)
    done = strs(view["state"]) == "completed"
    if axis == "time":
        start = _arrival(view)
        end = view["t_completed"].to_numpy(dtype=float)
        dur = view["duration_ms"].to_numpy(dtype=float) / 1e3
        end = np.where(np.isfinite(end), end, start + np.where(np.isfinite(dur), dur, 0))
        ok = np.isfinite(start)
        if not ok.any():
            return empty_figure("this process group has no timestamps; use the sequence-number view")
        t0 = np.nanmin(start[ok])
        for op in sorted(set(ops[ok])):
            m = ok & (ops == op)
            k = int(m.sum())
            xs = np.full(k * 3, np.nan)
            ys = np.full(k * 3, np.nan)
            xs[0::3] = start[m] - t0
            xs[1::3] = np.maximum(end[m], start[m] + 1e-4) - t0
            ys[0::3] = rank[m]
            ys[1::3] = rank[m]
            fig.add_trace(go.Scattergl(x=xs.astype(np.float32), y=ys.astype(np.float32), mode="lines+markers",
                                       name=op, hoverinfo="skip",
                                       line={"color": OP_COLORS.get(op, "#444"), "width": 6},
                                       marker={"size": 3, "color": OP_COLORS.get(op, "#444")}))
        xtitle = "seconds since the first collective"
    else:
        seq = view["seq"].to_numpy(dtype=float)
        for op in sorted(set(ops)):
            m = (ops == op) & done
            if m.any():
                fig.add_trace(go.Scattergl(x=seq[m].astype(np.int32), y=rank[m].astype(np.int32), mode="markers", name=op,
                                           hovertemplate=f"{op} #%{{x}}<br>rank %{{y}}<extra></extra>",
                                           marker={"symbol": "square", "size": 6, "color": OP_COLORS.get(op, "#444")}))
        m = ~done
        if m.any():
            fig.add_trace(go.Scattergl(x=seq[m], y=rank[m], mode="markers", name="not completed",
                                       hovertemplate="#%{x} (not completed)<br>rank %{y}<extra></extra>",
                                       marker={"symbol": "square-open", "size": 8, "color": "#000"}))
        xtitle = "collective sequence number"
    if stuck is not None and str(stuck.pg) == str(pg):
        _mark_stuck(fig, view, stuck, lanes, axis)
    fig.update_layout(template="plotly_white", height=min(900, 220 + 18 * len(lanes)) if len(lanes) < 40 else 700,
                      xaxis={"title": xtitle},
                      yaxis={"title": "rank", "autorange": "reversed", **({"dtick": 1} if len(lanes) <= 40 else {})},
                      title=f"process group {pg}: {len(view):,} collectives on {len(lanes)} ranks"
                      + (f" (last {max_points:,} shown)" if truncated else ""),
                      margin={"l": 60, "r": 20, "t": 50, "b": 50}, dragmode="zoom", legend={"title": "op"})
    return fig


def _mark_stuck(fig: go.Figure, view: pd.DataFrame, stuck: Stuck, lanes: list[int], axis: str) -> None:
    label = f"stuck: {stuck.op or 'collective'} #{stuck.seq}"
    if axis == "time":
        arrival = _arrival(view)
        t0 = np.nanmin(arrival)
        at = view["seq"].to_numpy() == stuck.seq
        xs, ys, texts = [], [], []
        for r in lanes:
            mr = view["rank"].to_numpy() == r
            hit = arrival[mr & at]
            if len(hit) and np.isfinite(hit[0]):
                xs.append(hit[0] - t0)
                texts.append(f"rank {r} entered #{stuck.seq}")
            else:
                last = np.nanmax(np.where(mr, view["t_completed"].to_numpy(dtype=float), np.nan)) if mr.any() else np.nan
                if not np.isfinite(last):
                    last = np.nanmax(np.where(mr, arrival, np.nan)) if mr.any() else np.nan
                if not np.isfinite(last):
                    continue
                xs.append(last - t0)
                texts.append(f"rank {r} never entered #{stuck.seq} (last seen here)")
            ys.append(r)
        fig.add_trace(go.Scattergl(x=xs, y=ys, mode="markers", name=label, text=texts,
                                   hovertemplate="%{text}<extra></extra>",
                                   marker={"symbol": "x", "size": 14, "color": STUCK_COLOR}))
        return
    fig.add_vrect(x0=stuck.seq - 0.5, x1=stuck.seq + 0.5, fillcolor=STUCK_COLOR, opacity=0.15, line_width=0)
    fig.add_trace(go.Scattergl(x=[stuck.seq] * len(lanes), y=lanes, mode="markers", name=label,
                               hovertemplate=f"{label}<br>rank %{{y}}<extra></extra>",
                               marker={"symbol": "x", "size": 12, "color": STUCK_COLOR}))


def size_bucket(nbytes: np.ndarray) -> np.ndarray:
    idx = np.digitize(np.nan_to_num(nbytes, nan=0.0), SIZE_EDGES)
    return np.asarray(SIZE_LABELS, dtype=object)[idx]


def time_share(df: pd.DataFrame, by: str) -> pd.DataFrame:
    """Total collective time (ms) and its share, grouped by ``op``, ``size`` (bucket) or ``pg``."""
    view = best_source(df)
    dur = view["duration_ms"].to_numpy(dtype=float) if len(view) else np.array([])
    ok = np.isfinite(dur) & (dur > 0)
    if not ok.any():
        return pd.DataFrame(columns=["group", "ms", "share", "count"])
    view = view[ok]
    if by == "size":
        key = size_bucket(view["bytes"].to_numpy(dtype=float))
    else:
        key = strs(view[by])
    g = pd.DataFrame({"group": key, "ms": dur[ok]}).groupby("group", sort=False)["ms"].agg(["sum", "size"])
    out = pd.DataFrame({"group": g.index, "ms": g["sum"].to_numpy(), "count": g["size"].to_numpy()})
    out["share"] = out["ms"] / out["ms"].sum()
    if by == "size":
        out["order"] = out["group"].map({k: i for i, k in enumerate(SIZE_LABELS)})
        return out.sort_values("order").drop(columns="order").reset_index(drop=True)
    return out.sort_values("ms", ascending=False).reset_index(drop=True)


def time_share_figure(df: pd.DataFrame, by: str = "op") -> go.Figure:
    share = time_share(df, by)
    if not len(share):
        return empty_figure("no collective durations recorded (Flight Recorder or the hook give them)")
    fig = go.Figure(go.Bar(
        x=share["share"] * 100, y=share["group"], orientation="h",
        text=[f"{s * 100:.1f}% ({ms / 1e3:.2f} s, {c:,} calls)" for s, ms, c in
              zip(share["share"], share["ms"], share["count"], strict=False)],
        textposition="auto", marker={"color": "#1f77b4"}))
    names = {"op": "operation", "size": "message size", "pg": "process group"}
    fig.update_layout(template="plotly_white", title=f"share of collective time by {names.get(by, by)}",
                      xaxis={"title": "% of summed collective time"},
                      yaxis={"autorange": "reversed", "type": "category"},
                      height=max(260, 60 + 34 * len(share)), margin={"l": 120, "r": 20, "t": 50, "b": 50})
    return fig


def busbw_frame(df: pd.DataFrame, pg_nranks: dict[str, int], pg_transport: dict[str, str]) -> pd.DataFrame:
    """bytes, duration -> algbw and busbw (GB/s) per completed collective of a known op and size."""
    view = best_source(df)
    if not len(view):
        return pd.DataFrame(columns=["op", "pg", "bytes", "ms", "algbw", "busbw", "transport"])
    b = view["bytes"].to_numpy(dtype=float)
    ms = view["duration_ms"].to_numpy(dtype=float)
    ops = strs(view["op"])
    pgs = strs(view["pg"])
    ok = np.isfinite(b) & (b > 0) & np.isfinite(ms) & (ms > 0) & np.isin(ops, list(BUSBW_OPS))
    if not ok.any():
        return pd.DataFrame(columns=["op", "pg", "bytes", "ms", "algbw", "busbw", "transport"])
    out = pd.DataFrame({"op": ops[ok], "pg": pgs[ok], "bytes": b[ok], "ms": ms[ok]})
    n_default = max(pg_nranks.values(), default=2)
    out["n"] = out["pg"].map(pg_nranks).fillna(n_default).clip(lower=1)
    factor = np.ones(len(out))
    for op, name in BUSBW_OPS.items():
        m = (out["op"] == op).to_numpy()
        if m.any():
            factor[m] = [busbw_factor(name, int(n)) for n in out["n"].to_numpy()[m]]
    out["algbw"] = out["bytes"] / (out["ms"] / 1e3) / 1e9
    out["busbw"] = out["algbw"] * factor
    out["transport"] = out["pg"].map(pg_transport).fillna("unknown")
    return out


def busbw_figure(frame: pd.DataFrame, nccl_tests: Sequence[dict[str, Any]] = (), max_points: int = 30_000) -> go.Figure:
    """busbw against message size, one colour per transport; nccl-tests / ``ncclscope perf`` rows as lines."""
    if not len(frame) and not nccl_tests:
        return empty_figure("no sized, timed collectives to compute bandwidth from")
    fig = go.Figure()
    sampled = len(frame) > max_points
    if sampled:
        frame = frame.sample(max_points, random_state=0)
    symbols = {"allreduce": "circle", "allgather": "triangle-up", "reducescatter": "triangle-down",
               "broadcast": "square", "reduce": "diamond"}
    for (t, op), grp in frame.groupby(["transport", "op"], sort=True):
        fig.add_trace(go.Scattergl(
            x=grp["bytes"].to_numpy(), y=grp["busbw"].to_numpy(), mode="markers", name=f"{op} over {t}",
            hovertemplate=f"{op} over {t}<br>%{{x:.3s}}B<br>busbw %{{y:.2f}} GB/s<extra></extra>",
            marker={"size": 5, "opacity": 0.6, "color": TRANSPORT_COLORS.get(t, "#7f7f7f"),
                    "symbol": symbols.get(op, "circle")}))
    if nccl_tests:
        nt = pd.DataFrame(list(nccl_tests))
        nt = nt[(nt["size"] > 0) & nt["busbw"].notna()]
        for (test, inplace), grp in nt.groupby([nt["test"].fillna("nccl-tests"), nt["in_place"]], sort=True):
            grp = grp.sort_values("size")
            fig.add_trace(go.Scatter(x=grp["size"], y=grp["busbw"], mode="lines+markers",
                                     name=f"{test} {'in' if inplace else 'out-of'}-place (reference)",
                                     line={"dash": "dash" if inplace else "solid", "width": 2}))
    fig.update_layout(template="plotly_white", title="bus bandwidth against message size"
                      + (f" ({max_points:,} collectives sampled)" if sampled else ""),
                      xaxis={"title": "message size (bytes)", "type": "log"},
                      yaxis={"title": "busbw (GB/s)"}, height=460, margin={"l": 60, "r": 20, "t": 50, "b": 50})
    return fig


def wait_matrix(df: pd.DataFrame, pg: str | None, max_steps: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ranks, steps, waiting ms [rank, step]) for one process group.

    With kernel durations (Flight Recorder timing, the hook), a rank's wait at a collective is its
    duration minus the shortest one (the last rank to arrive waits for nobody). Without them, it is
    the last arrival minus its own (arrival = kernel start, else enqueue time). Steps are binned
    (mean) down to ``max_steps`` columns.
    """
    view = best_source(df[(df["pg"] == pg).to_numpy()]) if pg is not None and len(df) else df.iloc[0:0]
    arr = _arrival(view) if len(view) else np.array([])
    ok = np.isfinite(arr)
    if not ok.any():
        return np.array([], dtype=int), np.array([], dtype=int), np.zeros((0, 0))
    dur = view["duration_ms"].to_numpy(dtype=float)
    use_dur = np.isfinite(dur).sum() >= 0.5 * len(view)
    ok = np.isfinite(dur) if use_dur else ok
    if not ok.any():
        return np.array([], dtype=int), np.array([], dtype=int), np.zeros((0, 0))
    ranks_u, r_idx = np.unique(view["rank"].to_numpy()[ok], return_inverse=True)
    seqs_u, s_idx = np.unique(view["seq"].to_numpy()[ok], return_inverse=True)
    a = np.full((len(ranks_u), len(seqs_u)), np.nan)
    with np.errstate(all="ignore"), _quiet():
        if use_dur:
            # the kernel of an early rank runs until the last rank arrives: its extra duration is its wait
            a[r_idx, s_idx] = dur[ok]
            wait = a - np.nanmin(a, axis=0)[None, :]
        else:
            a[r_idx, s_idx] = arr[ok]
            wait = (np.nanmax(a, axis=0)[None, :] - a) * 1e3
    if len(seqs_u) > max_steps:
        bins = np.array_split(np.arange(len(seqs_u)), max_steps)
        with np.errstate(all="ignore"), _quiet():
            wait = np.stack([np.nanmean(wait[:, b], axis=1) for b in bins], axis=1)
        seqs_u = np.array([seqs_u[b[0]] for b in bins])
    return ranks_u, seqs_u, wait


class _quiet:
    def __enter__(self) -> None:
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", category=RuntimeWarning)

    def __exit__(self, etype: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._w.__exit__(etype, value, tb)


def wait_heatmap_figure(ranks: np.ndarray, steps: np.ndarray, wait: np.ndarray, pg: str | None = None) -> go.Figure:
    """Rank x step heat map of waiting time: a straggler is the one dark row among bright ones."""
    if not wait.size:
        return empty_figure("no arrival times to compute waiting from (needs Flight Recorder or hook times)")
    zmax = float(np.nanpercentile(wait, 99)) if np.isfinite(wait).any() else 1.0
    fig = go.Figure(go.Heatmap(
        z=wait.astype(np.float32), x=steps, y=ranks, colorscale="Viridis", zmin=0, zmax=max(zmax, 1e-3),
        colorbar={"title": "wait (ms)"},
        hovertemplate="rank %{y}<br>collective #%{x}<br>waited %{z:.1f} ms<extra></extra>"))
    per_rank = np.nanmean(wait, axis=1) if wait.size else np.array([])
    sub = ""
    if len(per_rank) > 1 and np.isfinite(per_rank).any():
        lo = int(ranks[int(np.nanargmin(per_rank))])
        sub = f" - rank {lo} waits least (mean {np.nanmin(per_rank):.1f} ms; others mean {np.nanmean(per_rank):.1f} ms)"
    fig.update_layout(template="plotly_white", height=min(800, 200 + 14 * len(ranks)) if len(ranks) < 40 else 640,
                      title=f"waiting time per rank and collective, process group {pg}{sub}",
                      xaxis={"title": "collective sequence number"},
                      yaxis={"title": "rank", "autorange": "reversed"}, margin={"l": 60, "r": 20, "t": 50, "b": 50})
    return fig


def pg_transports(communicators: Sequence[Communicator], df_pgs: Iterable[str], world_size: int | None) -> dict[str, str]:
    """Process group -> the transport class its collectives ran on (best guess from the communicators).

    ``nccl:<comm id>`` rows name their communicator; PyTorch's pg "0" is the root communicator of
    the whole world; other pgs take a split communicator's transports when there is one.
    """
    by_id = {c.id: c for c in communicators}

    def cls(c: Communicator) -> str:
        classes = sorted({transport_class(t) for t in c.transports})
        return "+".join(classes) if classes else "unknown"

    roots = [c for c in communicators if c.parent is None and (world_size is None or c.nranks == world_size)]
    splits = [c for c in communicators if c.parent is not None]
    out = {}
    for pg in df_pgs:
        if pg.startswith("nccl:") and pg[5:] in by_id:
            out[pg] = cls(by_id[pg[5:]])
        elif pg == "0" and roots:
            out[pg] = cls(roots[0])
        elif splits:
            out[pg] = cls(splits[0])
        elif roots:
            out[pg] = cls(roots[0])
    return out


def pg_nranks(df: pd.DataFrame, communicators: Sequence[Communicator]) -> dict[str, int]:
    by_id = {c.id: c.nranks for c in communicators}
    counts = df.groupby("pg", observed=True)["rank"].nunique().to_dict() if len(df) else {}
    out = {}
    for pg, n in counts.items():
        pg = str(pg)
        out[pg] = by_id.get(pg[5:], n) if pg.startswith("nccl:") else int(n)
    return out
