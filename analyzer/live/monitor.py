"""The live monitor: tail a run folder, keep per-rank progress, raise alerts.

Data flow: ``DirWatcher`` (watchdog events + rescans) -> ``Tailer`` (new complete lines only)
-> the pure parsers (``parse_jsonl``; ``sources.route``, analyze's router, for logs: NCCL records, the rest
to ``parse_torch_lines``) -> ``stall.apply``
(per-rank state) -> ``stall.judge_hang`` / ``check_desync`` / crashes -> ``Sinks``.

Incidents: one alert each (``hang``, ``desync``, ``crash``), a ``hang_detail`` follow-up with the
stacks every rank dumped on request, and ``cleared`` when the stuck collective completes.
On a hang, ``DIR/ncclscope-control/dump-request`` ({"id", "t"}) asks every rank's hook to dump
its Python stack and Flight Recorder; with ``kill_on_hang`` ``on_kill()`` runs once those stacks
arrived (or ``DETAIL_WAIT_S`` later).
"""
from __future__ import annotations

import enum
import json
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import rules, safe_io
from ..alerts_file import ALERTS_FILE, AlertKind
from ..detectors.launch import is_start_error
from ..input_names import SKIP_DIRS, SKIP_NAMES
from ..model import Format
from ..rules import desync as desync_rule
from ..rules.cause import CauseVerdict, Failure
from ..rules.config import ConfigMistake, config_mistake
from ..rules.exits import FailureKind
from ..rules.facts import error_failure, exit_failure
from ..rules.launcher_echo import launcher_echo, with_echoes
from ..rules.nodes import Heard, SilentNode, silent_nodes
from ..rules.states import fmt_ranks
from ..sources import records as R
from ..sources.hook_jsonl import HookType, parse_jsonl
from ..sources.lines import (
    MAX_WRAP_PIECES,
    WRAP_MAX,
    WRAP_MIN,
    starts_a_line,
    strip_tool_prefixes,
)
from ..sources.route import Route, route_lines
from ..sources.torch_log import parse_torch_lines
from ..text_fit import shorten
from ..verdict import of_alerts
from . import stall
from .alerts import CommandSink, ConsoleSink, FileSink, Sinks, WebhookSink, make_alert
from .debug_server import DebugServerPoller, FrFeed, Snapshot, parse_server_url
from .ended import EXIT_FILE
from .nccl_counts import Behind, NcclCounts
from .next_step import StuckFacts, kill_notice, stuck_facts, watchdog
from .tailer import Tailer
from .watcher import DirWatcher

POLL_S = 0.25
DETAIL_WAIT_S = 5.0  # how long to wait for the ranks' stacks after a dump request
CRASH_GRACE_S = 2.0  # gather exit records and tracebacks of one crash into one alert
DESYNC_WAIT_S = 2.0  # wait this long for the other ranks' records, and for a side's rank failing, before alerting
DESYNC_MAX_WAIT_S = 30.0  # a member's record still missing this long after: alert on those read, follow up later
CONTROL_DIR = "ncclscope-control"
FR_RE = re.compile(r"^fr_(?:timeout|live|end|dump)?_?rank(\d+)")
VANISHED_S = 1.6  # heartbeats come every second: a rank silent this long before others fail is gone
HEAD_BYTES = 65536  # what ``ingest.sniff`` reads of a file to tell its format
MAX_FAILURES = 4096  # failure events kept for the root cause (the first ones are the ones that matter)
TRACEBACK = "Traceback (most recent call last)"
MAX_WARN_TEXT = 1000  # of an NCCL WARN's message kept for the config rule
WRAP_HOLD_S = 1.0  # a read that ends in what may be a hard-wrapped line waits this long for its next pieces


def wanted(name: str) -> bool:
    """A name the monitor may read: what ``analyze`` would read, less its own output and editors' files."""
    low = name.lower()
    return name not in SKIP_NAMES and not low.endswith((".tmp", ".swp", ".lock", ".parquet"))


class LiveInput(enum.StrEnum):
    """What a file of a followed run folder holds, as the monitor reads it."""

    HOOK = "hook"  # ncclscope's hook (JSON lines)
    LOG = "log"  # NCCL, PyTorch and launcher lines
    FR = "fr"  # a Flight Recorder dump


def classify(name: str, head: bytes) -> LiveInput | None:
    """What a file of the run folder holds, from its first bytes as ``analyze`` tells it (``ingest.sniff``):
    hook (JSON lines) | log (NCCL, PyTorch and launcher lines) | fr (a Flight Recorder dump) | None."""
    from ..ingest import sniff

    if not wanted(name):
        return None
    if FR_RE.match(name):
        return LiveInput.FR
    fmt = sniff(head, name)
    return {Format.JSONL: LiveInput.HOOK, Format.LOG: LiveInput.LOG, Format.PICKLE: LiveInput.FR}.get(fmt)


@dataclass
class LiveConfig:
    stall_seconds: float | None = None  # None: judged from the job's own rhythm
    webhook: str | None = None  # JSON POST, Slack-compatible "text" field plus the alert fields
    command: str | None = None  # run with the alert JSON on stdin
    poll: bool = False  # PollingObserver (network filesystems)
    kill_on_hang: bool = False
    kill_grace_s: float | None = None  # SIGTERM, then SIGKILL this much later (said in the kill notice)
    console: bool = True
    write: bool = True  # alerts.jsonl and dump requests; False: only look (``watch --once``)
    debug_server: str | None = None  # PyTorch's debug server (live.debug_server): its Flight Recorder dumps, polled


@dataclass
class _Hang:
    h: stall.Hang
    opened: float
    request_t: float | None
    request_id: int | None
    stacks_after: set[int]
    detail_sent: bool = False
    killed: bool = False


