"""Server-side data for the dashboard: analyses cached by key, background parsing, uploads, live folders.

The browser only ever holds a key (a random token). Everything heavy (the ``Analysis``, the log
line index, figures) lives here, in one ``RunStore`` per app. File paths never come from the
browser: uploads are written into a folder this module creates, under names it sanitises, and
the log view reads only files the analysis itself listed, looked up by their display name.
"""
from __future__ import annotations

import atexit
import base64
import binascii
import enum
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from ncclscope import archive
from ncclscope.alerts_file import ALERTS_FILE, newest_alert
from ncclscope.analysis import Analysis, analyze_paths
from ncclscope.ingest import SKIP_NAMES, InputError, iter_lines

from . import uploads
from ncclscope.sources.hook_jsonl import HookType

MAX_UPLOAD_BYTES = 512 * 1024 * 1024  # decoded bytes, all files of one upload together
MAX_EXTRACT_BYTES = 4 * 1024**3  # unpacked bytes, all archives of one upload together
MAX_EXTRACT_FILES = 20_000  # unpacked files, all archives of one upload together
MAX_ENTRIES = 8  # analyses kept in memory; the oldest is dropped first
PINNED_MEMO = frozenset({"log_index"})  # never dropped from an entry's memo: an upload's files are gone once indexed
MAX_LOG_LINES = 1_000_000  # the log view indexes at most this many lines per run
LOG_TEXT_CHARS = 300
TEXT_FORMATS = {"log", "ras", "env", "nccl_tests", "jsonl"}


class UploadError(ValueError):
    """An upload refused, with a message fit for the page."""


class JobState(enum.StrEnum):
    """Where an upload's analysis is."""

    RECEIVING = "receiving"
    QUEUED = "queued"
    EXTRACTING = "extracting"
    PARSING = "parsing"
    ANALYSING = "analysing"
    DONE = "done"
    ERROR = "error"


@dataclass
class JobStatus:
    key: str
    label: str
    state: JobState = JobState.QUEUED
    done: int = 0
    total: int = 0
    message: str = ""
    started: float = field(default_factory=time.time)
    finished: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "state": self.state, "done": self.done, "total": self.total,
                "message": self.message, "elapsed_s": round((self.finished or time.time()) - self.started, 2)}


