"""Loading pickles that may come from anyone: plain data only, bounded in size and shape.

Flight Recorder dumps are pickles of dicts, lists, tuples, strings and numbers. A pickle can
name any importable callable (``os.system``) and have the loader call it, so ``find_class`` here
refuses every global except a few inert constructors, and those are wrapped so that they accept
only the arguments the pickle protocol itself writes (``bytearray(10**12)`` would allocate a
terabyte). What those constructors build is counted as they build it, against a budget of a few
times the file (``MaterialBudget``): a bytearray of one memoised bytes object, made again and again
by a few bytes of pickle each, is refused at the budget, not once gigabytes are built. Persistent
ids are refused. After loading, the object is walked once, without recursion (a stack of one
iterator a level, at most ``MAX_DEPTH``): anything that is not plain data, nesting deeper than ``MAX_DEPTH``, an object that
contains itself, or shared references that expand to far more objects than the file could hold
(the pickle form of a "billion laughs") is refused. Every refusal raises ``UnsafePickleError``
and says what was asked for; nothing named in the pickle is ever called.
"""
from __future__ import annotations

import _codecs
import collections
import functools
import io
import itertools
import pickle
from collections.abc import Callable, Iterator
from typing import Any

MAX_PICKLE_BYTES = 512 * 1024 * 1024
MAX_DEPTH = 100  # Flight Recorder dumps nest 5 levels
NODES_PER_BYTE = 8  # a plain pickle spends at least one byte per object it references
# bytes of str / bytes / bytearray counted at every reference: a memoised object repeated costs a few
# bytes of pickle a time but its whole length to whoever decodes, copies or prints each occurrence
MATERIAL_PER_BYTE = 8
MATERIAL_FLOOR = 256 * 1024 * 1024
# bytes the allowed constructors may build while the pickle loads (copies of bytes and text, sets and
# ordered dicts): a plain pickle builds each once, from bytes the file holds
BUILT_PER_BYTE = 2
BUILT_FLOOR = 16 * 1024 * 1024
CONTAINER_ITEM_BYTES = 64  # what a set's or an ordered dict's item is counted as
PLAIN_SCALARS = (str, bytes, bytearray, int, float, complex, bool, type(None))
PLAIN_CONTAINERS = (dict, list, tuple, set, frozenset)  # OrderedDict is a dict


class UnsafePickleError(ValueError):
    """The pickle asked for something other than plain data."""


