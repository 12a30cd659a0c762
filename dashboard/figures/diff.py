"""Two runs' bus bandwidth against message size, on one figure: A solid, B dashed, one colour per operation."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .base import empty_figure, op_color

RUN_DASH = {"A": "solid", "B": "dash"}
RUN_SYMBOL = {"A": "circle", "B": "diamond-open"}


def busbw_pair_figure(a: pd.DataFrame, b: pd.DataFrame, label_a: str = "A", label_b: str = "B") -> go.Figure:
    """busbw by size for A and B (``compare.speed.busbw_groups`` of each run: per op and log2 size, the median
    busbw of the timed calls); a point per size, a line per op and run."""
    if not len(a) and not len(b):
        return empty_figure("neither run has timed collectives with a size (ncclscope run's hook, or the Flight "
                            "Recorder with TORCH_NCCL_ENABLE_TIMING=1, times them)")
    fig = go.Figure()
    for tag, label, tab in (("A", label_a, a), ("B", label_b, b)):
        for op, g in (tab.groupby("op", sort=True) if len(tab) else []):
            g = g.sort_values("bucket")
            fig.add_trace(go.Scatter(
                x=(2.0 ** g["bucket"].to_numpy(dtype=float)), y=g["busbw"].to_numpy(dtype=float), mode="lines+markers",
                name=f"{tag}: {op}", legendgroup=tag, legendgrouptitle_text=f"{tag}: {label}"[:80],
                line={"color": op_color(str(op)), "dash": RUN_DASH[tag], "width": 2},
                marker={"symbol": RUN_SYMBOL[tag], "size": 8},
                customdata=g["calls"].to_numpy(),
                hovertemplate=f"{tag} {op}<br>from %{{x:.3s}}B<br>median busbw %{{y:.2f}} GB/s"
                              "<br>%{customdata} calls<extra></extra>"))
    fig.update_layout(template="plotly_white", title="bus bandwidth against message size: A solid, B dashed",
                      xaxis={"title": "message size (bytes, lower end of each power-of-two bucket)", "type": "log"},
                      yaxis={"title": "median busbw (GB/s)"}, height=460, margin={"l": 60, "r": 20, "t": 50, "b": 50})
    return fig
