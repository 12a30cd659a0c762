"""The cyclic garbage collector paused while records are made by the hundred thousand.

Parsing and building the model create hundreds of thousands of records, tuples and small objects,
none of them in a reference cycle; each collection pass would walk all the live ones again
(docs/performance.md has what that cost). Reference counting frees everything as before; the
collector runs again when the block ends.
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def gc_off_for_process() -> None:
    """No collector passes for the rest of this process: for a process that ends when its one analysis
    does (``analyze``), where building the model and running the detectors after the parse still made
    the collector walk every live record, generation after generation (docs/performance.md)."""
    gc.disable()
