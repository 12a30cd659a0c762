"""The cyclic garbage collector paused while records are made by the hundred thousand.

Parsing and building the model create hundreds of thousands of records, tuples and small objects,
none of them in a reference cycle; each collection pass would walk all the live ones again
(building a 4,096-rank model took 2.7 s with the collector on, 1.6 s with it off). Reference
counting frees everything as before; the collector runs again when the block ends.
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
