"""PyTorch's debug server as a live source: ``watch DIR --debug-server URL``.

torch 2.10+ ships ``torch.distributed.debug.start_debug_server(port=25999, dump_interval=60.0, ...)``: every rank
starts a worker HTTP server (C++, its address kept in the job's TCPStore), rank 0 a frontend (a separate process)
that, on each request, asks every worker for its Flight Recorder state and renders what they return. Its pages
(torch 2.13, ``torch/distributed/debug/_debug_handlers.py``): ``/fr_trace`` (the tables the Flight Recorder
analyser builds across ranks: groups, memberships, collectives, NCCL calls) and ``/fr_trace_json`` (each rank's own
dump: ``<h2>Rank N: http://host:port/handler/fr_trace_json?</h2>`` then ``<pre>`` and the dump's JSON, or ``<p>Failed
to fetch: status=503</p>`` and the error); ``/fr_trace_nccl_json`` the same for NCCL's recorder (active entries
only). ``dump_dir`` / ``dump_interval`` only make the frontend write the tables to files every interval.

This module polls ``/fr_trace_json`` and ``/fr_trace_nccl_json`` and turns each rank's dump into the records the
monitor folds into its state (``stall.apply``), as the hook's would be: the collectives each rank enqueued, those it
completed (``state`` completed, or ``retired``: gloo's recorder never marks them completed), its process groups'
counters (``pg_status``) and that it answered now. A rank that did not answer sends nothing and goes stale.

What it will fetch: only the host named (``25999`` or ``:25999`` is 127.0.0.1), over http(s), never through a proxy,
never following a redirect to another scheme, host or port, at most ``MAX_BYTES`` a page within ``TIMEOUT_S``.
"""
from __future__ import annotations

import html
import http.client
import json
import math
import re
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

from ..sources.flight_recorder import fr_from_obj
from ..sources.hook_jsonl import HookType
from ..sources.records import FrDump

DEFAULT_HOST = "127.0.0.1"
ENDPOINTS = ("/fr_trace_json", "/fr_trace_nccl_json")  # the CPU (gloo, ...) recorder's dumps, NCCL's
MAX_BYTES = 64 << 20  # a page holds every rank's dump: 2,000 entries of ~1 KB each a rank, 32 ranks
TIMEOUT_S = 30.0  # the whole request; the frontend itself waits up to fetch_timeout (60 s) for a slow worker
INTERVAL_S = 2.0  # between polls: each one makes every rank dump its recorder (a few ms a rank)
MAX_REDIRECTS = 3
CHUNK = 1 << 16
MAX_ERRORS = 32

SECTION_RE = re.compile(r"<h2>Rank (?P<rank>\d{1,7}): (?P<addr>[^<]{0,2000})</h2>")
FAILED_RE = re.compile(r"<p>Failed to fetch: status=(?P<status>\d{3})</p>")
# c10::ScalarType names the recorder prints, as the hook names dtypes (str(torch.float32) without "torch.")
DTYPES = {"Float": "float32", "Half": "float16", "BFloat16": "bfloat16", "Double": "float64", "Int": "int32",
          "Long": "int64", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool",
          "Float8_e4m3fn": "float8_e4m3fn", "Float8_e5m2": "float8_e5m2"}


class DebugServerError(ValueError):
    """A URL refused, or a page that could not be fetched as asked; the message says which."""


@dataclass(frozen=True, slots=True)
class ServerUrl:
    """Where the frontend answers: the one scheme, host and port this source ever connects to."""

    scheme: str  # http | https
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def same_origin(self, url: str) -> bool:
        try:  # a malformed URL ("http://[" from a server's redirect) raises in urlsplit or in its port
            u = urlsplit(url)
            port = u.port or (443 if u.scheme == "https" else 80)
        except ValueError:
            return False
        return u.scheme == self.scheme and (u.hostname or "").lower() == self.host.lower() and port == self.port


