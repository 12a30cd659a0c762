"""Parsed runs kept on disk, so that opening the same input again skips parsing.

Layout: ``$XDG_CACHE_HOME/ncclscope/runs/<hash>/`` (``~/.cache``), in a folder of the user's that no
one else can write (0700, owner checked every time; anything else and there is no cache). Never in
or beside the input: a ``.ncclscope-cache`` folder that arrives with a copied, untarred or uploaded
run is not read (it could forge the verdict), and analysing a folder writes nothing into it.

- ``key.json``: the format version, the parser code's hash and (path, size, mtime, ctime, inode) of
  every input file: the file's content identity (ctime moves on every write and cannot be set back).
  Any change, a file added or removed, or another ncclscope cache format invalidates the entry.
- ``collectives.parquet``, ``heartbeats.parquet``: the tables.
- ``run.json``: everything else in ``Run`` (job, communicators, ...), as tagged JSON, except
  ``events.json``: the log events, read on first use (a re-open with current findings needs none).
- ``report.json``: the ``analyze --json`` line, under a hash of all the code it depends on: an
  unchanged folder's ``--json`` re-open prints it without decoding anything else.
- ``analysis.json``: the findings and the decision, with a hash of the detectors' code; when the
  detectors changed, they run again on the cached run. A re-open that finds them current reads no
  table at all: ``Run.collectives`` is then read from Parquet only when something asks for it.

Only Parquet and JSON are read back, never pickle, each through ``safe_io`` (a regular file, no
link followed, never blocking). Reading or writing the cache never fails or hangs an analysis: a
FIFO, a cut file, 200,000 levels of nesting or a value of the wrong type is a miss.
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from io import BufferedReader
from typing import TYPE_CHECKING, Any

from . import model, safe_io
from .input_names import MAX_FILES, SKIP_DIRS, SKIP_NAMES
from .model import Run

if TYPE_CHECKING:  # a re-open that finds current findings reads no table: no pandas, no pyarrow
    import pandas as pd

FORMAT = 3
CACHE_DIRNAME = ".ncclscope-cache"  # the old in-folder cache: never read, and skipped by the input walk
_CLASSES: dict[str, type] = {
    name: obj for name, obj in vars(model).items() if isinstance(obj, type) and dataclasses.is_dataclass(obj)
}
_ENUMS: dict[str, type[enum.Enum]] = {
    name: obj for name, obj in vars(model).items() if isinstance(obj, type) and issubclass(obj, enum.Enum)
}


def _digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(files):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def code_digest() -> str:
    """Hash of the code that turns files into a Run: a parser change invalidates every entry."""
    global _DIGEST
    if _DIGEST is None:
        here = Path(__file__).resolve().parent
        _DIGEST = _digest([*here.glob("sources/**/*.py"), *here.glob("ingest/*.py"), *here.glob("model_build/*.py"), here / "model.py",
                           here / "fr_model.py", here / "cache.py", *here.glob("nccl/*.py")])
    return _DIGEST


def report_digest() -> str:
    """Hash of everything ``analyze --json``'s output depends on besides the inputs."""
    global _RDIGEST
    if _RDIGEST is None:
        here = Path(__file__).resolve().parent
        _RDIGEST = hashlib.sha256((code_digest() + analysis_digest() + _digest(
            [here / "report.py", here / "__init__.py"])).encode()).hexdigest()[:16]
    return _RDIGEST


def analysis_digest() -> str:
    """Hash of the code that turns a Run into findings and a decision (detectors, the rules, metrics, verdict)."""
    global _ADIGEST
    if _ADIGEST is None:
        here = Path(__file__).resolve().parent
        _ADIGEST = _digest([*here.glob("detectors/*.py"), *here.glob("rules/*.py"), *here.glob("metrics/*.py"),
                            here / "verdict.py", here / "analysis.py",
                            here / "model.py", *sorted(here.glob("nccl/*.py")), here / "nccl" / "failures.toml"])
    return _ADIGEST


