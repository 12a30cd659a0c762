"""What ``compare`` gives: each difference between two runs as a typed record, with the line that shows it on
each side, and where it ranks (``Tier``, ``score``: the rule is written out in ``compare/__init__.py``)."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ..model import Evidence, Verdict


class Aspect(enum.StrEnum):
    """What a difference is about (``differences[].aspect`` in ``diff --json``)."""

    BUSBW = "busbw"  # bus bandwidth of one operation at one message size
    STRAGGLER = "straggler"  # a rank the others waited for, and the time it cost
    TRANSPORT = "transport"  # the links a communicator's channels run over
    ALGORITHM = "algorithm"  # NCCL's algorithm and protocol for one operation at some sizes (its TUNING lines)
    SETTING = "setting"  # an NCCL_ / TORCH_NCCL_ setting
    VERSION = "version"  # NCCL, torch, CUDA
    LAYOUT = "layout"  # world size, nodes, GPUs per node
    CHANNELS = "channels"
    RINGS = "rings"
    TREES = "trees"
    INIT_TIME = "init_time"  # the longest communicator init NCCL reported (Init timings)
    TIME_SHARE = "time_share"  # the share of collective time one operation takes
    HOTSPOT = "hotspot"  # where most collective time goes (op, size, process group)
    VERDICT = "verdict"


class Tier(enum.IntEnum):
    """The order of the list, most likely to matter for speed first (``compare/__init__.py`` says why)."""

    MEASURED = 0  # time measured on both sides: a busbw change times its share of time, a straggler's cost
    TRANSPORT = 1  # a communicator's links changed class (NVLink, SHM, the network ...)
    ALGORITHM = 2  # NCCL chose another algorithm or protocol
    SETTING = 3  # a setting known to change NCCL's speed
    REST = 4  # everything else that differs

    @property
    def word(self) -> str:
        return self.name.lower()


class Direction(enum.StrEnum):
    """Which way a difference goes for speed, read from B's side: ``slower`` where B lost, ``faster`` where it
    gained, ``changed`` where the difference itself says nothing of speed."""

    SLOWER = "slower"
    FASTER = "faster"
    CHANGED = "changed"


@dataclass(frozen=True, slots=True)
class Side:
    """One run's side of a difference: the value as shown (None: that run has none) and the line that shows it."""

    value: str | None
    evidence: Evidence | None = None

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "evidence": self.evidence.to_json() if self.evidence else None}


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    """One thing that differs between run A and run B, said in one line (``message``).

    ``score``: in the ``MEASURED`` tier, the share of the slower run's collective time the difference accounts
    for (0 to 1); in the others, a fixed weight of its kind (and, for an algorithm, the share of time of the sizes
    it concerns), only to order the lines of one tier.
    """

    aspect: Aspect
    tier: Tier
    score: float
    direction: Direction
    subject: str  # what differs: "allreduce of 32 MiB", "NCCL_P2P_DISABLE", "communicator of 8 ranks"
    a: Side
    b: Side
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"aspect": self.aspect.value, "tier": self.tier.word, "score": round(float(self.score), 4),
                "direction": self.direction.value, "subject": self.subject, "message": self.message,
                "a": self.a.to_json(), "b": self.b.to_json()}


@dataclass(frozen=True, slots=True)
class RunSide:
    """What one run is, in the header of a comparison."""

    label: str
    verdict: Verdict
    headline: str
    culprit_ranks: tuple[int, ...]
    world_size: int | None

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "verdict": self.verdict.value, "headline": self.headline,
                "culprit_ranks": list(self.culprit_ranks), "world_size": self.world_size}


@dataclass(frozen=True, slots=True)
class Comparison:
    """Run A against run B: every difference, most likely to matter for speed first, and what could not be
    compared because one side's input does not show it (``not_compared``, said plainly)."""

    a: RunSide
    b: RunSide
    differences: tuple[Difference, ...]
    not_compared: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a.to_json(), "b": self.b.to_json(),
                "differences": [d.to_json() for d in self.differences], "not_compared": list(self.not_compared)}