def parse_server_url(text: str) -> ServerUrl:
    """``25999``, ``:25999`` (127.0.0.1), ``host:25999``, ``http://host:25999`` or ``https://...``, with no path,
    query, fragment or credentials. Raises ``DebugServerError`` saying what is wrong."""
    t = text.strip()
    if t.isdigit() or (t.startswith(":") and t[1:].isdigit()):
        t = f"http://{DEFAULT_HOST}:{t.lstrip(':')}"
    elif "://" not in t:
        t = "http://" + t
    try:
        u = urlsplit(t)
    except ValueError as e:
        raise DebugServerError(f"{text}: not a URL ({e})") from None
    if u.scheme not in ("http", "https"):
        raise DebugServerError(f"{text}: only http:// or https:// (the debug server's frontend)")
    if u.username is not None or u.password is not None:
        raise DebugServerError(f"{text}: no credentials in the URL")
    if u.path not in ("", "/") or u.query or u.fragment:
        raise DebugServerError(f"{text}: give the server only (scheme, host, port): its pages are chosen here")
    if not u.hostname:
        raise DebugServerError(f"{text}: no host")
    try:
        port = u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        raise DebugServerError(f"{text}: the port is not a number from 1 to 65535") from None
    if not 0 < port < 65536:
        raise DebugServerError(f"{text}: the port is not a number from 1 to 65535")
    return ServerUrl(u.scheme, u.hostname, port)


def fetch(server: ServerUrl, path: str, timeout_s: float = TIMEOUT_S, max_bytes: int = MAX_BYTES,
          clock: Callable[[], float] = time.monotonic) -> bytes:
    """GET ``path`` from ``server``: a 200 answer's body, within ``timeout_s`` in all and ``max_bytes``; a redirect
    is followed only to the same scheme, host and port. Raises ``DebugServerError`` (or ``OSError``)."""
    deadline = clock() + timeout_s
    for _ in range(MAX_REDIRECTS + 1):
        conn = _connection(server, max(0.1, deadline - clock()))
        try:
            conn.request("GET", path, headers={"Accept": "text/html", "Connection": "close"})
            resp = conn.getresponse()
            if resp.status in (301, 302, 303, 307, 308):
                target = urljoin(f"{server}{path}", resp.getheader("Location") or "")
                if not server.same_origin(target):
                    raise DebugServerError(f"{server}{path} redirects to {target[:200]}: another server, not followed")
                u = urlsplit(target)
                path = (u.path or "/") + (f"?{u.query}" if u.query else "")
                continue
            if resp.status != 200:
                raise DebugServerError(f"{server}{path}: HTTP {resp.status} {resp.reason}"[:300])
            return _read_bounded(resp, conn, deadline, max_bytes, clock, f"{server}{path}")
        finally:
            conn.close()
    raise DebugServerError(f"{server}: more than {MAX_REDIRECTS} redirects")


def _connection(server: ServerUrl, timeout_s: float) -> http.client.HTTPConnection:
    """A connection to the server itself: http.client uses no proxy (urllib would take one from the environment)."""
    if server.scheme == "https":
        return http.client.HTTPSConnection(server.host, server.port, timeout=timeout_s,
                                           context=ssl.create_default_context())
    return http.client.HTTPConnection(server.host, server.port, timeout=timeout_s)


def _read_bounded(resp: http.client.HTTPResponse, conn: http.client.HTTPConnection, deadline: float, max_bytes: int,
                  clock: Callable[[], float], where: str) -> bytes:
    length = resp.getheader("Content-Length")
    if length is not None and length.isdigit() and int(length) > max_bytes:
        raise DebugServerError(f"{where}: {int(length)} bytes, more than the {max_bytes} read at most")
    parts: list[bytes] = []
    got = 0
    while True:
        left = deadline - clock()
        if left <= 0:
            raise DebugServerError(f"{where}: no whole answer within the time allowed")
        if conn.sock is not None:
            conn.sock.settimeout(left)
        chunk = resp.read(CHUNK)
        if not chunk:
            return b"".join(parts)
        got += len(chunk)
        if got > max_bytes:
            raise DebugServerError(f"{where}: more than the {max_bytes} bytes read at most")
        parts.append(chunk)


# --- the page ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RankDump:
    """One rank's section of a page: the worker it came from, its dump, or why there is none."""

    rank: int
    worker: str  # http://host:port/handler/fr_trace_json?
    dump: FrDump | None
    error: str | None = None

    @property
    def host(self) -> str | None:
        """The worker's host, as its section of the page names it; None where that is no URL (a damaged page)."""
        if not self.worker.startswith("http"):
            return None
        try:
            return urlsplit(self.worker).hostname
        except ValueError:
            return None


