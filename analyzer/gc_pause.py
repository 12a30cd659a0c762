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