_DIGEST: str | None = None
_ADIGEST: str | None = None
_RDIGEST: str | None = None


def input_key(paths: list[Path]) -> list[list[Any]] | None:
    """(path, size, mtime_ns) of every file the input names, in a stable order; None if one is missing.

    One ``os.scandir`` pass per folder: the folder listing gives the file type, so a run of 4,096
    rank logs costs one ``stat`` per file and no ``Path`` objects.
    """
    out: list[list[Any]] = []
    for root in paths:
        root = Path(root).resolve()
        if root.is_dir():
            if not _scan_key(str(root), out):
                return None
        elif root.is_file():
            st = root.stat()
            out.append([str(root), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
        else:
            return None
    return out


def _scan_key(folder: str, out: list[list[Any]]) -> bool:
    """Append the key rows of ``folder`` (same order and same files as ``ingest.files._walk``); False: too many."""
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return True
    subdirs = []
    for e in entries:
        name = e.name
        try:
            if e.is_symlink():
                continue
            if e.is_dir(follow_symlinks=False):
                if not name.startswith(".") and name != "__pycache__" and name not in SKIP_DIRS:
                    subdirs.append(e.path)
                continue
            if name in SKIP_NAMES or name.startswith(".") or not e.is_file(follow_symlinks=False):
                continue
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        out.append([e.path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
        if len(out) > MAX_FILES:
            return False
    # os.walk lists a folder's files before descending, in sorted order of subfolders
    return all(_scan_key(d, out) for d in subdirs)


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/ncclscope/runs`` (``~/.cache``), made 0700 if missing; raises
    ``safe_io.UnsafeFolder`` when it, or ``ncclscope`` above it, is not the user's alone, or when a folder
    above those belongs to another user or others can write to it (``safe_io.check_ancestors``)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ncclscope"
    safe_io.private_dir(base)
    return safe_io.private_dir(base / "runs")


def cache_dir(paths: list[Path]) -> Path:
    """Where the entry for ``paths`` lives: in the user's private cache, named by the inputs' paths."""
    h = hashlib.sha256("\0".join(str(Path(p).resolve()) for p in paths).encode()).hexdigest()[:20]
    return cache_root() / h


def _open(path: Path) -> BufferedReader:
    return safe_io.open_regular(path)


def _read_json(path: Path, **kw: Any) -> Any:
    with _open(path) as f:
        return json.loads(f.read(), **kw)


@dataclasses.dataclass
class Entry:
    """A cache hit: the run, and the findings and decision when the detectors' code is unchanged."""

    folder: Path
    run: Run
    findings: list[model.Finding] | None = None
    decision: Any = None  # verdict.Decision


class _CachedRun(Run):
    """A Run whose collectives table stays in Parquet, and its events in JSON, until something reads them."""

    def __init__(self, table: Path, events: Path, heartbeats: Path | None, **parts: Any) -> None:
        self._table: Path | None = table
        self._df: pd.DataFrame | None = None
        self._events_file: Path | None = events
        self._events: list[model.LogEvent] | None = None
        self.events_unreadable = False  # events.json was damaged when read
        self._hb_file: Path | None = heartbeats
        self._hb: pd.DataFrame | None = None
        super().__init__(collectives=None, events=None, **parts)  # type: ignore[arg-type]

    @property  # type: ignore[override]
    def heartbeats(self) -> pd.DataFrame | None:
        if self._hb is None and self._hb_file is not None:
            self._hb, self._hb_file = _read_table(self._hb_file), None
        return self._hb

    @heartbeats.setter
    def heartbeats(self, df: pd.DataFrame | None) -> None:
        if df is not None:
            self._hb, self._hb_file = df, None

    @property  # type: ignore[override]
    def events(self) -> list[model.LogEvent]:
        if self._events is None and self._events_file is not None:
            path, self._events_file = self._events_file, None
            try:
                self._events = _read_events(path)
            except (OSError, ValueError, TypeError, KeyError, RecursionError) as e:  # damaged since it was opened
                self._events, self.events_unreadable = [], True
                self.problems.append(f"{path}: cached events unreadable ({e}); analyse with --no-cache")
        return self._events  # type: ignore[return-value]

    @events.setter
    def events(self, ev: list[model.LogEvent] | None) -> None:
        if ev is not None:
            self._events, self._events_file = ev, None

    @property  # type: ignore[override]
    def collectives(self) -> pd.DataFrame:
        if self._df is None and self._table is not None:
            self._df, self._table = _read_table(self._table), None
        return self._df  # type: ignore[return-value]

    @collectives.setter
    def collectives(self, df: pd.DataFrame | None) -> None:
        if df is not None:
            self._df, self._table = df, None

    def timeline_summary(self) -> list[tuple[str, int, int]]:
        """From two columns of the Parquet table with pyarrow alone, while the table is not loaded
        (the text report's last line should not cost pandas and the whole table)."""
        if self._df is None and self._table is not None:
            try:
                import numpy as np
                import pyarrow.parquet as pq

                with _open(self._table) as f:
                    t = pq.ParquetFile(f).read(columns=["source", "rank"])
                src = t["source"].combine_chunks()  # dictionary-encoded, as written
                ranks = _ints(t["rank"].combine_chunks())
                codes = _ints(src.indices)
                out = []  # numpy on the codes: pyarrow's scalars and group_by would import pandas
                for i, name in enumerate(src.dictionary.to_pylist()):
                    mine = ranks[codes == i]
                    if len(mine):
                        distinct = int(np.count_nonzero(np.bincount(mine - mine.min()))) if len(mine) else 0
                        out.append((str(name), len(mine), distinct))
                return sorted(out)
            except Exception:  # noqa: BLE001 - pyarrow's own errors: the whole read says what is wrong
                pass
        return super().timeline_summary()


def _ints(arr: Any) -> Any:
    """A pyarrow integer array without nulls as a numpy view of its buffer (``to_numpy`` imports pandas)."""
    import numpy as np

    if arr.null_count or not str(arr.type).startswith(("int", "uint")):
        raise TypeError(f"not a plain integer column: {arr.type}")
    width = arr.type.bit_width // 8
    kind = "u" if str(arr.type).startswith("uint") else "i"
    return np.frombuffer(arr.buffers()[1], dtype=f"<{kind}{width}", count=len(arr), offset=arr.offset * width)


def _parquet_whole(path: Path) -> bool:
    """Starts and ends with Parquet's magic, and the footer length fits: a cut or emptied file is not
    whole (checked without pyarrow, which a re-open with current findings never imports)."""
    try:
        with _open(path) as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(4)
            f.seek(-8, os.SEEK_END)
            tail = f.read(8)
    except OSError:
        return False
    return head == b"PAR1" and tail[4:] == b"PAR1" and 12 + int.from_bytes(tail[:4], "little") <= size


def events_readable(run: Run) -> bool:
    """Whether the log events of a cached run, read on first use, can be read: a caller that needs
    them (a decision made again) treats a damaged ``events.json`` as a miss."""
    if not isinstance(run, _CachedRun):
        return True
    run.events  # noqa: B018 - read now
    return not run.events_unreadable


def _read_events(path: Path) -> list[model.LogEvent]:
    events = _read_json(path, object_hook=_decode)
    if not isinstance(events, list) or not all(isinstance(e, model.LogEvent) for e in events):
        raise ValueError(f"{path}: not a list of events")
    return events


def _read_table(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """Parquet -> DataFrame; dictionary-encoded columns come back as categoricals without a copy to strings."""
    import pyarrow.parquet as pq

    with _open(path) as f:
        return pq.read_table(f, columns=columns, use_threads=True).to_pandas()


def _current_dir(paths: list[Path]) -> Path | None:
    """The entry folder for ``paths`` if its key (format, parser code, every file's size and mtime)
    still matches, else None."""
    key = input_key(paths)
    if not key:
        return None
    try:
        d = cache_dir(paths)
        if safe_io.check_private_dir(d) is not None:
            return None
        stored = _read_json(d / "key.json")
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(stored, dict) or stored.get("format") != FORMAT or stored.get("code") != code_digest() \
            or stored.get("files") != key:
        return None
    return d


def open_entry(paths: list[Path], want_analysis: bool = False) -> Entry | None:
    """The cached entry for ``paths`` if its key still matches the files, else None.

    With ``want_analysis`` and current findings stored, the collectives table is not read: it is
    checked (its Parquet footer) and read on first use.
    """
    d = _current_dir(paths)
    if d is None:
        return None
    try:
        parts = _read_json(d / "run.json", object_hook=_decode)
        if not isinstance(parts, dict):
            return None
        hb_file = d / "heartbeats.parquet" if (d / "heartbeats.parquet").exists() else None
        findings = decision = None
        if want_analysis and (d / "analysis.json").exists():
            found = _read_json(d / "analysis.json", object_hook=_decode)
            if isinstance(found, dict) and found.get("code") == analysis_digest():
                findings, decision = _checked_analysis(found)
        if findings is not None:
            # a missing or cut table is a miss now, not later: its Parquet footer must be whole
            if not all(_parquet_whole(f) for f in (d / "collectives.parquet", hb_file) if f is not None):
                return None
            if not (d / "events.json").is_file():
                return None
            run: Run = _CachedRun(d / "collectives.parquet", d / "events.json", hb_file, **parts)
        else:
            run = Run(collectives=_read_table(d / "collectives.parquet"), events=_read_events(d / "events.json"),
                      heartbeats=_read_table(hb_file) if hb_file else None, **parts)
        if not isinstance(run.job, model.Job):
            return None
        return Entry(d, run, findings, decision)
    except (OSError, ValueError, TypeError, KeyError, ImportError, RecursionError):
        return None
    except Exception:  # noqa: BLE001 - pyarrow raises its own types for damaged files: a miss
        return None


def _checked_analysis(found: dict[str, Any]) -> tuple[list[model.Finding], Any]:
    """The stored findings and decision, if they are of the types the report expects (else ValueError)."""
    from .verdict import Decision

    findings, decision = found.get("findings"), found.get("decision")
    if not isinstance(findings, list) or not all(isinstance(f, model.Finding) for f in findings) \
            or not isinstance(decision, Decision):
        raise ValueError("stored analysis of the wrong shape")
    return findings, decision


def open_report(paths: list[Path]) -> str | None:
    """The stored ``analyze --json`` line for ``paths`` if the files and all the code it depends on
    are unchanged, else None. Reads two small files; decodes no run."""
    d = _current_dir(paths)
    if d is None:
        return None
    try:
        with _open(d / "report.json") as f:
            head, _, text = f.read().decode().partition("\n")
        if head != report_digest() or not text.startswith("{"):
            return None
        line = text.rstrip("\n")
        return line if isinstance(json.loads(line), dict) else None  # whole, one object
    except (OSError, ValueError, RecursionError):
        return None


def load(paths: list[Path]) -> Run | None:
    """The cached Run for ``paths`` if its key still matches the files, else None."""
    entry = open_entry(paths)
    return entry.run if entry else None


def store(paths: list[Path], run: Run, findings: list[model.Finding] | None = None,
          decision: Any = None, report: str | None = None) -> Path | None:
    """Write the entry (and the analysis, when given); returns its folder, or None when nothing could be written."""
    key = input_key(paths)
    if not key:
        return None
    fields = {f.name: getattr(run, f.name) for f in dataclasses.fields(run)
              if f.name not in ("collectives", "heartbeats", "memo", "events")}
    for d in _candidates(paths):
        tmp = None
        try:
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=d.parent))
            # zstd: a third of snappy's size at 4,096 ranks, and faster to read back on this data
            run.collectives.to_parquet(tmp / "collectives.parquet", index=False, compression="zstd")
            if run.heartbeats is not None:
                run.heartbeats.to_parquet(tmp / "heartbeats.parquet", index=False, compression="zstd")
            (tmp / "run.json").write_text(json.dumps(_encode(fields), allow_nan=True))
            (tmp / "events.json").write_text(json.dumps(_encode(list(run.events)), allow_nan=True))
            if findings is not None:
                _write_analysis(tmp, findings, decision, report)
            (tmp / "key.json").write_text(json.dumps({"format": FORMAT, "code": code_digest(), "files": key}))
            if d.is_symlink() or d.is_file():
                d.unlink()
            elif d.exists():
                shutil.rmtree(d, ignore_errors=True)
            os.replace(tmp, d)
            return d
        except Exception:  # noqa: BLE001 - a cache that cannot be written is no cache, not an error
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            continue
    return None


def store_analysis(folder: Path, findings: list[model.Finding], decision: Any, report: str | None = None) -> bool:
    """Add the findings and decision to an existing entry (the detectors changed since it was written)."""
    try:
        _write_analysis(folder, findings, decision, report)
        return True
    except Exception:  # noqa: BLE001 - a cache that cannot be written is no cache, not an error
        return False


def _write_analysis(folder: Path, findings: list[model.Finding], decision: Any, report: str | None) -> None:
    if safe_io.check_private_dir(folder) is not None:
        raise safe_io.UnsafeFolder(f"{folder}: not a private cache folder")
    safe_io.write_replace(folder / "analysis.json", json.dumps(_encode(
        {"code": analysis_digest(), "findings": list(findings), "decision": decision}), allow_nan=True))
    if report is not None:  # report.json: the digest it was made under, a newline, the --json line
        safe_io.write_replace(folder / "report.json", report_digest() + "\n" + report + "\n")
    else:
        (folder / "report.json").unlink(missing_ok=True)


def _candidates(paths: list[Path]) -> list[Path]:
    """The one place an entry may be written: the user's private cache (none if it is not private)."""
    try:
        return [cache_dir(paths)]
    except OSError:
        return []


def _encode(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {"__dc__": type(v).__name__, **{f.name: _encode(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, enum.Enum):
        return {"__enum__": type(v).__name__, "v": v.value}
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v):
            return {"__d__": None, **{k: _encode(x) for k, x in v.items()}} if "__dc__" in v or "__enum__" in v or "__rows__" in v \
                else {k: _encode(x) for k, x in v.items()}
        return {"__kv__": [[_encode(k), _encode(x)] for k, x in v.items()]}
    if isinstance(v, tuple):
        return {"__t__": _encode_list(v)}
    if isinstance(v, (set, frozenset)):
        return {"__s__": [_encode(x) for x in v], "frozen": isinstance(v, frozenset)}
    if isinstance(v, list):
        return _encode_list(v)
    if hasattr(v, "item") and callable(v.item):  # numpy scalars
        return v.item()
    if isinstance(v, Path):
        return str(v)
    return v


def _encode_list(items: list[Any] | tuple[Any, ...]) -> Any:
    """A list; a run of dataclasses of one type (connections, events, processes) as rows of field
    values under one tag, so that reading it back makes no dict and no hook call per object."""
    if len(items) > 1:
        cls = type(items[0])
        if dataclasses.is_dataclass(cls) and cls.__name__ in _CLASSES and all(type(x) is cls for x in items):
            names = [f.name for f in dataclasses.fields(cls)]
            return {"__rows__": cls.__name__, "fields": names,
                    "rows": [[_encode(getattr(x, n)) for n in names] for x in items]}
    return [_encode(x) for x in items]


def _decode(o: dict[str, Any]) -> Any:
    if "__d__" in o:  # a plain dict whose keys look like tags
        o.pop("__d__")
        return o
    if "__rows__" in o:
        cls = _CLASSES[o["__rows__"]]
        names = o["fields"]  # by name: some classes are keyword-only
        return [cls(**dict(zip(names, row, strict=True))) for row in o["rows"]]
    if "__dc__" in o:
        name = o.pop("__dc__")
        if name == "Decision":
            from .verdict import Decision

            return Decision(**o)
        cls = _CLASSES[name]
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
    return o


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v
