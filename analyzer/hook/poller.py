"""The hook's poller: a background thread that, every ``poll_s``, sees the open collectives complete
(``work.is_completed()``, Flight Recorder's ``pg_status``; never a callback on PyTorch's threads),
turns the call budget, and every ``hb_s`` writes a heartbeat, a stall's stack, and answers a dump
request. Flight Recorder is read only when due (``fr_status``). Standard library only; torch is
imported where Flight Recorder is read.
"""
from __future__ import annotations

import collections
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import records as R
from .budget import WRAPPERS
from .calls import UNLIMITED, CallPath
from .chaos import Chaos
from .writer import Writer

CONTROL_MAX = 4096  # bytes of the dump-request file read, at most


def read_control(path: Path) -> str:
    """The dump-request file's first ``CONTROL_MAX`` bytes: a regular file only, opened without
    following a link and without blocking (a FIFO, a device or a link to /dev/zero raises OSError)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.read(fd, CONTROL_MAX).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _completed(work: Any) -> bool:
    try:
        return bool(work.is_completed())
    except Exception:  # noqa: BLE001 - a failed work counts as finished
        return True


def _to_int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _work_duration(work: Any) -> float | None:
    fn = getattr(work, "_get_duration", None)
    if fn is None:
        return None
    try:
        d = float(fn())
    except Exception:  # noqa: BLE001 - gloo, or timing off
        return None
    return d if d >= 0 else None


class Poller:
    """Completion, heartbeats, stalls, dump requests and the call budget, on the ``ncclscope-ticker``
    thread. Reads what the training thread left (``calls``: group slots, pending works) and puts its
    records in the writer's deques."""

    def __init__(self, calls: CallPath, writer: Writer, run_dir: Path, rank: int, backend: str, chaos: Chaos,
                 hb_s: float, poll_s: float, stall_s: float, fr_s: float, calls_s: int, budget_on: bool) -> None:
        self.calls = calls
        self.writer = writer
        self.run_dir = run_dir
        self.rank = rank
        self.backend = backend
        self.chaos = chaos
        self.hb_s, self.poll_s, self.stall_s = hb_s, poll_s, stall_s
        # the per-call budget (``budget.py``): calls left this tick before the wrappers come off
        # (the first time it is spent, Flight Recorder is asked whether it covers every group)
        self.calls_s = calls_s
        self.budget_on = budget_on
        calls.left = max(1, int(calls_s * poll_s)) if budget_on else UNLIMITED
        calls.on_spent = self.over_budget
        self.can_pause = False
        self._paused_enq: int | None = None  # the groups' summed sequence numbers when they came off
        self.untraced = 0
        self._want_pause = False
        self._budget_reads = 0
        self._budget_lock = threading.Lock()
        # blocking GPU collectives whose coll line was written, per group in order: (seq, t)
        self.awaiting: dict[str, collections.deque[tuple[int, float]]] = {}
        self.n_awaiting = 0
        # per group, the collectives not yet seen complete, in issue (= sequence) order
        self.open: dict[str, collections.deque[tuple[int, float, Any]]] = {}
        self.n_open = 0
        self.max_open = calls.pending.maxlen or 4096
        self.done: dict[str, int] = {}  # completions seen by the poller (asynchronous works)
        # Flight Recorder's pg_status is read at a heartbeat only when it is due (``fr_status``):
        # every NCCLSCOPE_HOOK_FR_S (the heartbeat's period) while the groups' sequence numbers
        # move, every heartbeat once they stop (a stall suspected, or only C++ collectives), and
        # never oftener than its own measured cost allows (0.1 % of the time; 1 % while idle)
        self.fr_s = fr_s
        self._fr_last: dict[str, dict[str, int | None]] = {}
        self._fr_t = -1e18
        self._fr_cost = 0.0
        self.fr_reads = 0
        self._fr_status_fn: Callable[..., Any] | None = None
        self._fr_status_failed = False
        self._seq_sig: Any = None
        self.step: int | None = None  # optimizer steps, counted by the tracer's hook
        self.main_ident = threading.main_thread().ident
        self.control = run_dir / "ncclscope-control" / "dump-request"
        self._req_key = self._control_key()
        self._progress_sig: Any = None
        self._last_progress = time.monotonic()
        self._gaps: collections.deque[float] = collections.deque(maxlen=20)
        self._stall_reported = False
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="ncclscope-ticker", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float) -> None:
        """No tick after the current one (bounded wait)."""
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(timeout=timeout)

    # --- completion ----------------------------------------------------------------------------
    def _fr_status(self) -> dict[str, dict[str, int | None]]:
        """Flight Recorder ``pg_status`` (keys: process group ids) or {} where there is none."""
        if self._fr_status_failed:
            return {}
        import torch._C._distributed_c10d as C

        names = (["_dump_nccl_trace_json"] if "nccl" in self.backend else []) + ["_dump_fr_trace_json"]
        fns = [self._fr_status_fn] if self._fr_status_fn is not None else [getattr(C, n, None) for n in names]
        for fn in fns:
            if fn is None:
                continue
            try:
                raw = fn(includeCollectives=False)
            except Exception:  # noqa: BLE001, S112 - try the next one
                continue
            self._fr_status_fn = fn
            obj = json.loads(raw)
            out: dict[str, dict[str, int | None]] = {}
            for pgid, st in (obj.get("pg_status") or {}).items():
                if isinstance(st, dict):
                    out[str(pgid)] = {k: _to_int(st.get(f"last_{k}_collective")) for k in ("enqueued", "started", "completed")}
            return out
        self._fr_status_failed = True
        return {}

    def fr_status(self, idle: bool = False, force: bool = False) -> dict[str, dict[str, int | None]]:
        """Flight Recorder's ``pg_status`` when a read is due, else the one read last: due every
        ``fr_s`` while the groups progress, every heartbeat while they are ``idle`` (no sequence
        number moved: a stall suspected, or collectives that only C++ issues), and never oftener
        than 1000 (idle: 100) times the last read's own cost, whatever this torch makes it cost
        (a read that dumps the whole ring while holding the GIL is then made rarely, not every
        second; the few microseconds that ``includeCollectives=False`` costs where it is honoured
        keep the heartbeat's period)."""
        now = time.monotonic()
        if not force:
            period = max(0.5 * self.hb_s, 100.0 * self._fr_cost) if idle else max(self.fr_s, 1000.0 * self._fr_cost)
            if now - self._fr_t < 0.9 * period:  # 0.9: a heartbeat a little early is still due
                return self._fr_last
        t0 = time.perf_counter()
        status = self._fr_status()
        self._fr_cost = max(time.perf_counter() - t0, 0.5 * self._fr_cost)
        self._fr_t = now
        self.fr_reads += 1
        self._fr_last = status
        return status

    def poll(self) -> dict[str, dict[str, int | None]]:
        """Completion of the open collectives, group by group from the oldest: a tick costs the ones
        that completed since the last tick, plus one look at the newest of each group."""
        self.chaos.check("poll")
        opened = self.open
        pending = self.calls.pending
        while pending:
            pgname, seq, t0, work = pending.popleft()
            q = opened.get(pgname)
            if q is None:
                q = opened[pgname] = collections.deque()
            q.append((seq, t0, work))
            self.n_open += 1
        while self.n_open > self.max_open:
            max(opened.values(), key=len).popleft()
            self.n_open -= 1
            self.writer.dropped += 1
        status: dict[str, dict[str, int | None]] = {}
        if not self.n_open:
            return status
        if any(q and q[0][2] is None for q in opened.values()):
            status = self._fr_last  # no read of its own: the heartbeat's, when one was due
        now_t = now_pc = time.time()  # t0 of a collective is wall time
        for pgname, q in opened.items():
            if not q:
                continue
            fr_done = (status.get(pgname) or {}).get("completed")
            last_seq, _t0, last_work = q[-1]
            # ops of one group complete in order: a completed newest work completes all before it
            upto = last_seq if last_work is not None and _completed(last_work) else None
            while q:
                seq, t0, work = q[0]
                if work is not None:
                    if not (seq == upto or _completed(work)):
                        break
                    dur = _work_duration(work)
                    how, dur_ms = "work", dur if dur is not None else (now_pc - t0) * 1000.0
                elif fr_done is not None and fr_done >= seq:
                    how, dur_ms = "fr", (now_pc - t0) * 1000.0
                elif upto is not None and seq < upto:
                    how, dur_ms = "order", (now_pc - t0) * 1000.0
                else:
                    break
                q.popleft()
                self.n_open -= 1
                self.writer.put((self.calls.done_format(pgname, how), now_t, seq, dur_ms))
                if not pgname.endswith(":p2p") and seq > self.done.get(pgname, 0):
                    self.done[pgname] = seq
        return status

    def _complete_awaiting(self, status: dict[str, dict[str, int | None]]) -> None:
        """``done`` lines for the written blocking GPU collectives that Flight Recorder says completed."""
        now_t = time.time()
        for pgname, q in self.awaiting.items():
            fr_done = (status.get(pgname) or {}).get("completed")
            if fr_done is None:
                continue
            while q and q[0][0] <= fr_done:
                seq, t = q.popleft()
                self.n_awaiting -= 1
                self.writer.put((self.calls.done_format(pgname, "fr"), now_t, seq, max(0.0, (now_t - t) * 1000.0)))

    def await_done(self, pgname: str, seq: int, t: float) -> None:
        """The writer wrote this blocking GPU collective's coll line: its done line follows (bounded)."""
        q = self.awaiting.get(pgname)
        if q is None:
            q = self.awaiting[pgname] = collections.deque()
        q.append((seq, t))
        self.n_awaiting += 1
        if self.n_awaiting > self.max_open:
            max(self.awaiting.values(), key=len).popleft()
            self.n_awaiting -= 1
            self.writer.dropped += 1

    def group_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """(enqueued, completed) per group as this process knows them without Flight Recorder: the
        groups' own sequence numbers (C++ collectives included), the blocking CPU calls returned
        and the works the poller saw complete."""
        enq: dict[str, int] = {}
        done = dict(self.done)
        for slot in list(self.calls.groups.values()):
            if slot is None:
                continue
            e = slot.enq
            try:
                e = max(e, int(slot.seqfn()))
            except Exception:  # noqa: BLE001, S110 - a destroyed group: what Python saw
                pass
            if e:  # a group that has had no collective yet is not reported (nor judged stalled)
                enq[slot.name] = max(enq.get(slot.name, 0), e)
            if slot.done > done.get(slot.name, 0):
                done[slot.name] = slot.done
        return enq, done

    # --- the call budget -------------------------------------------------------------------------
    def over_budget(self) -> None:
        """This tick's call budget is spent (called from a wrapper, once a tick): torch's own
        functions go back in until ``budget_tick``, where Flight Recorder covers completion."""
        if not self.budget_on:
            return
        if not self.can_pause:
            self._want_pause = True  # ``budget_tick`` asks Flight Recorder now, not at the next heartbeat
            return
        if self.stop_event.is_set() or not self._budget_lock.acquire(blocking=False):
            return  # never wait on the training thread: the poller is turning them; next tick then
        try:
            if self._paused_enq is None:  # not off already (the tracer alone turns them)
                self._paused_enq = sum(self.group_counts()[0].values())
                WRAPPERS.turn(False)
        finally:
            self._budget_lock.release()

    @staticmethod
    def fr_covers(status: dict[str, dict[str, int | None]], enq: dict[str, int]) -> bool:
        """Flight Recorder reports completion for every group that has issued a collective."""
        return bool(status) and all(name in status for name in enq)

    def budget_tick(self) -> None:
        """Every poll: the wrappers back in, the calls made without them counted, a fresh budget."""
        with self._budget_lock:
            if self._paused_enq is not None:
                WRAPPERS.turn(True)
                self.untraced += max(0, sum(self.group_counts()[0].values()) - self._paused_enq)
                self._paused_enq = None
        if self._want_pause and not self.can_pause:
            self._want_pause = False
            enq = self.group_counts()[0]
            status = self.fr_status()
            if not self.fr_covers(status, enq) and self._budget_reads < 3 and self._fr_cost < 0.05:
                # the last read may predate these groups' first collective: read again now, a few
                # times a process at most and only where a read is cheap
                self._budget_reads += 1
                status = self.fr_status(force=True)
            self.can_pause = self.fr_covers(status, enq)
        self.calls.left = (max(1, int(self.calls_s * self.poll_s)) if self.can_pause and self.budget_on and self.calls_s
                           else UNLIMITED)

    # --- heartbeats, stalls, requests ------------------------------------------------------------
    def heartbeat(self, fresh_fr: bool = False) -> None:
        self.chaos.check("hb")
        enq, done = self.group_counts()
        seq_sig = tuple(sorted(enq.items()))
        idle = seq_sig == self._seq_sig
        self._seq_sig = seq_sig
        status = self.fr_status(idle=idle, force=fresh_fr)
        # calls may go untraced only where Flight Recorder tells every group's completion
        self.can_pause = self.fr_covers(status, enq)
        if self.n_awaiting:
            # the done lines of the blocking GPU collectives come with the Flight Recorder reads
            self._complete_awaiting(status)
        pgs: dict[str, dict[str, int | None]] = {}
        for name in set(enq) | set(done) | set(status):
            st = status.get(name) or {}
            e = max(enq.get(name, 0), st.get("enqueued") or 0)
            dn = max(done.get(name, 0), st.get("completed") or 0)
            started = st.get("started")
            pgs[name] = {"enq": e, "start": started if started is not None and started >= 0 else None, "done": dn}
        w = self.writer
        w.put(R.heartbeat(self.rank, self.step, pgs, w.dropped, w.sampled_out, self.untraced))
        sig = tuple(sorted((k, v["enq"], v["done"]) for k, v in pgs.items()))
        now = time.monotonic()
        if sig != self._progress_sig:
            if self._progress_sig is not None:
                self._gaps.append(now - self._last_progress)
            self._progress_sig = sig
            self._last_progress = now
            self._stall_reported = False
        elif sig and not self._stall_reported and now - self._last_progress > self.stall_threshold():
            self._stall_reported = True
            self.write_stack("stall", stalled_s=round(now - self._last_progress, 3))

    def stall_threshold(self) -> float:
        """``NCCLSCOPE_HOOK_STALL_S``, or three times the job's usual gap between progress, if longer."""
        if len(self._gaps) >= 5:
            gaps = sorted(self._gaps)
            return max(self.stall_s, 3.0 * gaps[len(gaps) // 2])
        return self.stall_s

    def write_stack(self, reason: str, **extra: Any) -> None:
        self.chaos.check("stack")
        frame = sys._current_frames().get(self.main_ident) if self.main_ident is not None else None
        frames = R.frames_of(frame, limit=400)
        del frame
        self.writer.put(R.stack(self.rank, reason, R.where_of(frames), R.trim(frames), **extra))

    def _control_key(self) -> tuple[int, int, int] | None:
        """The dump-request file's identity, or None where there is none (or it, or its folder, is a link)."""
        try:
            if stat.S_ISLNK(os.lstat(self.control.parent).st_mode):
                return None
            st = os.lstat(self.control)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def check_request(self) -> None:
        key = self._control_key()
        if key is None or key == self._req_key:
            return
        self._req_key = key
        self.chaos.check("request")
        req_id: Any = None
        try:
            req_id = json.loads(read_control(self.control)).get("id")
        except (OSError, ValueError, AttributeError, RecursionError):
            req_id = None
        try:
            self.write_stack("request", request_id=req_id)
        except Exception as e:  # noqa: BLE001
            self.writer.fail("stack", e)
        path = self.dump_fr()
        if path is not None:
            self.writer.put(R.fr(self.rank, str(path), req_id))

    def dump_fr(self, stem: str = "fr_live", stacks: bool = True) -> Path | None:
        """Flight Recorder pickle to ``<stem>_rank<R>.pkl`` (written aside, then renamed)."""
        import torch._C._distributed_c10d as C

        names = (["_dump_nccl_trace"] if "nccl" in self.backend else []) + ["_dump_fr_trace"]
        for n in names:
            fn = getattr(C, n, None)
            if fn is None:
                continue
            try:
                data = fn(True, stacks, False)
            except TypeError:
                try:
                    data = fn()
                except Exception:  # noqa: BLE001, S112
                    continue
            except Exception:  # noqa: BLE001, S112
                continue
            if not data or len(data) < 64:
                continue
            dest = self.run_dir / f"{stem}_rank{self.rank}.pkl"
            tmp = self.run_dir / f".{stem}_rank{self.rank}.{os.urandom(8).hex()}.tmp"  # no name to plant a link at
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644),
                           "wb") as f:
                f.write(data)
            os.replace(tmp, dest)
            return dest
        return None

    def _loop(self) -> None:
        last_hb = 0.0
        fail = self.writer.fail
        while not self.stop_event.wait(self.poll_s):
            try:
                self.poll()
            except Exception as e:  # noqa: BLE001
                fail("poll", e)
            try:
                self.budget_tick()
            except Exception as e:  # noqa: BLE001
                fail("budget", e)
            now = time.monotonic()
            if now - last_hb < self.hb_s:
                continue
            last_hb = now
            try:
                self.heartbeat()
            except Exception as e:  # noqa: BLE001
                fail("hb", e)
            try:
                self.check_request()
            except Exception as e:  # noqa: BLE001
                fail("request", e)
