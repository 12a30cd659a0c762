"""The order of a comparison's lines: by tier, then by score, largest first (``compare/__init__.py`` says why).

Measured time comes with a score that is a share of collective time; the other tiers have no time measured, so
their lines are ordered within the tier by the weights below. The thresholds say what counts as a change at all.
"""
from __future__ import annotations

from collections.abc import Iterable

from ..nccl.risky_settings import FORCED, NOTES, SETTING_WARNINGS
from .model import Difference, Direction

# a busbw change counts when it is at least this far from 1 (the faster side over the slower: 1.25 = 25 %) ...
BUSBW_CHANGE = 1.25
# ... on an (op, size) group with at least this many timed collectives on each side (one call can be an outlier)
MIN_CALLS = 2
# a measured difference below this share of collective time is left to the rest (noise of a busy machine)
MEASURED_FLOOR = 0.01
# an operation's share of collective time counts as moved past this many points (0.10 = 10 points)
SHARE_MOVE = 0.10
# an init time counts as changed when the longer is at least this many times the shorter, and a second longer
INIT_RATIO = 1.5
INIT_MIN_S = 1.0

# link classes (metrics.busbw.transport_class), fastest first: a change to a later one is a downgrade
TRANSPORT_ORDER = ("NVLS/CollNet", "P2P/NVLink", "NET/IB", "SHM", "NET", "NET/Socket", "unknown")

# settings known to change NCCL's speed, strongest first: they switch a transport off, take a choice away from
# NCCL, warrant a warning (nccl.risky_settings), or tune a size, a buffer or a channel count (NCCL's env docs)
TUNING_SETTINGS = frozenset({
    "NCCL_TREE_THRESHOLD", "NCCL_BUFFSIZE", "NCCL_LL_BUFFSIZE", "NCCL_LL128_BUFFSIZE", "NCCL_NTHREADS",
    "NCCL_P2P_LEVEL", "NCCL_NVLS_ENABLE", "NCCL_NCHANNELS_PER_NET_PEER", "NCCL_IB_QPS_PER_CONNECTION",
    "NCCL_IB_SPLIT_DATA_ON_QPS", "NCCL_NET_GDR_READ", "NCCL_P2P_NET_CHUNKSIZE", "NCCL_P2P_NVL_CHUNKSIZE",
    "NCCL_PXN_DISABLE", "NCCL_NET", "NCCL_COLLNET_ENABLE", "NCCL_IB_HCA", "NCCL_SOCKET_NTHREADS",
    "NCCL_NSOCKS_PERTHREAD", "NCCL_MAX_CTAS", "NCCL_MIN_CTAS", "NCCL_GRAPH_FILE", "NCCL_TOPO_FILE",
})
SETTING_WEIGHT = {"switch": 1.0, "forced": 0.9, "warning": 0.6, "tuning": 0.5}

# the rest, by kind (the verdict first: it is the story of the run; settings that matter nothing for speed last)
REST_WEIGHT = {"verdict": 1.0, "layout": 0.9, "version": 0.8, "channels": 0.7, "init_time": 0.6, "time_share": 0.5,
               "hotspot": 0.4, "busbw": 0.35, "straggler": 0.35, "rings": 0.3, "trees": 0.3, "algorithm": 0.25,
               "setting": 0.1}


def setting_weight(name: str) -> float | None:
    """How strongly a setting is known to change NCCL's speed (``SETTING_WEIGHT``); None for one not known to."""
    if name in NOTES:
        return SETTING_WEIGHT["switch"]
    if name in FORCED:
        return SETTING_WEIGHT["forced"]
    if name in SETTING_WARNINGS and not name.endswith(("DEBUG", "ERROR_HANDLING", "BLOCKING_WAIT")):
        return SETTING_WEIGHT["warning"]
    if name in TUNING_SETTINGS:
        return SETTING_WEIGHT["tuning"]
    return None


def transport_rank(cls: str) -> int:
    """A link class's place in ``TRANSPORT_ORDER`` (0 the fastest)."""
    return TRANSPORT_ORDER.index(cls) if cls in TRANSPORT_ORDER else len(TRANSPORT_ORDER) - 1


_DIRECTION = {Direction.SLOWER: 0, Direction.FASTER: 1, Direction.CHANGED: 2}


def ordered(diffs: Iterable[Difference]) -> tuple[Difference, ...]:
    """By tier; within it by score, largest first, a loss before a gain of the same score; then by subject, so
    that the order never depends on the order the comparers ran in."""
    return tuple(sorted(diffs, key=lambda d: (d.tier, -round(d.score, 6), _DIRECTION[d.direction], d.aspect.value,
                                              d.subject)))