class LiveMonitor:
    def __init__(self, run_dir: Path, config: LiveConfig, on_kill: Callable[[], None] | None = None,
                 console: Any | None = None, clock: Callable[[], float] = time.time) -> None:
        self.run_dir = Path(run_dir)
        self.config = config
        self.on_kill = on_kill
        self.clock = clock
        self.state = stall.JobState()
        self.tailer = Tailer()
        self.watcher = DirWatcher(self.run_dir, wanted, poll=config.poll)
        sinks: list[Any] = []
        if config.write:
            sinks.append(FileSink(self.run_dir / ALERTS_FILE))
        self.console: ConsoleSink | None = None
        if config.console:
            self.console = ConsoleSink(console, can_kill=on_kill is not None, kill_on_hang=config.kill_on_hang)
            sinks.append(self.console)
        if config.webhook:
            sinks.append(WebhookSink(config.webhook))
        if config.command:
            sinks.append(CommandSink(config.command))
        self.sinks = Sinks(sinks)
        self.alerts: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.hang: _Hang | None = None
        self._kill_due: stall.Hang | None = None
        self.desync_pgs: set[str] = set()
        self.crash_sent = False
        self._crash_pending: dict[int | None, dict[str, Any]] = {}
        self._mismatch_waits = False  # a backend's mismatch report waits for the records of the calls
        self.failures: deque[Failure] = deque(maxlen=MAX_FAILURES)
        self.echoes: deque[Failure] = deque(maxlen=MAX_FAILURES)  # launchers' reports of a child's end (launcher_echo)
        self._unnumbered_sent = False  # the hang of watchdog timeouts with no sequence number was reported
        self.killed_pids: set[int] = set()  # pids the launcher sent a closing signal
        self.kinds: dict[str, LiveInput | None] = {}  # path -> what it holds (classify), once it has bytes
        self._crash_first: float | None = None
        self._crash_new = False  # failures arrived since the root cause was last decided
        self._wd: dict[str, Any] = {}  # what PyTorch's watchdog lines said, gathered for CRASH_GRACE_S
        self._torch_carry: dict[str, list[tuple[int, str]]] = {}
        self._wrap_hold: dict[str, tuple[float, list[tuple[int, str]]]] = {}  # path -> (since, open wrap)
        self._torch_seen: dict[str, set[tuple[int, str]]] = {}
        self.nccl_warns: deque[str] = deque(maxlen=20)
        # ((host, pid), message) of NCCL WARN lines: what the config rule reads (rules.config)
        self.warn_texts: deque[tuple[tuple[str | None, int | None], str]] = deque(maxlen=64)
        self.nccl = NcclCounts()  # NCCL's own call counts (COLL lines), for a job without the hook
        self._nccl_open: Behind | None = None  # the hang claimed from them, until the ranks move again
        self.backend: str | None = None  # the hook's start record: which default timeout applies
        self.fr_files: dict[str, float] = {}  # path -> when first seen
        self.dump_id = 0
        self._control_refused = False  # the control folder was refused once: said once, not asked again
        self.files_seen = 0
        self.lines_read = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._once = False
        self._ended = False  # the launcher's exit.txt was seen: the job is judged at its end (``stall.judged_at``)
        self._now = clock()
        self._desync_wait: dict[tuple[str, int], float] = {}  # (pg, seq) -> first seen mismatched
        self._desync_partial: dict[tuple[str, int], tuple[int, ...]] = {}  # alerted before every record was in
        self.debug_server = DebugServerPoller(parse_server_url(config.debug_server), clock=clock) \
            if config.debug_server else None
        self._fr_feed = FrFeed()

    # --- threads ----------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self.watcher.start()
        if self.watcher.error:
            self.problems.append(self.watcher.error)
        if self.debug_server is not None:
            self.debug_server.start()
        self._thread = threading.Thread(target=self._loop, name="ncclscope-monitor", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.poll_once()
            except Exception as e:  # noqa: BLE001 - the monitor must outlive any bad input
                msg = f"monitor: {type(e).__name__}: {e}"
                if msg not in self.problems:
                    self.problems.append(msg)

    def stop(self) -> None:
        self._stop.set()
        t, self._thread = self._thread, None
        if t is not None:
            t.join(timeout=10)
        self.watcher.stop()
        if self.debug_server is not None:
            self.debug_server.stop()
        try:
            # what arrived last (exit records, torchrun's summary); the job is over, so no grace
            # period is left to wait out: a crash seen in the last seconds is alerted now
            self._once = True
            self.poll_once()
        except Exception:  # noqa: BLE001, S110
            pass
        self.sinks.close()

    def errors(self) -> list[str]:
        return self.problems + self.sinks.errors() + (list(self.debug_server.errors) if self.debug_server else [])

    # --- one pass -----------------------------------------------------------------------------------
    def poll_once(self, now: float | None = None) -> list[dict[str, Any]]:
        """Read what is new, judge, emit. Returns the alerts raised by this pass."""
        with self._lock:
            self._now = self.clock() if now is None else now
            paths = self.watcher.changed(force_scan=self._thread is None) | set(self.tailer.pending())
            for p in sorted(paths):
                self._read(p)
            if self.debug_server is not None:
                self.feed_debug_server(self.debug_server.drain())
            for p, (since, _) in list(self._wrap_hold.items()):
                if self._once or self._now - since >= WRAP_HOLD_S:
                    self._feed_log(p, [], flush=True)  # no next piece came: the lines stand as they are
            raised = self._judge(self._now)
            for a in raised:
                self.alerts.append(a)
                self.sinks.emit(a)
            due, self._kill_due = self._kill_due, None
            if due is not None:
                self._kill(due)
            return raised

    def run_once(self) -> list[dict[str, Any]]:
        """Everything in the folder now, judged at once (crash grace skipped): ``watch --once``."""
        self._once = True
        out = self.poll_once()
        while self.tailer.pending():
            out += self.poll_once()
        return out

    def _kind(self, path: str) -> LiveInput | None:
        if path in self.kinds:
            return self.kinds[path]
        name = path.rsplit("/", 1)[-1]
        if any(part in SKIP_DIRS for part in path.split("/")):
            self.kinds[path] = None
            return None
        try:
            fd = safe_io.open_fd(path)
            try:
                head = os.read(fd, HEAD_BYTES)
            finally:
                os.close(fd)
        except OSError:
            return None
        kind = classify(name, head)
        if head.count(b"\n") >= 2 or len(head) >= HEAD_BYTES:
            self.kinds[path] = kind  # enough to tell; a file of one line (a hook's start record, a
        return kind  # JSON object so far) is told again when it grows, and read from its start then

    def _read(self, path: str) -> None:
        kind = self._kind(path)
        if kind == LiveInput.FR:
            self.fr_files.setdefault(path, self._now)
            return
        if kind is None:
            return
        if path not in self.tailer.files:
            self.files_seen += 1
        lines = self.tailer.read_new(path)
        if not lines:
            return
        self.lines_read += len(lines)
        if kind == LiveInput.HOOK:
            self._feed_hook(path, lines)
        else:
            self._feed_log(path, lines)

    def _feed_log(self, path: str, lines: list[tuple[int, str]], flush: bool = False) -> None:
        """A text log, line by line as ``analyze`` reads it (``ingest``'s filter, ``sources.lines``): an
        NCCL line, 2.2's without the ``NCCL`` word too, goes to the NCCL parser (its WARN lines are kept),
        every other line to the PyTorch / launcher parser. A read that ends in lines that may be the first
        pieces of a hard-wrapped line keeps them back (``open_wrap``) until the next read, or ``WRAP_HOLD_S``,
        so that the pieces are joined as ``analyze`` joins them in the whole file."""
        held = self._wrap_hold.pop(path, None)
        arrived = self._now if held is None else held[0]  # when the first of these lines was read
        if held is not None:
            lines = held[1] + lines
        if not flush and not self._once:
            k = open_wrap(lines)
            if k < len(lines):
                self._wrap_hold[path] = (self._now if k else arrived, lines[k:])
                lines = lines[:k]
        if not lines:
            return
        rest = []
        for route, lineno, text, rec in route_lines(lines, path):  # analyze's router (sources.route)
            if isinstance(rec, R.NcclWarn):
                self.nccl_warns.append(f"{rec.host}:{rec.pid}: {rec.message}"[:300])
                self.warn_texts.append(((rec.host, rec.pid), rec.message[:MAX_WARN_TEXT]))
            elif isinstance(rec, R.NcclColl):
                self.nccl.coll(rec, arrived)
            elif isinstance(rec, R.NcclInit):
                self.nccl.init(rec)
            if route is Route.TEXT:
                rest.append((lineno, text))
        if rest:
            self._feed_torch(path, rest)

    def _feed_hook(self, path: str, lines: list[tuple[int, str]]) -> None:
        for rec in parse_jsonl(lines, path):
            if not isinstance(rec, R.HookRec) or not isinstance(rec.rank, int):
                continue
            touched = stall.apply(self.state, rec.rank, rec.type, rec.data)
            rs = self.state.ranks[rec.rank]
            rs.last_file, rs.last_lineno = rec.file, rec.line
            if rec.type == HookType.START and isinstance(rec.data.get("backend"), str):
                self.backend = rec.data["backend"]
            if rec.type == HookType.FR and isinstance(rec.data.get("path"), str):
                self.fr_files.setdefault(rec.data["path"], self._now)
            if rec.type == HookType.STACK and self.hang is not None and self.hang.request_t is not None:
                self.hang.stacks_after.add(rec.rank)
            elif rec.type == HookType.EXIT:
                st = self.state.ranks[rec.rank]
                f = exit_failure(rec.rank, st.exit_code, st.exception or "", stall._num(rec.data.get("t")),
                                 (rec.file, rec.line), st.pid in self.killed_pids)
                if f is not None:
                    c = stall.crash_of_exit(self.state, rec.rank)
                    self._crash(rec.rank, {"code": st.exit_code, "t": f.t,
                                           "message": c.message if c else f.text}, f)
            if touched is not None and touched[0] not in self.desync_pgs:
                self._desync_wait.setdefault(touched, self._now)

    def feed_debug_server(self, snapshots: list[Snapshot]) -> None:
        """The debug server's Flight Recorder dumps, as the hook's records (``live.debug_server.FrFeed``)."""
        for snap in snapshots:
            for rank, rtype, data in self._fr_feed.records(snap):
                touched = stall.apply(self.state, rank, rtype, data)
                if touched is not None and touched[0] not in self.desync_pgs:
                    self._desync_wait.setdefault(touched, self._now)

    def _feed_torch(self, path: str, lines: list[tuple[int, str]]) -> None:
        batch = self._torch_carry.pop(path, []) + lines
        seen = self._torch_seen.setdefault(path, set())
        for rec in parse_torch_lines(batch, path):
            key = (rec.line, type(rec).__name__)
            if key in seen:
                continue
            seen.add(key)
            if isinstance(rec, (R.WatchdogTimeout, R.WatchdogFailure, R.DumpSignal, R.DesyncReport)):
                self._watchdog(rec)
                if isinstance(rec, (R.WatchdogTimeout, R.WatchdogFailure)):  # a symptom on the time line
                    self.failures.append(Failure(rec.rank, FailureKind.TIMEOUT, rec.text.strip()[:500], None,
                                                 (rec.file, rec.line)))
            elif isinstance(rec, R.DistError):
                f = error_failure(rec.rank, rec.exc_type, rec.message, rec.last_error, None, (rec.file, rec.line))
                if f is not None and rec.rank is None and launcher_echo(rec.exc_type, rec.frames):
                    self.echoes.append(f)  # on the time line only while nothing else failed (_time_line)
                    f = None
                    self._crash_new = self._crash_new or not self.failures
                    self._crash_first = self._crash_first if self._crash_first is not None else self._now
                if f is not None:
                    where = rec.frames[-1] if rec.frames else None
                    who = f"rank {rec.rank}" if rec.rank is not None else "the launcher"
                    self._crash(rec.rank, {"exception": shorten(f"{who}: {rec.exc_type}: {rec.message}", 400),
                                           "where": where, "exc_type": rec.exc_type,
                                           "error": shorten(f"{rec.exc_type}: {rec.message}", 300)}, f)
            elif isinstance(rec, R.LauncherSignal):
                self.killed_pids.add(rec.pid)
            elif isinstance(rec, R.LauncherExit) and rec.exitcode not in (None, 0):
                f = exit_failure(rec.rank, rec.exitcode, "", None, ("", -1) if rec.root_cause else (rec.file, rec.line),
                                 rec.pid in self.killed_pids and not rec.root_cause)
                if f is not None:
                    who = f"rank {rec.rank}" if rec.rank is not None else f"local rank {rec.local_rank}"
                    self._crash(rec.rank, {"code": rec.exitcode,
                                           "message": f"the launcher reports {who} exited with code {rec.exitcode}"}, f)
        carry = _open_traceback(batch)
        if carry:
            self._torch_carry[path] = carry
            low = carry[0][0]
            self._torch_seen[path] = {k for k in seen if k[0] >= low}
        else:
            seen.clear()

    # --- incidents ------------------------------------------------------------------------------------
    def _desyncs(self, now: float) -> list[dict[str, Any]]:
        """Mismatched (pg, seq), judged once every member's call there is read (``stall.desync_missing``;
        records reach the folder late under load, and a tie of the first two is broken by the rest) and
        DESYNC_WAIT_S has passed: not when a side is a rank that failed right after (its echo). A member
        still missing after DESYNC_MAX_WAIT_S: the alert on those read, and ``desync_detail`` once the
        rest arrive and name other culprits."""
        out = self._desync_updates(now) if self._desync_partial else []
        for key, first in list(self._desync_wait.items()):
            pg, seq = key
            if pg in self.desync_pgs:
                self._desync_wait.pop(key, None)
                continue
            d = stall.check_desync(self.state, pg, seq)
            sigs = self.state.colls.get(pg, {}).get(seq, {})
            members = len(self.state.all_ranks()) if pg == "0" else len(sigs)
            if d is None:
                if len(sigs) >= members or now - first > 60:
                    self._desync_wait.pop(key, None)
                continue
            missing = stall.desync_missing(self.state, pg, seq)
            waited = now - first
            if not self._once and (waited < DESYNC_WAIT_S or (missing and waited < DESYNC_MAX_WAIT_S)):
                continue  # a tie may be broken by the other ranks' records; a side may be failing
            sides: dict[tuple[str, str, str], list[int]] = {}
            for r, k in d.sigs.items():
                sides.setdefault(k, []).append(r)
            t = min((x.t for x in sigs.values() if x.t is not None), default=None)
            if rules.mismatch_is_echo(list(sides.values()), t, crash_failures(self.state, self._time_line())):
                self._desync_wait.pop(key, None)
                continue  # a side's rank failed right after: the crash alert tells it
            self._desync_wait.pop(key, None)
            self.desync_pgs.add(pg)
            if missing:
                self._desync_partial[key] = d.culprits
            out.append(self._desync_alert(AlertKind.DESYNC, d, now, missing))
        return out

    def _desync_updates(self, now: float) -> list[dict[str, Any]]:
        """``desync_detail``: the records that were missing at the desync alert arrived and name culprits
        the alert did not (by the same rule, ``stall.check_desync``)."""
        out = []
        for key, told in list(self._desync_partial.items()):
            if stall.desync_missing(self.state, *key) and not self._once:
                continue
            del self._desync_partial[key]
            d = stall.check_desync(self.state, *key)
            if d is not None and d.culprits and d.culprits != told:
                out.append(self._desync_alert(AlertKind.DESYNC_DETAIL, d, now, ()))
        return out

    def _desync_alert(self, kind: AlertKind, d: stall.Desync, now: float, missing: tuple[int, ...]) -> dict[str, Any]:
        sigs = self.state.colls.get(d.pg, {}).get(d.seq, {})
        parts = [f"rank {r}: {op} numel={numel} dtype={dtype}" for r, (op, numel, dtype) in d.sigs.items()]
        who = (f"rank{'s' if len(d.culprits) > 1 else ''} {', '.join(map(str, d.culprits))} differ"
               if d.culprits else "the ranks disagree")
        ops = sorted({k[0] for k in d.sigs.values()})
        msg = f"collective #{d.seq} of process group {d.pg} does not match across ranks ({who}): " + "; ".join(parts)
        if missing:
            msg += f"; no record yet from {_plural(missing)}"
        elif kind == AlertKind.DESYNC_DETAIL:
            msg = "every rank's record is in: " + msg
        return make_alert(kind, "desync", d.culprits, {"pg": d.pg, "seq": d.seq, "op": "/".join(ops)}, msg,
                          {r: s.where for r, s in sigs.items() if s.where}, ts=now,
                          **({"missing_ranks": list(missing)} if missing else {}))

    def _watchdog(self, rec: R.TorchRec) -> None:
        """PyTorch's own watchdog saw a timeout: a hang even without the hook (any launcher)."""
        w = self._wd
        if isinstance(rec, R.WatchdogTimeout):
            if rec.seq is not None:
                w.setdefault("seq", rec.seq)
            w.setdefault("op", stall.canonical_op(rec.op))
            w.setdefault("pg", rec.pg or "0")
            w.setdefault("timeout_ms", rec.timeout_ms)
        elif isinstance(rec, R.WatchdogFailure):
            if rec.seq is not None:
                w.setdefault("seq", rec.seq)
            w.setdefault("pg", rec.pg or "0")
        if isinstance(rec, (R.WatchdogFailure, R.DumpSignal)) and rec.rank is not None \
                and rec.last_enqueued is not None and rec.pg in (None, w.get("pg", rec.pg)):
            w.setdefault("enq", {})[rec.rank] = rec.last_enqueued  # of the group judged: numbers of groups differ
        elif isinstance(rec, R.DesyncReport):
            w["lagging"] = list(rec.lagging_ranks)
            if rec.seq is not None:
                w.setdefault("seq", rec.seq)
        if rec.rank is not None and rec.pg in (None, w.get("pg", rec.pg)):
            w.setdefault("ranks", set()).add(rec.rank)
            src = w.setdefault("src", {})
            if rec.rank in w.get("enq", {}):
                src[rec.rank] = "watchdog_failure"  # its own last enqueued: a status of its own
            else:
                src.setdefault(rec.rank, "watchdog_timeout")
        w.setdefault("first", self._now)
        w.setdefault("evidence", f"{rec.file.rsplit('/', 1)[-1]}:{rec.line}")

    def _watchdog_alert(self, now: float) -> dict[str, Any] | None:
        w, self._wd = self._wd, {}
        if self.hang is not None or self.crash_sent or self.desync_pgs:
            return None
        if "seq" not in w:
            return self._watchdog_alert_unnumbered(w, now)
        seq, pg, op = int(w["seq"]), str(w.get("pg") or "0"), w.get("op")
        enq: dict[int, int] = w.get("enq", {})
        culprits = tuple(sorted(set(w.get("lagging") or []) | {r for r, e in enq.items() if e < seq}))
        waiters = tuple(sorted(r for r in w.get("ranks", set()) | set(enq) if r not in culprits))
        thr = (w.get("timeout_ms") or 0) / 1000.0
        h = stall.Hang(pg, seq, op, culprits, waiters, thr, thr)
        self.hang = _Hang(h, now, None, None, set(), detail_sent=True, killed=True)
        who = (f"{_plural(culprits)} never joined {op or 'collective'} #{seq} of process group {pg}"
               if culprits else f"{op or 'collective'} #{seq} of process group {pg} did not complete")
        from ..detectors.hang import _unseen_certainty

        src: dict[int, str] = w.get("src", {})
        certainty = _unseen_certainty(list(culprits), {r: _Status(v) for r, v in src.items()})
        return make_alert(AlertKind.HANG, "hang", culprits, _stuck(h),
                          f"PyTorch's watchdog timed out ({w['evidence']}): {who}", self._hang_where(h), ts=now,
                          source="pytorch_watchdog", waiting_ranks=list(waiters), certainty=certainty)

    def _watchdog_alert_unnumbered(self, w: dict[str, Any], now: float) -> dict[str, Any] | None:
        """Watchdog timeouts that print no sequence number (torch before 1.11): a hang, once, with the ranks that timed
        out and no collective to name (what the offline analysis says of them: ``rules.shown.echoes_only``)."""
        ranks = sorted(w.get("ranks", set()))
        if self._unnumbered_sent or not ranks:
            return None
        self._unnumbered_sent = True
        return make_alert(AlertKind.HANG, "hang", (), None,
                          f"PyTorch's watchdog timed out ({w['evidence']}): {_plural(ranks)} waited in "
                          f"{w.get('op') or 'a collective'} past the timeout; this torch prints no sequence number, so "
                          "which collective of the group is not known", {}, ts=now, source="pytorch_watchdog",
                          waiting_ranks=ranks)

    def _time_line(self) -> list[Failure]:
        """The failures, or the launchers' reports alone when nothing else failed (``rules.launcher_echo.with_echoes``)."""
        return with_echoes(self.failures, self.echoes)

    def _crash(self, rank: int | None, info: dict[str, Any], failure: Failure) -> None:
        """A failure event on the time line; the first cause opens the grace period of the crash alert."""
        self.failures.append(failure)
        if self.crash_sent:
            return
        cur = self._crash_pending.setdefault(rank, {})
        for k, v in info.items():
            if v is not None and k not in cur:
                cur[k] = v
        if self._crash_first is None:
            self._crash_first = self._now
        self._crash_new = True

    def _judge(self, now: float) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self._desyncs(now) if self._desync_wait or self._desync_partial else []
        st = self.state
        if self._wd and (self._once or now - self._wd.get("first", now) >= CRASH_GRACE_S):
            a = self._watchdog_alert(now)
            if a is not None:
                out.append(a)
        if self._crash_new and not self.crash_sent and (
                self._once or now - (self._crash_first or now) >= CRASH_GRACE_S):
            self._crash_new = False
            a = self._crash_alert(now)
            if a is not None:
                out.append(a)
        if self.hang is None:
            quiet = not self.crash_sent and not self.desync_pgs and not self._mismatch_waits
            h = self._judge_hang(now) if quiet else None
            if h is not None:
                out.append(self._open_hang(h, now))
            elif not self.crash_sent and not self.desync_pgs and not self.state.ranks and not self._wd:
                out.extend(self._nccl_counts_hang(now))
        else:
            inc = self.hang
            if stall.cleared(st, inc.h.pg, inc.h.seq):
                self.hang = None
                out.append(make_alert(
                    AlertKind.CLEARED, "healthy", inc.h.culprits, _stuck(inc.h),
                    f"{inc.h.op or 'collective'} #{inc.h.seq} of process group {inc.h.pg} completed after "
                    f"{now - inc.opened + inc.h.age_s:.1f} s without progress: the job moves again",
                    ts=now, incident="hang"))
            else:
                out.extend(self._follow_hang(inc, now))
        return out

    def _nccl_counts_hang(self, now: float) -> list[dict[str, Any]]:
        """No hook: NCCL's call counts, once no new call came for the stall time (judged from the arrivals'
        own rhythm), with ranks behind a unanimous majority (``rules.hang.behind_by_counts``): a likely hang,
        as ``analyze`` says of the counts at the end of the logs; ``cleared`` when they move again."""
        c = self.nccl
        if c.last_t is None:
            return []
        quiet = now - c.last_t
        if self._nccl_open is not None:
            b = c.behind()
            if b is not None and b.ranks == self._nccl_open.ranks and b.low == self._nccl_open.low:
                return []
            was, self._nccl_open = self._nccl_open, None
            return [make_alert(AlertKind.CLEARED, "healthy", was.ranks, None,
                               f"{_plural(was.ranks)} issued NCCL calls again after {was.low} on communicator "
                               f"{was.comm}: the job moves again", ts=now, incident="hang")]
        thr = stall.threshold(c.gaps, self.config.stall_seconds, c.started())
        if not self._once and quiet <= thr:
            return []
        b = c.behind()
        if b is None:
            return []
        self._nccl_open = b
        why = (f"NCCL call counts {'at the end of the logs' if self._once else f'after {quiet:.1f} s without a new call'}: "
               f"{b.agree} ranks agree on {b.top} calls, these are behind; no stall signal")
        return [make_alert(AlertKind.HANG, "hang", b.ranks, None,
                           f"{_plural(b.ranks)} issued {b.low} NCCL calls on communicator {b.comm}, others up to "
                           f"{b.top}: {'it' if len(b.ranks) == 1 else 'they'} stopped first"
                           + ("" if self._once else f"; no new NCCL call for {quiet:.1f} s (threshold {thr:.1f} s)"),
                           ts=now, source="nccl_counts",
                           certainty={"level": "likely", "why": why})]

    def _judge_hang(self, now: float) -> stall.Hang | None:
        """While ranks run: judged now. Once every rank exited, on the final pass (``--once``, stop):
        judged at the first exit, by the records' times: was the job stalled when it was stopped? Once the
        launcher ended without the ranks' exit records: judged at the newest record (``stall.judged_at``)."""
        st = self.state
        if not st.exited():
            return stall.judge_hang(st, self._judged_at(now), self.config.stall_seconds)
        t_end = min((rs.exit_t for rs in st.ranks.values() if rs.exit_t is not None), default=None)
        if not self._once or t_end is None:
            return None
        return stall.judge_hang(st, t_end, self.config.stall_seconds, include_exited=True)

    def _judged_at(self, now: float) -> float:
        """``now``, or the job's end once the launcher wrote ``exit.txt`` (``stall.judged_at``)."""
        return stall.judged_at(self.state, now, self._launcher_ended())

    def _crash_alert(self, now: float) -> dict[str, Any] | None:
        if self.hang is not None or self.desync_pgs:
            self._crash_pending = {}
            return None  # the consequence of an incident already reported
        cause = rules.root_cause(crash_failures(self.state, self._time_line()))
        if cause is not None and cause.verdict == CauseVerdict.DESYNC and cause.first is not None:
            if not self._records_final(now):  # the report can reach disk before the records of the calls
                self._crash_new = self._mismatch_waits = True  # judged again on the next pass (no hang judged
                return None  # meanwhile: the stall is the mismatch's); the records' own desync may come first
            self._crash_pending, self._mismatch_waits = {}, False
            return self._mismatch_alert(cause.first, now)
        if cause is None or cause.verdict != CauseVerdict.CRASH or cause.first is None:
            return None
        pending, self._crash_pending = self._crash_pending, {}
        self.crash_sent = True
        culprits = list(cause.ranks)
        failed = sorted(r for r in pending if r is not None)
        others = [r for r in failed if r not in culprits]

        def text(r: int | None) -> str | None:
            v = pending.get(r, {})
            return v.get("exception") or v.get("message")

        msgs = [m for m in (text(r) for r in culprits) if m] or [cause.first.text]
        early = [v for v in pending.values() if is_start_error(v.get("exc_type"))]
        if early and not any(rs.enq or rs.stack_t for rs in self.state.ranks.values()):
            msgs = [f"the command failed to start: {early[0]['error']}"]  # before any collective (launch.py)
        elif others:
            msgs.append(f"then {_plural(others)} failed too ({shorten(text(others[0]) or '', 160)})")
        where: dict[int, str] = {}
        for r in culprits + others:
            w = pending.get(r, {}).get("where") or (self.state.ranks[r].where if r in self.state.ranks else None)
            if w:
                where[r] = w
        codes = {r: pending[r].get("code") for r in failed if pending[r].get("code") is not None}
        mistake = self._config_mistake([(r, text(r) or "") for r in failed])
        if mistake is not None:  # a setting broke it: what analyze calls it (rules.config)
            return make_alert(AlertKind.CONFIG_ERROR, "config_error", mistake.ranks, None,
                              shorten(f"{mistake.entry.meaning} ({', '.join(mistake.settings)}): "
                                      f"{'; '.join(dict.fromkeys(msgs))}", 500), where, ts=now,
                              settings=list(mistake.settings), exit_codes={str(r): c for r, c in codes.items()})
        return make_alert(AlertKind.CRASH, "crash", tuple(culprits), None, "; ".join(dict.fromkeys(msgs)) or "a rank failed",
                          where, ts=now, exit_codes={str(r): c for r, c in codes.items()},
                          cause=cause.first.kind.value)

    def _launcher_ended(self) -> bool:
        """Whether the launcher wrote ``exit.txt`` (looked for until it is seen, then remembered)."""
        self._ended = self._ended or os.path.lexists(self.run_dir / EXIT_FILE)
        return self._ended

    def _records_final(self, now: float) -> bool:
        """Whether every rank's records are in, to place a backend's mismatch report: each rank wrote its exit
        record, or the launcher ended (``exit.txt``), or DESYNC_MAX_WAIT_S passed since the first failure (a
        rank that neither exits nor writes: alert on what is read). ``--once`` reads everything there is."""
        if self._once or self.state.exited():
            return True
        return self._launcher_ended() or now - (self._crash_first or now) >= DESYNC_MAX_WAIT_S

    def _config_mistake(self, failed: list[tuple[int, str]]) -> ConfigMistake | None:
        """``rules.config_mistake`` over the failed ranks' texts and the NCCL WARN lines (their rank by pid)."""
        by_proc: dict[tuple[str | None, int | None], int] = {}
        for (host, pid, _), (rank, _) in self.nccl.ranks.items():  # its first communicator: the world's
            by_proc.setdefault((host, pid), rank)
        by_pid: dict[int | None, int] = {rs.pid: r for r, rs in self.state.ranks.items() if rs.pid is not None}
        return config_mistake([*((by_proc.get(proc, by_pid.get(proc[1])), t) for proc, t in self.warn_texts), *failed])

    def _mismatch_alert(self, seen: Failure, now: float) -> dict[str, Any] | None:
        """A backend's mismatch report came first (gloo's abort): a desync at the collective the ranks
        were in, its culprits those of their last recorded calls, by the rules ``analyze`` uses."""
        st = self.state
        world = st.all_ranks()
        pgs = [p for p in st.colls.keys() | {p for s in st.ranks.values() for p in s.enq} if not p.endswith(":p2p")]
        members = {pg: world if pg == "0" else [r for r, s in st.ranks.items() if pg in s.enq] for pg in pgs}
        rs = st.ranks
        at = desync_rule.mismatch_collective(
            {pg: {r: rs[r].enq.get(pg) if r in rs else None for r in m} for pg, m in members.items()},
            {pg: {r: rs[r].done.get(pg) if r in rs else None for r in m} for pg, m in members.items()}, seen.rank)
        if at is None:
            return None
        pg, seq = at
        last: dict[int, tuple[Any, str | None]] = {}
        for _, by_rank in sorted(st.colls.get(pg, {}).items()):
            last.update({r: (sig.key(), sig.where) for r, sig in by_rank.items()})
        by_site = all(w for _, w in last.values())
        used: dict[Any, set[int]] = {}
        for by_rank in st.colls.get(pg, {}).values():
            for r, sig in by_rank.items():
                used.setdefault(("where", sig.where) if by_site else ("sig", sig.key()), set()).add(r)
        culprits, _ = desync_rule.last_call_culprits(last, {k: frozenset(v) for k, v in used.items()})
        sig_at = st.colls.get(pg, {}).get(seq, {})
        op = next((s.op for s in sig_at.values()), None)
        self.desync_pgs.add(pg)
        who = f"rank {seen.rank}" if seen.rank is not None else "a rank"
        return make_alert(AlertKind.DESYNC, "desync", culprits, {"pg": pg, "seq": seq, "op": op},
                          shorten(f"the backend of {who} aborted on a collective mismatch in {op or 'collective'} "
                                  f"#{seq} of process group {pg}: {seen.text}", 500),
                          {r: s.where for r, s in sig_at.items() if s.where}, ts=now)

    def _open_hang(self, h: stall.Hang, now: float) -> dict[str, Any]:
        req_t, req_id = self._request_dump(now)
        self.hang = _Hang(h, now, req_t, req_id, set())
        at = self._judged_at(now)  # who fell silent: by the job's end once it has ended
        nodes = self._silent_nodes(at, h.threshold_s)
        extra: dict[str, Any] = {}
        if nodes:
            extra["nodes"] = [{"host": n.host, "ranks": list(n.ranks), "last_t": round(n.last_t, 3),
                               "last_line": n.last_line, "silent_s": round(n.silent_s, 2)} for n in nodes]
        return make_alert(AlertKind.HANG, "hang", h.culprits, _stuck(h), _hang_message(h, self.nccl_warns, nodes),
                          self._hang_where(h), ts=now, threshold_s=round(h.threshold_s, 2),
                          stalled_s=round(h.age_s, 2), waiting_ranks=list(h.waiters),
                          stacks_requested=req_t is not None, certainty=self._certainty(h, at), **extra,
                          watchdog=self._watchdog_eta(h, StuckFacts(), now))

    def _silent_nodes(self, now: float, silent_s: float) -> tuple[SilentNode, ...]:
        """The hosts every rank of which fell silent (``rules.nodes``), from the hook's records."""
        return silent_nodes((Heard(r, rs.host, rs.last_seen, rs.last_line(), rs.exit_code is not None)
                             for r, rs in self.state.ranks.items()), now, silent_s)

    def _certainty(self, h: stall.Hang, now: float) -> dict[str, str]:
        """How sure the hang is, by the rule ``analyze`` applies to process-group status: culprits with
        status of their own (records still coming) confirmed; culprits with none (never seen, or silent
        for longer than the threshold: what they last wrote is not where they are) likely."""
        from ..detectors.hang import _unseen_certainty

        gone = stall.stale(self.state, now, h.threshold_s)
        return _unseen_certainty(list(h.culprits), {r: _Status("hook") for r in (*h.waiters, *h.culprits)
                                                    if r in self.state.ranks and r not in gone})

    def _watchdog_eta(self, h: stall.Hang, facts: StuckFacts, now: float) -> dict[str, Any] | None:
        """When PyTorch's timeout ends the job (``next_step.watchdog``); None once every rank has exited or
        the command has ended (the wrapper's ``exit.txt``)."""
        if self.state.exited() or os.path.lexists(self.run_dir / EXIT_FILE):
            return None
        return watchdog(self.backend, facts, self._enqueued_t(h, now), now)

    def _enqueued_t(self, h: stall.Hang, now: float) -> float:
        """When the stuck collective was issued: its first coll record, else the waiters' last progress."""
        sigs = self.state.colls.get(h.pg, {}).get(h.seq, {})
        return min((s.t for s in sigs.values() if s.t is not None), default=now - h.age_s)

    def _hang_where(self, h: stall.Hang) -> dict[int, str]:
        where: dict[int, str] = {}
        sigs = self.state.colls.get(h.pg, {}).get(h.seq, {})
        for r in list(h.culprits) + list(h.waiters):
            rs = self.state.ranks.get(r)
            fresh = rs is not None and rs.where and (
                (self.hang is not None and r in self.hang.stacks_after)
                or (rs.stack_t is not None and rs.last_progress is not None and rs.stack_t >= rs.last_progress))
            if fresh and rs is not None and rs.where:
                where[r] = rs.where
            elif r in sigs and sigs[r].where:
                where[r] = str(sigs[r].where)
        return where

    def _follow_hang(self, inc: _Hang, now: float) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        h = inc.h
        live = {r for r in list(h.culprits) + list(h.waiters)
                if r in self.state.ranks and self.state.ranks[r].exit_code is None}
        arrived = live <= inc.stacks_after
        waited = now - inc.opened >= DETAIL_WAIT_S
        if not inc.detail_sent and inc.request_t is not None and ((arrived and inc.stacks_after) or waited):
            inc.detail_sent = True
            fr_paths = [p for p, t in self.fr_files.items() if t >= inc.opened - 1]
            facts = stuck_facts(fr_paths, h.pg, h.seq)  # the dumps name the op the hook could not see (C++ calls)
            if h.op is None and facts.op:
                inc.h = h = replace(h, op=facts.op)
            stacks = {str(r): self.state.ranks[r].frames for r in sorted(inc.stacks_after)
                      if r in self.state.ranks and self.state.ranks[r].frames}
            fr = sorted(p.rsplit("/", 1)[-1] for p, t in self.fr_files.items() if t >= inc.opened - 1)
            missing = sorted(live - inc.stacks_after)
            msg = (f"stacks of rank{'s' if len(inc.stacks_after) > 1 else ''} "
                   f"{', '.join(map(str, sorted(inc.stacks_after)))} after the hang of "
                   f"{h.op or 'collective'} #{h.seq} (process group {h.pg})") if inc.stacks_after else (
                f"no rank answered the stack request after the hang of {h.op or 'collective'} #{h.seq} "
                f"(process group {h.pg}) within {DETAIL_WAIT_S:g} s")
            if missing and inc.stacks_after:
                msg += f"; no stack from rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}"
            out.append(make_alert(AlertKind.HANG_DETAIL, "hang", h.culprits, _stuck(h), msg, self._hang_where(h), ts=now,
                                  stacks=stacks, flight_recorder=fr,
                                  watchdog=self._watchdog_eta(h, facts, now)))
        if self.config.kill_on_hang and not inc.killed and (arrived or waited):
            inc.killed = True
            self._kill_due = h  # done by poll_once once this pass's alerts are out
        return out

    def _kill(self, h: stall.Hang) -> None:
        """``--kill-on-hang``: announced (which ranks, pids, why) below the alerts, then done."""
        if self.on_kill is None:
            return
        if self.console is not None:
            pids = {r: self.state.ranks[r].pid if r in self.state.ranks else None for r in (*h.culprits, *h.waiters)}
            self.console.note(kill_notice(_stuck_alert(h), pids, self.config.kill_grace_s))
        try:
            self.on_kill()
        except Exception as e:  # noqa: BLE001
            self.problems.append(f"kill on hang: {e}")

    def _request_dump(self, now: float) -> tuple[float | None, int | None]:
        """``CONTROL_DIR/dump-request``, written through descriptors (``safe_io.write_at``): the control
        folder must be ours or the run folder's owner's, no link, writable by no one else; otherwise one
        warning and the hang goes on without stacks (never a write where another user pointed)."""
        if not self.config.write or self._control_refused:
            return None, None
        d = self.run_dir / CONTROL_DIR
        try:
            run_fd = safe_io.open_dir(self.run_dir)
            try:
                owners = frozenset({os.geteuid(), os.fstat(run_fd).st_uid})
                ctl = safe_io.sub_dir(run_fd, CONTROL_DIR, owners)
            finally:
                os.close(run_fd)
            try:
                safe_io.write_at(ctl, "dump-request", json.dumps({"id": self.dump_id + 1, "t": now}))
            finally:
                os.close(ctl)
        except safe_io.UnsafeFolder as e:
            self._control_refused = True
            self.problems.append(f"control folder {d} {e.strerror or e}; not asking the ranks for their "
                                 "stacks (remove it, or watch as its owner)")
            return None, None
        except OSError as e:
            self.problems.append(f"cannot write the dump request in {d}: {e.strerror or e}")
            return None, None
        self.dump_id += 1
        return now, self.dump_id

    # --- views ------------------------------------------------------------------------------------------
    def _rank_states(self, verdict: dict[str, Any]) -> list[tuple[int, Any, str | None]]:
        """Each rank's state by ``rules.states``, as ``analyze`` gives it."""
        from ..rules.states import Facts, rank_states

        st = self.state
        stuck = verdict.get("stuck") or {}
        where = f"{stuck.get('op') or 'collective'} #{stuck['seq']} of process group {stuck.get('pg')}" \
            if "seq" in stuck else None
        waiting = tuple(self.hang.h.waiters) if self.hang is not None else ()
        facts = Facts(tuple(st.all_ranks()), verdict["verdict"], tuple(verdict["culprit_ranks"]), where, waiting,
                      {r: rs.where for r, rs in st.ranks.items() if rs.where},
                      frozenset(r for r, rs in st.ranks.items() if rs.exit_code == 0), st.exited())
        return rank_states(facts, crash_failures(st, self._time_line()))

    def snapshot(self, now: float | None = None) -> dict[str, Any]:
        """The current state, JSON-able: per rank progress, the threshold, the open incident."""
        now = self._judged_at(self.clock() if now is None else now)
        st = self.state
        verdict = of_alerts(self.alerts)
        states = {r: (state.value, detail) for r, state, detail in self._rank_states(verdict)}
        ranks = []
        for r in st.all_ranks():
            rs = st.ranks.get(r)
            ranks.append({
                "state": states.get(r, (None, None))[0], "detail": states.get(r, (None, None))[1],
                "rank": r,
                "host": rs.host if rs else None,
                "step": rs.step if rs else None,
                "enqueued": dict(rs.enq) if rs else {},
                "completed": dict(rs.done) if rs else {},
                "idle_s": round(now - rs.last_progress, 1) if rs and rs.last_progress is not None else None,
                "exit_code": rs.exit_code if rs else None,
                "where": rs.where if rs else None,
            })
        thr = stall.threshold(st.gaps, self.config.stall_seconds, stall.started(st))
        pend = [{"pg": pg, "seq": n, "op": stall.op_of(st, pg, n), "never_joined": list(never),
                 "waiting": list(waiting)} for pg, n, never, waiting in stall.pending(st, stall.stale(st, now, thr))]
        silent = [{"host": n.host, "ranks": list(n.ranks), "last_line": n.last_line, "silent_s": round(n.silent_s, 1)}
                  for n in self._silent_nodes(now, thr)]
        return {
            "run_dir": str(self.run_dir), "world_size": st.world, "ranks": ranks, "pending": pend,
            "silent_nodes": silent, "threshold_s": round(thr, 2),
            "rhythm": stall.rhythm(st), "exited": st.exited(),
            "open_hang": _stuck(self.hang.h) if self.hang else None,
            "verdict": verdict,
            "alerts": len(self.alerts), "files": len(self.tailer.files), "problems": self.errors(),
        }


def _stuck(h: stall.Hang) -> dict[str, Any]:
    return {"pg": h.pg, "seq": h.seq, "op": h.op}


def _stuck_alert(h: stall.Hang) -> dict[str, Any]:
    return {"stuck": _stuck(h), "culprit_ranks": list(h.culprits)}


def _plural(ranks: tuple[int, ...] | list[int]) -> str:
    return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"


def _hang_message(h: stall.Hang, warns: deque[str], nodes: tuple[SilentNode, ...] = ()) -> str:
    op = h.op or "collective"
    if nodes and set(h.culprits) <= {r for n in nodes for r in n.ranks}:
        return _node_message(h, nodes)
    if h.culprits:
        msg = (f"{_plural(h.culprits)} never joined {op} #{h.seq} of process group {h.pg}; "
               f"{_plural(h.waiters) if h.waiters else 'no rank'} wait{'' if len(h.waiters) > 1 else 's'} in it; "
               f"no progress for {h.age_s:.1f} s (threshold {h.threshold_s:.1f} s)")
        if h.silent:
            msg += f"; {_plural(h.silent)} also stopped writing heartbeats (process gone or frozen)"
    else:
        msg = (f"every rank joined {op} #{h.seq} of process group {h.pg} but it has not completed for "
               f"{h.age_s:.1f} s (threshold {h.threshold_s:.1f} s): NCCL or network side")
        if warns:
            msg += f"; last NCCL warning: {warns[-1]}"
    if nodes:
        msg += "; " + "; ".join(_node_text(n) for n in nodes)
    return msg


def _node_text(n: SilentNode) -> str:
    when = datetime.fromtimestamp(n.last_t, UTC).strftime("%H:%M:%S")
    return (f"node {n.host} (rank{'s' if len(n.ranks) > 1 else ''} {fmt_ranks(n.ranks)}) went silent: no record "
            f"from any of its ranks for {n.silent_s:.1f} s, the last {n.last_line or '?'} at {when} UTC")


def _node_message(h: stall.Hang, nodes: tuple[SilentNode, ...]) -> str:
    """A node problem: which hosts, their ranks as ranges, their last line and when; who waits where."""
    waiters = f"rank{'s' if len(h.waiters) > 1 else ''} {fmt_ranks(h.waiters)}" if h.waiters else "no rank"
    return ("; ".join(_node_text(n) for n in nodes)
            + f" (dead, frozen, or its files no longer reach this folder); {waiters} "
            f"wait{'' if len(h.waiters) > 1 else 's'} in "
            f"{h.op or 'collective'} #{h.seq} of process group {h.pg}; no progress for {h.age_s:.1f} s "
            f"(threshold {h.threshold_s:.1f} s)")


@dataclass(frozen=True, slots=True)
class _Status:
    """What the certainty rule asks of a rank's status: where it came from."""

    source: str


def crash_failures(state: stall.JobState, failures: Iterable[Failure]) -> list[Failure]:
    """The failures seen, and the ranks that vanished before them (by the records' own times)."""
    fs = rules.cause.explain(failures)
    seen = {r: rs.last_seen for r, rs in state.ranks.items() if rs.last_seen is not None}
    ended = [r for r, rs in state.ranks.items() if rs.exit_code is not None]
    return fs + rules.cause.vanished(seen, ended, fs, state.last_t)


def open_wrap(lines: list[tuple[int, str]]) -> int:
    """Where the lines that may still continue begin: the trailing run of consecutive lines of one width a
    terminal wraps at (``sources.lines.rejoin_wrapped``), at most ``MAX_WRAP_PIECES``; ``len(lines)`` when the
    last line cannot be a piece that more pieces follow (a shorter line ends a wrapped one)."""
    n = len(lines)
    if not n:
        return 0
    w = len(lines[-1][1])
    if not WRAP_MIN <= w <= WRAP_MAX:
        return n
    k = n - 1
    while (k > 0 and n - k < MAX_WRAP_PIECES and len(lines[k - 1][1]) == w
           and lines[k - 1][0] == lines[k][0] - 1 and not starts_a_line(lines[k][1])):
        k -= 1  # a piece after the first never starts like a line of its own (an NCCL head, a frame)
    return k


def _open_traceback(batch: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The lines of a traceback still waiting for its exception line (to parse again with what follows)."""
    start = None
    for i in range(len(batch) - 1, max(-1, len(batch) - 400), -1):
        if TRACEBACK in batch[i][1]:
            start = i
            break
    if start is None:
        return []
    for _, text in batch[start + 1:]:
        body = strip_tool_prefixes(text)[1]  # torchrun's [rankN]:, srun --label's "N: ", mpirun's [1,N]<stderr>:
        if body and not body[0].isspace() and TRACEBACK not in body:
            return []  # the exception line arrived
    return batch[start:]