def parse_fr_page(page: str, name: str) -> list[RankDump]:
    """The ranks' sections of a ``/fr_trace_json`` page (``_frontend.JSON_RESP_TEMPLATE``): each rank's dump as the
    recorder's JSON, or the status and text of a worker that failed. ``name`` names the dumps (their ``file``)."""
    heads = list(SECTION_RE.finditer(page))
    out: list[RankDump] = []
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(page)
        section = page[h.end():end]
        rank, worker = int(h.group("rank")), html.unescape(h.group("addr")).strip()
        start, stop = section.find("<pre>"), section.rfind("</pre>")
        body = section[start + len("<pre>"):stop] if 0 <= start < stop else ""
        failed = FAILED_RE.search(section[:start] if start >= 0 else section)
        if failed is not None:
            out.append(RankDump(rank, worker, None, f"status {failed.group('status')}: {html.unescape(body)[:300]}"))
            continue
        out.append(_rank_dump(rank, worker, body, f"{name}#rank{rank}"))
    return out


def _rank_dump(rank: int, worker: str, body: str, file: str) -> RankDump:
    obj: Any = None
    for text in (body, html.unescape(body)):  # raw (the frontend does not escape), else escaped
        try:
            obj = json.loads(text)
            break
        except (ValueError, RecursionError):
            continue
    if obj is None:
        return RankDump(rank, worker, None, "its dump is not JSON")
    try:
        dump = fr_from_obj(obj, file, "json")
    except ValueError as e:
        return RankDump(rank, worker, None, str(e))
    return RankDump(rank, worker, replace(dump, rank=rank))


# --- the monitor's records ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Snapshot:
    """One poll: when it was answered (the monitor's clock), the ranks' dumps, and what went wrong."""

    t: float
    dumps: tuple[RankDump, ...]
    errors: tuple[str, ...] = ()


Record = tuple[int, HookType, dict[str, Any]]  # (rank, hook record type, its fields): what ``stall.apply`` folds in


class FrFeed:
    """Snapshots to hook records, each collective of a rank fed once (a dump repeats its whole ring buffer)."""

    def __init__(self) -> None:
        self.enqueued: dict[tuple[int, str], int] = {}  # (rank, pg) -> the last collective fed as enqueued
        self.completed: dict[tuple[int, str], int] = {}  # (rank, pg) -> the last fed as completed

    def records(self, snap: Snapshot) -> list[Record]:
        world = len({d.rank for d in snap.dumps})
        out: list[Record] = []
        for d in snap.dumps:
            if d.dump is None:
                continue
            out.append((d.rank, HookType.START, {"world": world, "host": d.host, "backend": _backend(d.dump)}))
            out.extend(self._entries(d.rank, d.dump, snap.t))
            out.append((d.rank, HookType.HB, {"t": snap.t, "pgs": self._counters(d.rank, d.dump)}))
        return out

    def _entries(self, rank: int, dump: FrDump, t: float) -> list[Record]:
        """Collectives newly enqueued and newly completed, at the times the rank's recorder gives, none later than
        the poll (a rank's clock ahead of the monitor's would otherwise hold progress in the future)."""
        out: list[Record] = []
        for e in sorted(dump.entries, key=lambda e: e.get("collective_seq_id") or 0):
            seq = e.get("collective_seq_id")
            if not isinstance(seq, int) or seq <= 0 or e.get("is_p2p"):
                continue
            pg = _pg(e)
            key = (rank, pg)
            if seq > self.enqueued.get(key, 0):
                self.enqueued[key] = seq
                out.append((rank, HookType.COLL, {"pg": pg, "seq": seq, "op": str(e.get("profiling_name") or ""),
                                           "numel": _numel(e.get("input_sizes")), "dtype": _dtype(e.get("input_dtypes")),
                                           "where": _where(e.get("frames")),
                                           "t": _at_most(_seconds(e.get("time_created_ns")), t)}))
            if (e.get("state") == "completed" or e.get("retired") is True) and seq > self.completed.get(key, 0):
                self.completed[key] = seq
                done_t = _at_most(_seconds(e.get("time_discovered_completed_ns")), t)
                out.append((rank, HookType.DONE, {"pg": pg, "seq": seq, "t": done_t if done_t is not None else t}))
        return out

    def _counters(self, rank: int, dump: FrDump) -> dict[str, dict[str, int]]:
        """Each process group's counters as the hook's heartbeat gives them: enqueued, completed (the recorder's
        ``pg_status``, or what its entries show where gloo's completed count lags)."""
        out: dict[str, dict[str, int]] = {}
        for pg, st in dump.pg_status.items():
            enq, done = st.get("last_enqueued"), st.get("last_completed")
            c: dict[str, int] = {}
            if isinstance(enq, int) and enq >= 0:
                c["enq"] = enq
            seen = self.completed.get((rank, pg), 0)
            if isinstance(done, int) and done >= 0 or seen:
                c["done"] = max(done if isinstance(done, int) else 0, seen)
            out[pg] = c
        return out


