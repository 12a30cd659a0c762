"""Pure figure functions: tables (``ncclscope.metrics``) and model objects in, ``go.Figure`` out. No I/O,
no Dash, no metric computed here: the numbers on a page are the numbers the detectors judged.

Large inputs are handled with WebGL traces (``Scattergl``), one trace per category with NaN
separators between segments, and numpy instead of Python loops over rows."""
from __future__ import annotations

from ncclscope.metrics.busbw import transport_class

from .base import (
    OP_COLORS,
    STUCK_COLOR,
    TRANSPORT_COLORS,
    calls,
    empty_figure,
    fmt_ms,
    int_axis,
    op_color,
    warm_up,
)
from .diff import busbw_pair_figure
from .hotspots import busbw_figure, time_share_figure, volume_figure, wait_heatmap_figure
from .timeline import progress_figure, timeline_figure
from .topology import host_edges, host_figure, rank_hosts, rank_labels, ring_figure, tree_figure

__all__ = ["OP_COLORS", "STUCK_COLOR", "TRANSPORT_COLORS", "busbw_figure", "busbw_pair_figure", "calls",
           "empty_figure", "fmt_ms", "host_edges", "host_figure", "int_axis", "op_color", "progress_figure",
           "rank_hosts", "rank_labels", "ring_figure", "time_share_figure", "timeline_figure",
           "transport_class", "tree_figure", "volume_figure", "wait_heatmap_figure", "warm_up"]
