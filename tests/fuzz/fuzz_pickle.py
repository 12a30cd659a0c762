"""Fuzz target: the restricted unpickler (``safe_pickle.loads_plain``).

Inputs: real Flight Recorder pickles with bytes edited, pickles of random plain data at every
protocol, and pickles that name callables (``os.system``, ``builtins.eval``, ...). Allowed:
``ValueError`` (``UnsafePickleError`` is one). A callable that got through is a crash, and so
is the marker file any payload here would write.
Run: ``python tests/fuzz/fuzz_pickle.py --seconds 60``.
"""
from __future__ import annotations

import pickle
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import corpus_file, mutate_bytes, random_json, run_fuzz

from ncclscope.safe_pickle import loads_plain

REAL = corpus_file("fr_timeout_rank0", "fr_end_rank0.pkl") or pickle.dumps({"entries": []})
MARKER = Path(tempfile.gettempdir()) / "ncclscope-fuzz-pickle-marker"
GLOBALS = [b"os\nsystem", b"posix\nsystem", b"builtins\neval", b"builtins\nexec", b"builtins\ngetattr",
           b"subprocess\nPopen", b"builtins\n__import__", b"io\nopen", b"shutil\nrmtree", b"pickle\nloads",
           b"collections\nOrderedDict", b"builtins\nset", b"_codecs\nencode", b"copyreg\n_reconstructor"]


def evil(rng: random.Random) -> bytes:
    """A protocol-0 pickle calling a global with the marker command, behind a random amount of junk."""
    g = rng.choice(GLOBALS)
    arg = f"touch {MARKER}".encode()
    body = b"c" + g + b"\n(V" + arg + b"\ntR."
    if rng.random() < 0.5:
        body = b"(lp0\n" + body[:-1] + b"a."  # inside a list
    return body


def one(rng: random.Random, deep: bool | None = None) -> None:
    r = rng.random()
    if r < 0.4:
        data = mutate_bytes(rng, REAL)
    elif r < 0.7:
        data = pickle.dumps(random_json(rng), protocol=rng.randint(0, 5))
        if rng.random() < 0.5:
            data = mutate_bytes(rng, data)
    else:
        data = evil(rng)
        if rng.random() < 0.3:
            data = mutate_bytes(rng, data)
    try:
        obj = loads_plain(data)
    except ValueError:
        obj = None
    assert not MARKER.exists(), f"a pickle ran code: {data[:200]!r}"
    assert not callable(obj) or isinstance(obj, type) is False, f"a callable came out: {obj!r}"
    _plain(obj)


def _plain(obj: object, depth: int = 0) -> None:
    """Everything that comes out is plain data."""
    if depth > 200:
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            _plain(k, depth + 1)
            _plain(v, depth + 1)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            _plain(v, depth + 1)
    else:
        assert obj is None or isinstance(obj, (bool, int, float, complex, str, bytes, bytearray)), type(obj)


if __name__ == "__main__":
    raise SystemExit(run_fuzz("safe_pickle", one))
