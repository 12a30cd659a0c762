"""Loading pickles that may come from anyone: plain data types only.

Flight Recorder dumps are pickles of dicts, lists, tuples, strings and numbers. A pickle can
name any importable callable (``os.system``) and have the loader call it, so ``find_class`` here
refuses every global except a few inert containers. The refusal names what was asked for.
"""
from __future__ import annotations

import io
import pickle
from typing import Any

ALLOWED_GLOBALS = {
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "bytearray"),
    ("collections", "OrderedDict"),
    ("_codecs", "encode"),  # protocol 2 writes bytes as _codecs.encode(str, 'latin1')
}
MAX_PICKLE_BYTES = 512 * 1024 * 1024


class UnsafePickleError(ValueError):
    """The pickle asked for something other than plain data."""


class PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise UnsafePickleError(f"refused: the pickle asks for {module}.{name}, which is not plain data")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("refused: the pickle uses persistent ids")


def loads_plain(data: bytes) -> Any:
    """``pickle.loads`` restricted to plain data; raises UnsafePickleError or ValueError."""
    if len(data) > MAX_PICKLE_BYTES:
        raise ValueError(f"pickle of {len(data)} bytes is over the {MAX_PICKLE_BYTES} byte limit")
    try:
        return PlainDataUnpickler(io.BytesIO(data)).load()
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError,
            AttributeError, MemoryError, RecursionError, OverflowError, UnicodeDecodeError) as e:
        raise ValueError(f"not a readable pickle: {type(e).__name__}: {e}") from None