class MaterialBudget:
    """Bytes the allowed constructors may still build while one pickle loads; ``charge`` refuses past it,
    before the thing is built."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.built = 0

    def charge(self, nbytes: int, what: str) -> None:
        self.built += nbytes
        if self.built > self.limit:
            raise UnsafePickleError(f"refused: the pickle builds more than {self.limit} bytes while it loads ({what} "
                                    "made again and again from one stored object, a memory bomb)")


def _set(budget: MaterialBudget, items: Any = ()) -> set:
    if not isinstance(items, (list, tuple, set, frozenset)):
        raise UnsafePickleError(f"refused: builtins.set called with {type(items).__name__}, not a list")
    budget.charge(CONTAINER_ITEM_BYTES * len(items), "sets")
    return set(items)


def _frozenset(budget: MaterialBudget, items: Any = ()) -> frozenset:
    if not isinstance(items, (list, tuple, set, frozenset)):
        raise UnsafePickleError(f"refused: builtins.frozenset called with {type(items).__name__}, not a list")
    budget.charge(CONTAINER_ITEM_BYTES * len(items), "sets")
    return frozenset(items)


def _complex(budget: MaterialBudget, real: Any = 0.0, imag: Any = 0.0) -> complex:
    if not isinstance(real, (int, float)) or not isinstance(imag, (int, float)):
        raise UnsafePickleError("refused: builtins.complex called with something other than two numbers")
    return complex(real, imag)


def _bytearray(budget: MaterialBudget, data: Any = b"", encoding: Any = None) -> bytearray:
    # protocols 0-2 write bytearray(str, 'latin-1'), 3-4 bytearray(bytes); an int would allocate that many bytes
    if isinstance(data, bytes) and encoding is None:
        budget.charge(len(data), "bytearrays")
        return bytearray(data)
    if isinstance(data, str) and encoding in ("latin-1", "latin1"):
        budget.charge(len(data), "bytearrays")
        return bytearray(data, "latin-1")
    raise UnsafePickleError(f"refused: builtins.bytearray called with {type(data).__name__}, not bytes")


def _bytes(budget: MaterialBudget, data: Any = b"") -> bytes:
    # protocols 0-2 write b"" as bytes(); bytes(10**12) would allocate a terabyte
    if isinstance(data, bytes):
        return data
    raise UnsafePickleError(f"refused: builtins.bytes called with {type(data).__name__}, not bytes")


def _encode(budget: MaterialBudget, text: Any, encoding: Any = "utf-8", errors: Any = "strict") -> bytes:
    # protocol 2 writes bytes as _codecs.encode(str, 'latin1'); other codecs are not plain data
    if isinstance(text, str) and encoding in ("latin1", "latin-1") and errors == "strict":
        budget.charge(len(text), "bytes")
        return _codecs.encode(text, "latin1")
    raise UnsafePickleError(f"refused: _codecs.encode with encoding {encoding!r}; only latin1 text is plain data")


def _ordered_dict(budget: MaterialBudget, items: Any = ()) -> collections.OrderedDict:
    if not isinstance(items, (list, tuple)):
        raise UnsafePickleError("refused: collections.OrderedDict called with something other than a list")
    budget.charge(CONTAINER_ITEM_BYTES * len(items), "ordered dicts")
    return collections.OrderedDict(items)


ALLOWED_GLOBALS: dict[tuple[str, str], Callable[..., Any]] = {
    ("builtins", "set"): _set,
    ("builtins", "frozenset"): _frozenset,
    ("builtins", "complex"): _complex,
    ("builtins", "bytearray"): _bytearray,
    ("builtins", "bytes"): _bytes,
    ("collections", "OrderedDict"): _ordered_dict,
    ("_codecs", "encode"): _encode,
}


class PlainDataUnpickler(pickle.Unpickler):
    """An unpickler of plain data whose constructors draw on ``budget`` (``MaterialBudget``)."""

    def __init__(self, file: io.BytesIO, budget: MaterialBudget) -> None:
        super().__init__(file)
        self.budget = budget

    def find_class(self, module: str, name: str) -> Any:
        # protocols 0-2 name Python 2 modules; map them as pickle's own find_class does (fix_imports)
        fn = ALLOWED_GLOBALS.get(("builtins" if module == "__builtin__" else module, name))
        if fn is not None:
            return functools.partial(fn, self.budget)
        raise UnsafePickleError(f"refused: the pickle asks for {module}.{name}, which is not plain data")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("refused: the pickle uses persistent ids")


def check_plain(obj: Any, max_nodes: int, max_depth: int = MAX_DEPTH, max_bytes: int | None = None) -> int:
    """Walk ``obj`` (iteratively) and raise UnsafePickleError unless it is a tree of plain data no
    larger than ``max_nodes`` nodes and ``max_bytes`` bytes of strings and bytes, both counting shared
    references once per reference. Returns the node count. The walk holds one iterator per level of
    the path it is on (at most ``max_depth``), never a list of the children still to see."""
    walk = _Walk(max_nodes, max_bytes)
    children = walk.enter(obj, 0, max_depth)
    if children is None:
        return walk.nodes
    stack: list[tuple[Iterator[Any], Any]] = [(children, obj)]  # (children left to see, their container)
    while stack:
        left, container = stack[-1]
        child = next(left, _DONE)
        if child is _DONE:
            stack.pop()
            walk.on_path.discard(id(container))
            continue
        sub = walk.enter(child, len(stack), max_depth)
        if sub is not None:
            stack.append((sub, child))
    return walk.nodes


_DONE = object()


class _Walk:
    """``check_plain``'s counts, and the containers on the path being walked."""

    def __init__(self, max_nodes: int, max_bytes: int | None) -> None:
        self.max_nodes, self.max_bytes = max_nodes, max_bytes
        self.nodes = 0
        self.material = 0
        self.on_path: set[int] = set()

    def enter(self, cur: Any, depth: int, max_depth: int) -> Iterator[Any] | None:
        """Count ``cur`` (at ``depth``); its children to walk when it is a container, else None."""
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise UnsafePickleError(f"refused: the pickle expands to more than {self.max_nodes} objects "
                                    "(shared references repeated, a pickle bomb)")
        if isinstance(cur, PLAIN_SCALARS):
            if self.max_bytes is not None and isinstance(cur, (str, bytes, bytearray)):
                self.material += len(cur)
                if self.material > self.max_bytes:
                    raise UnsafePickleError(f"refused: the pickle's strings and bytes come to more than {self.max_bytes} "
                                            "bytes counted at every reference (one large object repeated, a "
                                            "memory bomb)")
            return None
        if not isinstance(cur, PLAIN_CONTAINERS):
            raise UnsafePickleError(f"refused: the pickle holds a {type(cur).__module__}.{type(cur).__qualname__}, "
                                    "which is not plain data")
        if depth >= max_depth:
            raise UnsafePickleError(f"refused: the pickle nests deeper than {max_depth} levels")
        if id(cur) in self.on_path:
            raise UnsafePickleError("refused: the pickle holds an object that contains itself")
        if isinstance(cur, dict):
            if type(cur) not in (dict, collections.OrderedDict):
                raise UnsafePickleError(f"refused: the pickle holds a {type(cur).__qualname__}, which is not plain data")
            if getattr(cur, "__dict__", None):
                raise UnsafePickleError("refused: the pickle sets attributes on a dictionary")
            self.on_path.add(id(cur))
            return itertools.chain.from_iterable(cur.items())
        self.on_path.add(id(cur))
        return iter(cur)


