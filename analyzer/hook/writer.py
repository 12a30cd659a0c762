"""The hook's records on their way to disk: two bounded deques that the training thread and the poller
append to (one C call, no lock and no wake-up of the writer, which polls), and the writer thread that
writes them to ``ncclscope-rank<R>.jsonl`` in batches, ``write_s`` apart. Standard library only."""
from __future__ import annotations

import collections
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import records as R
from .chaos import Chaos

SENTINEL: dict[str, Any] = {"type": "__stop__"}  # appended to ``events`` last: the writer's last batch


def _ignore(pgname: str, seq: int, t: float) -> None:
    return None


class Writer:
    """``queue``: per-collective tuples (%-format, values...); ``events``: every other record (dicts).
    A full deque drops its oldest record, counted in ``dropped``; above ``records_s`` a second the
    middle of a batch is left out, counted in ``sampled_out``. ``fail`` turns the hook's own trouble
    into ``error`` records (at most 5 per place). The blocking GPU collectives a batch writes (their
    coll formats are in ``await_fmts``) go to ``on_written`` (the poller awaits their completion)."""

    def __init__(self, rank: int, path: Path, queue_max: int, records_s: float, chaos: Chaos,
                 await_fmts: dict[str, str]) -> None:
        self.rank = rank
        self.path = path
        self.chaos = chaos
        self.queue_max = queue_max
        self.queue: collections.deque[tuple[Any, ...]] = collections.deque(maxlen=queue_max)
        self.events: collections.deque[dict[str, Any]] = collections.deque(maxlen=queue_max)
        self.write_s = 0.2
        self.records_s = records_s
        self.dropped = 0
        self.sampled_out = 0
        self.errors: dict[str, int] = collections.Counter()
        self.await_fmts = await_fmts
        self.on_written: Callable[[str, int, float], None] = _ignore
        self.flushed = threading.Event()  # set after each batch
        self.thread = threading.Thread(target=self._loop, name="ncclscope-writer", daemon=True)

    def put(self, rec: dict[str, Any] | tuple[Any, ...]) -> None:
        q: collections.deque[Any] = self.queue if type(rec) is tuple else self.events
        if len(q) >= (q.maxlen or 0):
            self.dropped += 1  # the deque drops its oldest record to take this one
        q.append(rec)

    def fail(self, where: str, exc: BaseException) -> None:
        """The hook's own trouble: an ``error`` record (at most 5 per place), never an exception."""
        try:
            self.errors[where] += 1
            if self.errors[where] <= 5:
                self.put(R.error(self.rank, where, f"{type(exc).__name__}: {exc}"))
        except Exception:  # noqa: BLE001, S110 - the last line of defence
            pass

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float) -> None:
        """The last batch: everything queued before this, then the thread ends (bounded wait)."""
        self.events.append(SENTINEL)
        self.thread.join(timeout=timeout)

    @staticmethod
    def lines(batch: list[Any]) -> str:
        """The text of a batch: a tuple is (%-format, values...), anything else a record dict."""
        return "".join([r[0] % r[1:] if type(r) is tuple else json.dumps(r, default=str, separators=(",", ":")) + "\n"
                        for r in batch])

    def take(self, allowed: int) -> list[Any]:
        """What to write now: at most ``allowed`` per-collective tuples (the oldest and the newest
        half of those queued; the count left out goes to ``sampled_out``), then every other record.
        C-speed whatever the backlog (the queue is swapped for a fresh one and sliced), so the
        writer holds the GIL for the records it writes, not for those it leaves out. The blocking
        GPU collectives written are handed to ``on_written`` for their ``done`` lines."""
        batch: list[Any] = []
        if self.queue:
            old, self.queue = self.queue, collections.deque(maxlen=self.queue_max)
            time.sleep(0.001)  # let an append that fetched ``old`` just before the swap land in it
            batch = list(old)
            if len(batch) > allowed:
                self.sampled_out += len(batch) - allowed
                batch = batch[: allowed // 2] + batch[len(batch) - (allowed - allowed // 2):]
            fmts = self.await_fmts
            if fmts:
                for r in batch:
                    if r[0] in fmts:
                        self.on_written(fmts[r[0]], r[2], r[1])
        ev = self.events
        if ev:
            batch += [ev.popleft() for _ in range(len(ev))]
        return batch

    def _loop(self) -> None:
        f = None
        next_open = 0.0
        allowed = max(64, int(self.records_s * self.write_s))
        stop = False
        while not stop:
            # one wake-up per write_s, not one per record: the training thread shares the GIL with us
            time.sleep(self.write_s)
            if not self.queue and not self.events:
                self.flushed.set()
                continue
            batch = self.take(allowed)
            stop = any(r is SENTINEL for r in batch)
            if stop:
                batch = [r for r in batch if r is not SENTINEL]
            try:
                self.chaos.check("write")
                text = self.lines(batch)
                if f is None and time.monotonic() >= next_open:
                    try:
                        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                                     0o644)  # never through a link planted at its name
                        f = open(fd, "a", encoding="utf-8")  # noqa: SIM115
                    except OSError:
                        next_open = time.monotonic() + 5.0
                if f is None:
                    self.dropped += len(batch)
                else:
                    f.write(text)
                    f.flush()
            except Exception as e:  # noqa: BLE001 - disk full, folder gone, chaos: drop and go on
                self.dropped += len(batch)
                self.errors["write"] += 1
                if self.errors["write"] <= 5 and "write" not in self.chaos:
                    self.put(R.error(self.rank, "write", f"{type(e).__name__}: {e}"))
            self.flushed.set()
        if f is not None:
            try:
                f.close()
            except OSError:
                pass