@dataclass
class Entry:
    """One analysed run and what the pages derived from it (memoised per key)."""

    key: str
    label: str
    analysis: Analysis
    files: dict[str, Path]  # display name (as in evidence) -> file on this server; empty once an upload's are deleted
    parse_s: float
    memo: dict[Hashable, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def cached(self, name: Hashable, build: Callable[[], Any]) -> Any:
        """``build()`` once per (entry, name); figures and tables are memoised this way."""
        with self.lock:
            if name in self.memo:
                return self.memo[name]
        value = build()
        with self.lock:
            self.memo.setdefault(name, value)
            if len(self.memo) > 64:
                self.memo.pop(next(k for k in self.memo if k not in PINNED_MEMO))
        return value


def _safe_name(name: str, taken: set[str]) -> str:
    """A browser-supplied file name reduced to a plain basename of safe characters, unique in ``taken``."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = re.sub(r"[^A-Za-z0-9._-]", "_", base).lstrip(".")[:120] or "upload"
    out, i = base, 1
    while out in taken:
        out = f"{i}_{base}"
        i += 1
    taken.add(out)
    return out


def decode_upload(contents: str) -> bytes:
    """A dcc.Upload data URL (``data:<type>;base64,<data>``) -> bytes (uploads are decoded into their files
    a chunk at a time instead: ``uploads.decode_to``)."""
    if not isinstance(contents, str) or "," not in contents:
        raise UploadError("the upload arrived empty or malformed")
    try:
        return base64.b64decode(contents.split(",", 1)[1], validate=False)
    except (binascii.Error, ValueError) as e:
        raise UploadError(f"the upload is not valid base64 ({e})") from None


def folder_signature(root: Path) -> tuple[tuple[str, int, int], ...]:
    """(name, size, mtime_ns) of every input file under ``root``: cheap change detection for live mode."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fn in filenames:
            if fn in SKIP_NAMES or fn.startswith("."):
                continue
            try:
                st = os.stat(os.path.join(dirpath, fn), follow_symlinks=False)
            except OSError:
                continue
            out.append((os.path.relpath(os.path.join(dirpath, fn), root), st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


_CURRENT: list[RunStore] = []


def set_current(rs: RunStore) -> None:
    """Make ``rs`` the store the pages' callbacks use (one app per process is served)."""
    _CURRENT[:] = [rs]


def current() -> RunStore:
    if not _CURRENT:
        raise RuntimeError("no dashboard app has been created")
    return _CURRENT[0]


class RunStore:
    """Analyses by key, the jobs that produce them, and the files behind them.

    ``submit`` parses in a background thread and reports progress through ``status(key)``;
    ``get(key)`` returns the finished ``Entry``. ``close()`` waits for the threads and removes
    the upload folder.
    """

    def __init__(self, workdir: Path | None = None, max_entries: int = MAX_ENTRIES):
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="ncclscope-serve-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self._own_workdir:  # uploads are deleted however the server ends (close, exit, SIGTERM via serve)
            atexit.register(shutil.rmtree, self.workdir, True)
        self.max_entries = max_entries
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._jobs: dict[str, JobStatus] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        # uploads: one memory and one disk budget for all of them together, and each upload's digest -> its key
        self.memory = uploads.Budget("memory", uploads.MEMORY_BUDGET_BYTES)
        self.disk = uploads.Budget("disk space", uploads.DISK_BUDGET_BYTES)
        self._by_digest: dict[str, str] = {}
        self.default_key: str | None = None
        # live mode
        self.live_dir: Path | None = None
        self._live_sig: tuple | None = None
        self._live_key: str | None = None  # newest finished live analysis
        self._live_pending: str | None = None
        self._live_count = 0

    # -- jobs -----------------------------------------------------------------------------------
    def submit(self, paths: list[Path], label: str, key: str | None = None,
               prepare: Callable[[JobStatus], list[Path]] | None = None) -> str:
        """Start analysing ``paths`` in a background thread; returns the key at once."""
        job = JobStatus(key or secrets.token_urlsafe(12), label)
        with self._lock:
            self._jobs[job.key] = job
        return self._start(job, paths, prepare)

    def _start(self, job: JobStatus, paths: list[Path], prepare: Callable[[JobStatus], list[Path]] | None = None,
               cleanup: Callable[[], None] | None = None) -> str:
        """Analyse in a background thread for ``job`` (registered); ``cleanup`` runs after, however it ended."""
        t = threading.Thread(target=self._work, args=(job, paths, prepare, cleanup),
                             name=f"ncclscope-parse-{job.key[:6]}", daemon=True)
        with self._lock:
            self._threads[job.key] = t
        t.start()
        return job.key

    def analyze(self, paths: list[Path], label: str, key: str | None = None) -> str:
        """Analyse in the calling thread (startup, tests); raises what the analysis raises."""
        key = self.submit(paths, label, key)
        self.wait(key)
        job = self._jobs[key]
        if job.state == JobState.ERROR:
            raise InputError(job.message)
        return key

    def _work(self, job: JobStatus, paths: list[Path], prepare: Callable[[JobStatus], list[Path]] | None,
              cleanup: Callable[[], None] | None = None) -> None:
        t0 = time.perf_counter()
        entry: Entry | None = None
        try:
            if prepare is not None:
                paths = prepare(job)
            paths = [self._unpack(p, job) if p.is_file() and archive.is_archive(p) else p for p in paths]
            job.state = JobState.PARSING

            def progress(i: int, n: int) -> None:
                job.done, job.total = i, n
                job.message = f"parsed {i} of {n} files"

            analysis = analyze_paths(paths, progress=progress)
            files = _file_map(paths, analysis)
            entry = Entry(job.key, job.label, analysis, files, time.perf_counter() - t0)
            with self._lock:
                self._entries[job.key] = entry
                protected = {self.default_key, self._live_key, job.key}
                for old in [k for k in self._entries if k not in protected][:max(0, len(self._entries) - self.max_entries)]:
                    self._entries.pop(old)
            d = analysis.decision
            job.message = f"{d.verdict.value}: {d.headline}"
            job.state = JobState.DONE
            try:
                log_index(entry)  # after the entry is published: the pages show the analysis while the log view indexes
            except Exception as e:  # noqa: BLE001 - the log view says it has no index; the analysis stands
                job.message += f" (the log view could not index the logs: {type(e).__name__})"
        except (InputError, archive.ArchiveError, UploadError, OSError) as e:
            job.state, job.message = JobState.ERROR, str(e)
        except Exception as e:  # noqa: BLE001 - a parse thread must report, never die silently
            job.state, job.message = JobState.ERROR, f"analysis failed: {type(e).__name__}: {e}"
        finally:
            if cleanup is not None:  # an upload's files: deleted once analysed and indexed (the analysis stays)
                cleanup()
                if entry is not None:
                    entry.files = {}
            job.finished = time.time()

    def _unpack(self, path: Path, job: JobStatus) -> Path:
        job.state, job.message = JobState.EXTRACTING, f"unpacking {path.name}"
        dest = Path(tempfile.mkdtemp(prefix="x-", dir=self.workdir))
        return archive.extract(path, dest, max_total=MAX_EXTRACT_BYTES)

    def busy(self, key: str | None) -> bool:
        """Whether the job of ``key`` is still working (parsing, or indexing the log view behind the analysis)."""
        t = self._threads.get(key or "")
        return t is not None and t.is_alive()

    def status(self, key: str | None) -> dict[str, Any] | None:
        job = self._jobs.get(key or "")
        return job.to_json() if job else None

    def get(self, key: str | None) -> Entry | None:
        if not key:
            return None
        with self._lock:
            return self._entries.get(key)

    def analysed(self) -> list[tuple[str, str]]:
        """(key, label) of every analysis held, oldest first: the runs the Diff page compares."""
        with self._lock:
            return [(k, e.label) for k, e in self._entries.items()]

    def wait(self, key: str, timeout: float = 120.0) -> None:
        t = self._threads.get(key)
        if t is not None:
            t.join(timeout)

    def close(self) -> None:
        for t in list(self._threads.values()):
            t.join(30)
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- uploads --------------------------------------------------------------------------------
    def submit_upload(self, filenames: list[str], contents: list[str], max_bytes: int = MAX_UPLOAD_BYTES) -> str:
        """Write the uploaded files into a fresh server folder and analyse it in the background; the folder is
        deleted once analysed (the analysis stays). The same files uploaded again are that analysis' key.

        Raises UploadError (nothing written) when the files are over ``max_bytes`` in all, or when all
        uploads together would hold more than the disk budget (``uploads.DISK_BUDGET_BYTES``).
        """
        if not contents:
            raise UploadError("no files in the upload")
        try:  # base64 is 4/3 of the data: refuse before decoding anything
            sizes = [uploads.decoded_size(c) for c in contents]
        except ValueError as e:
            raise UploadError(str(e)) from None
        approx = sum(sizes)
        if approx > max_bytes + 4 * len(contents):
            raise UploadError(f"upload refused: {approx / 1e6:.0f} MB is over the {max_bytes / 1e6:.0f} MB limit")
        taken: set[str] = set()
        names = [_safe_name(n, taken) for n in list(filenames or [])[:len(contents)]]
        names += [_safe_name("upload", taken) for _ in range(len(contents) - len(names))]
        digest = uploads.digest(names, contents)
        label = names[0] if len(names) == 1 else f"{len(names)} uploaded files"
        disk = uploads.Reservation(self.disk)
        with self._lock:
            same = self._by_digest.get(digest)
            if same is not None and self._still_served(same):
                return same  # identical files: analysed once
            if not disk.grow(approx):
                raise UploadError(self.disk.refusal(approx))
            job = JobStatus(secrets.token_urlsafe(12), label, state=JobState.RECEIVING)
            self._jobs[job.key] = job
            self._by_digest[digest] = job.key
        folder = self.workdir / f"u-{job.key}"

        def forget() -> None:  # nothing of the upload stays on disk, and its bytes go back to the budget
            shutil.rmtree(folder, ignore_errors=True)
            disk.release()

        try:
            folder.mkdir()
            for name, c in zip(names, contents, strict=True):
                with open(folder / name, "xb") as out:
                    uploads.decode_to(c, out)
        except (OSError, ValueError) as e:
            forget()
            job.state, job.message, job.finished = JobState.ERROR, f"the upload could not be stored: {e}", time.time()
            raise UploadError(f"upload refused: {e}") from None

        def unpack_archives(job: JobStatus) -> list[Path]:
            # archives are unpacked in place (through analyzer.archive's limits), then removed; one budget
            # of bytes and files for all the archives of the upload, its bytes taken from the disk budget too
            budget = uploads.DiskShare(disk, MAX_EXTRACT_BYTES, MAX_EXTRACT_FILES)
            for name in names:
                p = folder / name
                if archive.is_archive(p):
                    job.state, job.message = JobState.EXTRACTING, f"unpacking {name}"
                    try:
                        archive.extract(p, folder / f"{name}.d", max_total=MAX_EXTRACT_BYTES, budget=budget)
                    except archive.ArchiveError:
                        shutil.rmtree(folder, ignore_errors=True)  # nothing of a refused upload stays on disk
                        raise
                    p.unlink()
            return [folder]

        job.state = JobState.QUEUED
        return self._start(job, [folder], prepare=unpack_archives, cleanup=forget)

    def _still_served(self, key: str) -> bool:
        """Whether the analysis of ``key`` is under way or kept (an upload identical to its files is it)."""
        job = self._jobs.get(key)
        if job is None or job.state == JobState.ERROR:
            return False
        return job.state != JobState.DONE or key in self._entries

    # -- live folders ---------------------------------------------------------------------------
    def start_live(self, folder: Path) -> None:
        self.live_dir = folder

    def live_poll(self) -> tuple[str | None, dict[str, Any] | None]:
        """Called by the page every few seconds: re-analyse when the folder changed (by mtime).

        Returns the newest finished live key (None before the first analysis) and the newest alert.
        """
        if self.live_dir is None:
            return None, None
        pending = self._live_pending
        if pending is not None:
            st = self._jobs[pending]
            if st.state in (JobState.DONE, JobState.ERROR):
                self._live_pending = None
                if st.state == JobState.DONE:
                    self._live_key = pending
        elif self.live_dir.is_dir():
            sig = folder_signature(self.live_dir)
            if sig and sig != self._live_sig:
                self._live_sig = sig
                self._live_count += 1
                self._live_pending = self.submit([self.live_dir], f"live: {self.live_dir.name}",
                                                 f"live{self._live_count}-{secrets.token_urlsafe(6)}")
        return self._live_key, newest_alert(self.live_dir / ALERTS_FILE)  # a FIFO or a link there is never opened


def _file_map(paths: list[Path], analysis: Analysis) -> dict[str, Path]:
    """Display names from ``run.files`` -> files on this server (the same walk ingest made)."""
    names = {f for f, _ in analysis.run.files}
    out: dict[str, Path] = {}
    for root in paths:
        if root.is_dir():
            for name in names:
                p = root / name
                if archive.within(root, p) and p.is_file():
                    out.setdefault(name, p)
        elif root.name in names:
            out.setdefault(root.name, root.resolve())  # a link the user named: its target
    return out


# -- the log view ---------------------------------------------------------------------------------
NCCL_PREFIX = r"^(?:\[[^\]]*\] )?[\w.-]+:(\d+):\d+ \[\d+\] NCCL (INFO|WARN|TRACE) "  # optional timestamp
RANK_PREFIX = r"^\[[Rr]ank ?(\d+)\]"
TORCH_LEVEL = r"^(?:\[[Rr]ank ?\d+\]:)?\[([IWEF])\d{4} "
FILE_RANK_RE = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
FILE_PID_RE = re.compile(r"\.(\d+)\.nccl")
NCCL_SUBSYS = [  # first match wins: (substring in an NCCL line, subsystem); no match: INIT
    ("set by environment", "ENV"), ("NET/", "NET"), (" via NET", "NET"), ("via P2P", "P2P"), ("via SHM", "SHM"),
    ("P2P", "P2P"), ("SHM", "SHM"), ("RAS", "RAS"), ("Channel", "GRAPH"), ("Pattern", "GRAPH"),
    ("Trees", "GRAPH"), ("Ring", "GRAPH"), ("Tuning", "TUNING"), ("Algo", "TUNING"), ("opCount", "COLL"),
    ("AllReduce", "COLL"), ("AllGather", "COLL"), ("Broadcast", "COLL"), ("ReduceScatter", "COLL"),
    ("Reduce:", "COLL"), ("Send", "P2P"), ("Recv", "P2P"), ("Plugin", "PLUGIN"), ("Proxy", "PROXY"),
]
TORCH_LEVELS = {"I": "INFO", "W": "WARN", "E": "ERROR", "F": "ERROR"}
LOG_COLUMNS = ["file", "line", "rank", "level", "subsys", "text"]
HOOK_RECORD = r'^\{\s*"type"\s*:\s*"(\w+)"'  # a record of ncclscope's hook (ncclscope-rank<R>.jsonl)
HOOK = "HOOK"  # its subsystem in the log view
HEARTBEAT = "HEARTBEAT"  # its once-a-second "hb" record: most of its lines, hidden on the Logs page unless asked for
FILE_ORDER = {"log": 0, "jsonl": 2}  # the log view lists NCCL / PyTorch / launcher logs first, hook records last


def classify_lines(text: pd.Series, file_rank: np.ndarray, pid_rank: dict[int, int]) -> pd.DataFrame:
    """(rank, level, subsys) of every line, vectorised (pyarrow regexes, no Python loop per line).

    rank: the NCCL prefix's pid, else a ``[rankN]`` prefix, else the file's rank (from its name), else -1.
    level: NCCL INFO/WARN/TRACE, PyTorch's I/W/E/F letter, ERROR for tracebacks and errors, else "-".
    subsys: NCCL's subsystem guessed from the message (NCCL prints none at INFO), TORCH, TORCHRUN, PYTHON, OTHER.
    """
    n = len(text)
    nccl = text.str.extract(NCCL_PREFIX)
    is_nccl = nccl[1].notna().to_numpy()
    pid = pd.to_numeric(nccl[0], errors="coerce").to_numpy()
    rank = np.asarray(file_rank, dtype=np.int64).copy()
    prefix_rank = pd.to_numeric(text.str.extract(RANK_PREFIX)[0], errors="coerce").to_numpy()
    has_prefix = np.isfinite(prefix_rank)
    rank[has_prefix] = prefix_rank[has_prefix].astype(np.int64)
    if pid_rank and is_nccl.any():
        mapped = pd.Series(pid[is_nccl]).map(pid_rank).to_numpy(dtype=float)
        sub_rank = rank[is_nccl]
        ok = np.isfinite(mapped)
        sub_rank[ok] = mapped[ok].astype(np.int64)
        rank[is_nccl] = sub_rank
    torch_lv = text.str.extract(TORCH_LEVEL)[0].map(TORCH_LEVELS)
    is_torch = torch_lv.notna().to_numpy() & ~is_nccl
    elastic = (text.str.contains("torch.distributed.elastic", regex=False) | text.str.contains("torchrun", regex=False)
               | text.str.match(r"^(time|host|rank): ")).fillna(False).to_numpy(dtype=bool)
    errorish = (text.str.contains("Traceback", regex=False) | text.str.contains(r"\w(?:Error|Exception)\b")
                | text.str.contains("exitcode", regex=False)).fillna(False).to_numpy(dtype=bool)
    level = np.full(n, "-", dtype=object)
    level[errorish] = "ERROR"
    level[is_torch] = torch_lv.to_numpy()[is_torch]
    level[is_nccl] = nccl[1].to_numpy()[is_nccl]
    subsys = np.full(n, "OTHER", dtype=object)
    subsys[errorish] = "PYTHON"
    subsys[elastic & ~is_torch] = "TORCHRUN"
    subsys[is_torch] = "TORCH"
    if is_nccl.any():
        nt = text[is_nccl]
        conds = [nt.str.contains(k, regex=False).fillna(False).to_numpy(dtype=bool) for k, _ in NCCL_SUBSYS]
        subsys[is_nccl] = np.select(conds, [v for _, v in NCCL_SUBSYS], default="INIT")
    warn_words = text.str.contains("NCCL WARN", regex=False).fillna(False).to_numpy(dtype=bool) & ~is_nccl
    level[warn_words] = "WARN"
    _mark_hook_records(text, subsys, ~is_nccl)
    return pd.DataFrame({"rank": rank.astype(np.int32), "level": level, "subsys": subsys})


def _mark_hook_records(text: pd.Series, subsys: np.ndarray, candidates: np.ndarray) -> None:
    """``subsys`` of the hook's JSON records set to HOOK, and of its heartbeats to HEARTBEAT (in place)."""
    maybe = candidates & text.str.startswith("{").fillna(False).to_numpy(dtype=bool)
    if not maybe.any():
        return
    kind = text[maybe].str.extract(HOOK_RECORD)[0]
    found = kind.notna().to_numpy()
    at = np.flatnonzero(maybe)
    subsys[at[found]] = HOOK
    subsys[at[found & (kind == HookType.HB).fillna(False).to_numpy(dtype=bool)]] = HEARTBEAT


def build_log_index(entry: Entry, max_lines: int = MAX_LOG_LINES) -> pd.DataFrame:
    """Every line of the run's text files as a table (file, line, rank, level, subsys, text)."""
    run = entry.analysis.run
    pid_rank = {p.pid: p.rank for p in run.job.processes if p.rank is not None}
    fmts = dict(run.files)
    names: list[str] = []
    file_codes: list[np.ndarray] = []
    linenos: list[int] = []
    texts: list[str] = []
    file_ranks: list[np.ndarray] = []
    for name in sorted(entry.files, key=lambda n: (FILE_ORDER.get(fmts.get(n, ""), 1), n)):
        if fmts.get(name) not in TEXT_FORMATS or len(texts) >= max_lines:
            continue
        fr = FILE_RANK_RE.search(name)
        fp = FILE_PID_RE.search(name)
        frank = int(fr.group(1)) if fr else (pid_rank.get(int(fp.group(1)), -1) if fp else -1)
        before = len(texts)
        try:
            for lineno, raw in iter_lines(entry.files[name]):
                linenos.append(lineno)
                texts.append(raw.rstrip("\r\n")[:LOG_TEXT_CHARS])
                if len(texts) >= max_lines:
                    break
        except OSError:  # swapped for a FIFO or a link since it was analysed: not shown, never waited on
            del linenos[before:], texts[before:]
        k = len(texts) - before
        file_codes.append(np.full(k, len(names), dtype=np.int32))
        file_ranks.append(np.full(k, frank, dtype=np.int64))
        names.append(name)
    if not texts:
        return pd.DataFrame({"file": pd.Categorical([]), "line": np.array([], dtype=np.int64),
                             "rank": np.array([], dtype=np.int32), "level": pd.Categorical([]),
                             "subsys": pd.Categorical([]), "text": pd.Series([], dtype="string[pyarrow]")})
    text = pd.Series(texts, dtype="string[pyarrow]")
    cls = classify_lines(text, np.concatenate(file_ranks), pid_rank)
    df = pd.DataFrame({
        "file": pd.Categorical.from_codes(np.concatenate(file_codes), categories=names),
        "line": np.asarray(linenos, dtype=np.int64), "rank": cls["rank"].to_numpy(),
        "level": pd.Categorical(cls["level"]), "subsys": pd.Categorical(cls["subsys"]), "text": text,
    })
    return df


def log_index(entry: Entry) -> pd.DataFrame:
    return entry.cached("log_index", lambda: build_log_index(entry))


def log_index_ready(entry: Entry) -> pd.DataFrame | None:
    """The log index if it is built, else None (it is being built behind the analysis: never build it twice)."""
    with entry.lock:
        return entry.memo.get("log_index")


def filter_logs(df: pd.DataFrame, file: str | None = None, ranks: list[int] | None = None,
                levels: list[str] | None = None, subsys: list[str] | None = None,
                search: str | None = None, hidden: Collection[str] = ()) -> pd.DataFrame:
    """The rows matching every filter given (None / empty = no filter); search is a plain substring.
    ``hidden``: subsystems left out unless ``subsys`` names them (the Logs page hides HEARTBEAT)."""
    mask = np.ones(len(df), dtype=bool)
    if not len(df):
        return df
    if file:
        mask &= (df["file"] == file).to_numpy()
    if ranks:
        mask &= df["rank"].isin(ranks).to_numpy()
    if levels:
        mask &= df["level"].isin(levels).to_numpy()
    if subsys:
        mask &= df["subsys"].isin(subsys).to_numpy()
    elif hidden:
        mask &= ~df["subsys"].isin(list(hidden)).to_numpy()
    if search:
        mask &= df["text"].str.contains(search, case=False, regex=False).fillna(False).to_numpy(dtype=bool)
    return df[mask]


def page_of(df: pd.DataFrame, page: int, size: int) -> list[dict[str, Any]]:
    """One page of rows as records: only this page ever travels to the browser."""
    part = df.iloc[page * size:(page + 1) * size]
    return [{"file": str(f), "line": int(ln), "rank": int(r), "level": str(lv), "subsys": str(sb), "text": str(t)}
            for f, ln, r, lv, sb, t in zip(part["file"], part["line"], part["rank"], part["level"], part["subsys"],
                                           part["text"], strict=False)]


def page_with_line(df: pd.DataFrame, file: str, line: int, size: int) -> int:
    """The page (of ``df``) that holds ``file:line``, or the nearest line after it; 0 if none."""
    pos = np.flatnonzero(((df["file"] == file) & (df["line"] >= line)).to_numpy())
    return int(pos[0] // size) if len(pos) else 0
