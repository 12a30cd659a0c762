"""The hook's per-call budget: above ``NCCLSCOPE_HOOK_CALLS_S`` traced collectives a second, the
wrappers come off ``torch.distributed`` until the next tick of the hook's poller.

Why: a wrapper costs a collective a few microseconds of Python on the training thread. Code that
issues tens of thousands of small collectives a second from Python (tensor parallelism on small
tensors, pipeline point-to-point) would pay that on every one; Flight Recorder keeps every
collective in C++ anyway, and the heartbeat counts them from the groups' own sequence numbers. So,
once Flight Recorder reports completion for every group the hook knows (else a blocking collective
would look enqueued and never done), the first ``CALLS_S x poll period`` calls of each tick are
traced and the rest of the tick runs on torch's own functions: at 500 a second and ~5 us a call,
0.25 % of one core at most. The heartbeat's ``untraced`` counts the collectives issued meanwhile.

Only attributes this module set are put back: a function someone else patched in is left alone.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any


class Wrappers:
    """Every (namespace, name, torch's function, its wrapper) the hook installed."""

    def __init__(self) -> None:
        self.items: list[tuple[ModuleType, str, Any, Any]] = []

    def add(self, module: ModuleType, name: str, original: Any, wrapper: Any) -> None:
        self.items.append((module, name, original, wrapper))

    def turn(self, on: bool) -> int:
        """Put the wrappers in (``on``) or torch's functions back; returns how many were swapped.
        One attribute store each: a call in flight on another thread runs whichever it looked up."""
        swapped = 0
        for module, name, original, wrapper in self.items:
            have, want = (original, wrapper) if on else (wrapper, original)
            if getattr(module, name, None) is have:
                setattr(module, name, want)
                swapped += 1
        return swapped


WRAPPERS = Wrappers()
