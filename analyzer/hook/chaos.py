"""The hook's chaos points: ``NCCLSCOPE_HOOK_CHAOS=all`` or ``coll,done,...`` makes each named path of
the hook raise, to prove that no exception of the hook's own ever reaches the training (tests/hook,
tests/launch). Standard library only."""
from __future__ import annotations

CHAOS_POINTS = ("start", "coll", "done", "poll", "hb", "stack", "request", "write", "step", "exit")


class Chaos:
    """The chaos points asked for (none, the usual case, is falsy)."""

    __slots__ = ("points",)

    def __init__(self, text: str = "") -> None:
        """``all``, or comma-separated point names (those of ``CHAOS_POINTS`` mean something)."""
        self.points = frozenset(CHAOS_POINTS if text.strip() == "all" else
                                (c.strip() for c in text.split(",") if c.strip()))

    def __contains__(self, point: object) -> bool:
        return point in self.points

    def __bool__(self) -> bool:
        return bool(self.points)

    def check(self, point: str) -> None:
        """Raise at ``point`` when asked to."""
        if point in self.points:
            raise RuntimeError(f"ncclscope chaos in {point}")
