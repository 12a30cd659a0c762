"""Parsed runs kept on disk, so that opening the same input again skips parsing.

Layout: ``<run folder>/.ncclscope-cache/`` (or ``$XDG_CACHE_HOME/ncclscope/<hash>/`` when the
folder is read-only, or the input is files or archives rather than one folder):

- ``key.json``: the format version and (path, size, mtime) of every input file. Any change, a file
  added or removed, or another ncclscope cache format invalidates the entry.
- ``collectives.parquet``, ``heartbeats.parquet``: the tables.
- ``run.json``: everything else in ``Run`` (job, communicators, events, ...), as tagged JSON.

Only Parquet and JSON are read back, never pickle: a cache folder shipped inside a run archive
cannot run code. Reading or writing the cache never fails an analysis; a bad entry is a miss.
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from . import model
from .ingest import MAX_FILES, SKIP_NAMES
from .model import Run

FORMAT = 1
CACHE_DIRNAME = ".ncclscope-cache"
_CLASSES: dict[str, type] = {
    name: obj for name, obj in vars(model).items() if isinstance(obj, type) and dataclasses.is_dataclass(obj)
}
_ENUMS: dict[str, type[enum.Enum]] = {
    name: obj for name, obj in vars(model).items() if isinstance(obj, type) and issubclass(obj, enum.Enum)
}


def code_digest() -> str:
    """Hash of the code that turns files into a Run: a parser change invalidates every entry."""
    global _DIGEST
    if _DIGEST is None:
        here = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for p in sorted([*here.glob("sources/*.py"), here / "ingest.py", here / "build.py", here / "model.py",
                         here / "cache.py"]):
            h.update(p.name.encode() + b"\0" + p.read_bytes())
        _DIGEST = h.hexdigest()[:16]
    return _DIGEST


_DIGEST: str | None = None


def input_key(paths: list[Path]) -> list[list[Any]] | None:
    """(path, size, mtime_ns) of every file the input names, in a stable order; None if one is missing."""
    out: list[list[Any]] = []
    for root in paths:
        root = Path(root).resolve()
        if root.is_dir():
            for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
                for fn in sorted(filenames):
                    if fn in SKIP_NAMES or fn.startswith("."):
                        continue
                    p = Path(dirpath) / fn
                    if p.is_symlink() or not p.is_file():
                        continue
                    st = p.stat()
                    out.append([str(p), st.st_size, st.st_mtime_ns])
                    if len(out) > MAX_FILES:
                        return None
        elif root.is_file():
            st = root.stat()
            out.append([str(root), st.st_size, st.st_mtime_ns])
        else:
            return None
    return out


def cache_dir(paths: list[Path]) -> Path:
    """Where the entry for ``paths`` lives: inside a single writable run folder, else the user cache."""
    if len(paths) == 1 and Path(paths[0]).is_dir():
        d = Path(paths[0]).resolve() / CACHE_DIRNAME
        if _writable(d if d.exists() else d.parent):
            return d
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ncclscope"
    h = hashlib.sha256("\0".join(str(Path(p).resolve()) for p in paths).encode()).hexdigest()[:20]
    return base / h


def _writable(d: Path) -> bool:
    """Writable by mode bits too: root passes every ``os.access`` test, yet a folder marked read-only
    (a shared corpus, a mounted archive) must not get a cache folder inside it."""
    try:
        return os.access(d, os.W_OK) and bool(d.stat().st_mode & stat.S_IWUSR)
    except OSError:
        return False


def load(paths: list[Path]) -> Run | None:
    """The cached Run for ``paths`` if its key still matches the files, else None."""
    key = input_key(paths)
    if not key:
        return None
    d = cache_dir(paths)
    try:
        stored = json.loads((d / "key.json").read_text())
        if stored.get("format") != FORMAT or stored.get("code") != code_digest() or stored.get("files") != key:
            return None
        parts = json.loads((d / "run.json").read_text(), object_hook=_decode)
        collectives = pd.read_parquet(d / "collectives.parquet")
        heartbeats = pd.read_parquet(d / "heartbeats.parquet") if (d / "heartbeats.parquet").exists() else None
        return Run(collectives=collectives, heartbeats=heartbeats, **parts)
    except (OSError, ValueError, TypeError, KeyError, ImportError):
        return None
    except Exception:  # noqa: BLE001 - pyarrow raises its own types for damaged files: a miss
        return None


def store(paths: list[Path], run: Run) -> Path | None:
    """Write the entry; returns its folder, or None when nothing could be written."""
    key = input_key(paths)
    if not key:
        return None
    fields = {f.name: getattr(run, f.name) for f in dataclasses.fields(run)
              if f.name not in ("collectives", "heartbeats")}
    for d in _candidates(paths):
        tmp = None
        try:
            d.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=d.parent))
            run.collectives.to_parquet(tmp / "collectives.parquet", index=False)
            if run.heartbeats is not None:
                run.heartbeats.to_parquet(tmp / "heartbeats.parquet", index=False)
            (tmp / "run.json").write_text(json.dumps(_encode(fields), allow_nan=True))
            (tmp / "key.json").write_text(json.dumps({"format": FORMAT, "code": code_digest(), "files": key}))
            if d.exists():
                shutil.rmtree(d, ignore_errors=True)
            os.replace(tmp, d)
            return d
        except Exception:  # noqa: BLE001 - a cache that cannot be written is no cache, not an error
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            continue
    return None


def _candidates(paths: list[Path]) -> list[Path]:
    first = cache_dir(paths)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ncclscope"
    h = hashlib.sha256("\0".join(str(Path(p).resolve()) for p in paths).encode()).hexdigest()[:20]
    user = base / h
    return [first] if first == user else [first, user]


def _encode(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {"__dc__": type(v).__name__, **{f.name: _encode(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, enum.Enum):
        return {"__enum__": type(v).__name__, "v": v.value}
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v):
            return {"__d__": None, **{k: _encode(x) for k, x in v.items()}} if "__dc__" in v or "__enum__" in v \
                else {k: _encode(x) for k, x in v.items()}
        return {"__kv__": [[_encode(k), _encode(x)] for k, x in v.items()]}
    if isinstance(v, tuple):
        return {"__t__": [_encode(x) for x in v]}
    if isinstance(v, (set, frozenset)):
        return {"__s__": [_encode(x) for x in v], "frozen": isinstance(v, frozenset)}
    if isinstance(v, list):
        return [_encode(x) for x in v]
    if hasattr(v, "item") and callable(v.item):  # numpy scalars
        return v.item()
    if isinstance(v, Path):
        return str(v)
    return v


def _decode(o: dict[str, Any]) -> Any:
    if "__dc__" in o:
        cls = _CLASSES[o.pop("__dc__")]
        return cls(**o)
    if "__enum__" in o:
        return _ENUMS[o["__enum__"]](o["v"])
    if "__kv__" in o:
        return {_hashable(k): x for k, x in o["__kv__"]}
    if "__t__" in o:
        return tuple(o["__t__"])
    if "__s__" in o:
        items = [_hashable(x) for x in o["__s__"]]
        return frozenset(items) if o.get("frozen") else set(items)
    if "__d__" in o:
        o.pop("__d__")
    return o


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v