def _pg(e: dict[str, Any]) -> str:
    pg = e.get("process_group")
    if isinstance(pg, (list, tuple)) and pg and pg[0] not in (None, ""):
        return str(pg[0])
    return str(e.get("pg_id", "0"))


def _backend(dump: FrDump) -> str | None:
    names = {str(e.get("profiling_name") or "").split(":", 1)[0] for e in dump.entries if e.get("profiling_name")}
    return "/".join(sorted(n for n in names if n)) or None


def _numel(sizes: Any) -> int | None:
    if not isinstance(sizes, list):
        return None
    total = 0
    for shape in sizes:
        if not isinstance(shape, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in shape):
            return None
        total += math.prod(shape)
    return total


def _dtype(dtypes: Any) -> str | None:
    if not isinstance(dtypes, list) or not dtypes:
        return None
    first = str(dtypes[0])
    return DTYPES.get(first, first.lower())


def _where(frames: Any) -> dict[str, Any] | None:
    """The first frame outside torch (the caller's line), as the hook gives its ``where``."""
    if not isinstance(frames, list):
        return None
    for f in frames:
        if isinstance(f, dict) and "/torch/" not in str(f.get("filename", "")):
            return {"file": f.get("filename"), "line": f.get("line"), "func": f.get("name")}
    return None


def _at_most(t: float | None, limit: float) -> float | None:
    return None if t is None else min(t, limit)


def _seconds(ns: Any) -> float | None:
    if isinstance(ns, bool) or not isinstance(ns, (int, float)) or ns <= 0:
        return None
    return float(ns) / 1e9


# --- the poller --------------------------------------------------------------------------------------------------

class DebugServerPoller:
    """Polls the server every ``interval_s`` on its own thread (a slow page never holds the monitor up); the
    monitor takes what arrived with ``drain``. ``poll`` runs one poll on the caller's thread (tests, ``--once``)."""

    def __init__(self, server: ServerUrl, interval_s: float = INTERVAL_S, timeout_s: float = TIMEOUT_S,
                 max_bytes: int = MAX_BYTES, clock: Callable[[], float] = time.time) -> None:
        self.server = server
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.clock = clock
        self.errors: deque[str] = deque(maxlen=MAX_ERRORS)
        self._ready: deque[Snapshot] = deque(maxlen=8)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> Snapshot:
        dumps: list[RankDump] = []
        errors: list[str] = []
        for path in ENDPOINTS:
            try:
                page = fetch(self.server, path, self.timeout_s, self.max_bytes).decode("utf-8", "replace")
            except (DebugServerError, OSError, http.client.HTTPException) as e:
                errors.append(f"debug server: {e}"[:300])
                continue
            found = parse_fr_page(page, f"{self.server}{path}")
            dumps += [d for d in found if d.dump is not None]
            missing = [d for d in found if d.dump is None and not (d.error or "").startswith("status 404")]
            errors += [f"debug server {path}: rank {d.rank} ({d.worker[:100]}): {d.error}"[:300] for d in missing]
        snap = Snapshot(self.clock(), tuple(dumps), tuple(errors))
        with self._lock:
            self._ready.append(snap)
            for err in errors:
                if err not in self.errors:
                    self.errors.append(err)
        return snap

    def drain(self) -> list[Snapshot]:
        with self._lock:
            out = list(self._ready)
            self._ready.clear()
        return out

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="ncclscope-debug-server", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        t, self._thread = self._thread, None
        if t is not None:
            t.join(timeout=self.timeout_s + 1)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception as e:  # noqa: BLE001 - a bad page must not end the polling
                with self._lock:
                    self.errors.append(f"debug server: {type(e).__name__}: {e}"[:300])
            self._stop.wait(self.interval_s)
