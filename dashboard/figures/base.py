"""What every figure shares: one colour per op and per transport (the same on every page), the empty
figure that says what input would fill it, and plotly's one-off warm-up."""
from __future__ import annotations

import zlib

import plotly.graph_objects as go

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
    "allreducebarrier": "#7f7f7f", "gather": "#aec7e8", "scatter": "#ffbb78", "alltoall_base": "#f7b6d2",
}
EXTRA_COLORS = ["#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#31a354", "#756bb1"]
STUCK_COLOR = "#d62728"
NODE_COLOR = "#333"


def op_color(op: str) -> str:
    """The op's colour on every page; an op outside the table gets a fixed one from its name."""
    return OP_COLORS.get(op) or EXTRA_COLORS[zlib.crc32(op.encode()) % len(EXTRA_COLORS)]


def warm_up() -> None:
    """Build one tiny figure of each trace type: plotly's first figure in a process costs ~1 s of
    imports, paid here at start-up instead of by the first page a user opens."""
    fig = go.Figure([go.Scatter(x=[0], y=[0]), go.Scattergl(x=[0], y=[0]), go.Bar(x=[1], y=["a"], orientation="h"),
                     go.Heatmap(z=[[0.0]])])
    fig.add_annotation(x=0, y=0, text="")
    fig.add_vrect(x0=0, x1=1)
    fig.update_layout(template="plotly_white")
    fig.to_json()


def empty_figure(message: str, height: int = 260) -> go.Figure:
    """A figure with no data and one message: what is missing and, where it helps, how to get it."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font={"size": 14, "color": "#555"})
    fig.update_layout(height=height, xaxis={"visible": False}, yaxis={"visible": False},
                      margin={"l": 20, "r": 20, "t": 20, "b": 20}, template="plotly_white")
    return fig


def fmt_ms(ms: float) -> str:
    """A duration in ms, in ms below a second and in s above."""
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1e3:.2f} s"


def calls(n: int) -> str:
    return f"{int(n):,} call{'' if int(n) == 1 else 's'}"


def int_axis(n: int) -> dict:
    """A rank axis with integer ticks only (never -0.5 or 1.5)."""
    return {"tickformat": "d", **({"dtick": 1} if n <= 40 else {})}