def _arg_table() -> dict[int, tuple[int, str]]:
    """Opcode byte -> (argument size code from pickletools, opcode name)."""
    import pickletools

    return {ord(op.code): (op.arg.n if op.arg is not None else 0, op.name) for op in pickletools.opcodes}


_ARGS = _arg_table()
_LEN_BYTES = {-2: 1, -3: 4, -4: 4, -5: 8}  # pickletools.TAKEN_FROM_ARGUMENT1 / 4 / 4U / 8U
_TWO_LINES = {"GLOBAL", "INST"}


def scan_opcodes(data: bytes) -> None:
    """Walk the opcode stream once (no object is built) and refuse what would make the C loader
    allocate far more than the file holds: a memo index (``PUT``, ``LONG_BINPUT``) beyond the file's
    length (the loader grows its memo table to twice the index), or a length prefix beyond the end."""
    n = len(data)
    limit = n + 16
    i = 0
    while i < n:
        op = data[i]
        entry = _ARGS.get(op)
        if entry is None:
            raise ValueError(f"not a readable pickle: unknown opcode {op:#04x} at byte {i}")
        size, name = entry
        i += 1
        if size >= 0:
            if name == "LONG_BINPUT" and int.from_bytes(data[i:i + 4], "little") > limit:
                raise UnsafePickleError(f"refused: the pickle stores to memo slot {int.from_bytes(data[i:i + 4], 'little')}, "
                                        f"far beyond its {n} bytes (a memory bomb)")
            if name == "FRAME" and int.from_bytes(data[i:i + 8], "little") > n - i - 8:
                raise ValueError("not a readable pickle: a frame runs past the end of the data")
            i += size
        elif size == -1:  # up to a newline (two lines for GLOBAL / INST)
            end = data.find(b"\n", i)
            if end < 0:
                raise ValueError(f"not a readable pickle: {name} without its newline")
            if name == "PUT":
                idx = data[i:end].strip()
                if not idx.isdigit() or len(idx) > 12 or int(idx) > limit:
                    raise UnsafePickleError(f"refused: the pickle stores to memo slot {idx[:20]!r}, "
                                            f"far beyond its {n} bytes (a memory bomb)")
            if name in _TWO_LINES:
                end = data.find(b"\n", end + 1)
                if end < 0:
                    raise ValueError(f"not a readable pickle: {name} without its newline")
            i = end + 1
        else:
            k = _LEN_BYTES.get(size)
            if k is None:
                raise ValueError(f"not a readable pickle: opcode {name} not understood")
            length = int.from_bytes(data[i:i + k], "little", signed=(size == -3))
            i += k
            if length < 0 or length > n - i:
                raise ValueError(f"not a readable pickle: {name} claims {length} bytes, only {max(n - i, 0)} remain")
            i += length
        if name == "STOP":
            return


def loads_plain(data: bytes) -> Any:
    """``pickle.loads`` restricted to plain data; raises UnsafePickleError or ValueError."""
    if len(data) > MAX_PICKLE_BYTES:
        raise ValueError(f"pickle of {len(data)} bytes is over the {MAX_PICKLE_BYTES} byte limit")
    scan_opcodes(data)
    try:
        obj = PlainDataUnpickler(io.BytesIO(data), MaterialBudget(max(BUILT_FLOOR, BUILT_PER_BYTE * len(data)))).load()
    except UnsafePickleError:
        raise
    except Exception as e:  # noqa: BLE001 - corrupt input may fail in any of the loader's ways
        raise ValueError(f"not a readable pickle: {type(e).__name__}: {str(e)[:200]}") from None
    check_plain(obj, NODES_PER_BYTE * len(data) + 100_000,
                max_bytes=max(MATERIAL_FLOOR, MATERIAL_PER_BYTE * len(data)))
    return obj
