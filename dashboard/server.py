"""The HTTP server the dashboard runs on: waitress, with deadlines and a connection limit slow clients cannot exhaust.

waitress reads every request whole on one thread before a worker runs it, so a client that sends a byte
now and then holds a connection, never a worker. What it holds is bounded here:

- a request's head must be complete within ``header_timeout_s`` of its first byte, its body within
  ``body_timeout_s`` plus its length at ``body_min_rate`` bytes a second; a connection silent for
  ``idle_timeout_s`` is closed (waitress' ``channel_timeout``);
- at most ``connection_limit`` connections (lowered to half the process' open-file limit); at the limit a
  new connection is let in by closing the one that has waited longest for a request head (or been idle
  longest), so a crowd of slow connections delays a normal request by one poll, never shuts it out;
- heads over ``max_header_bytes`` and bodies over ``max_body_bytes`` are refused (431, 413);
- ``admit`` (the token check) is asked once a head is complete and before a body is read: a request
  without the token never has its body stored.
"""
from __future__ import annotations

import resource
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import TcpWSGIServer
from waitress.task import ThreadedTaskDispatcher
from waitress.utilities import Error

Admit = Callable[[Mapping[str, str], str], bool]  # (head's headers as waitress keys them, query) -> let the body in


@dataclass(frozen=True)
class Limits:
    connection_limit: int = 500
    threads: int = 8
    header_timeout_s: float = 15.0
    body_timeout_s: float = 60.0
    body_min_rate: float = 1024 * 1024  # bytes a second, over the whole body
    idle_timeout_s: int = 60
    max_header_bytes: int = 64 * 1024
    max_body_bytes: int = 1 << 30
    poll_s: float = 1.0  # how often the deadlines are checked


class Forbidden(Error):
    code = 403
    reason = "Forbidden"


def open_files_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def effective_connection_limit(limits: Limits, nofile: int) -> int:
    """The connection limit within the open-file limit (half of it: logs, uploads and analyses need files too)."""
    if nofile <= 0 or nofile == resource.RLIM_INFINITY:
        return limits.connection_limit
    return max(8, min(limits.connection_limit, nofile // 2))


class _Parser(HTTPRequestParser):
    """waitress' request parser, asking ``admit`` once the head is complete and a body is announced."""

    admit: Admit | None = None
    error: Error | None = None

    def received(self, data: bytes) -> int:
        had_head = self.headers_finished
        n: int = super().received(data)
        if (not had_head and self.headers_finished and self.error is None and self.admit is not None
                and (self.content_length > 0 or self.chunked) and not self.admit(self.headers, self.query)):
            self.error = Forbidden("ncclscope: this dashboard needs its access token before it reads a request body")
            self.completed = True
        return n


class GuardedChannel(HTTPChannel):
    """A connection that knows since when it has been waiting for a request's head, or for its body."""

    head_since: float | None = None  # first byte of a request whose head is not complete
    body_since: float | None = None  # head complete, body still arriving
    body_length = 0

    def received(self, data: bytes) -> bool:
        now = time.monotonic()
        if data and self.request is None and self.head_since is None and self.body_since is None:
            self.head_since = now
        done: bool = super().received(data)
        req = self.request
        if req is None:  # every request in ``data`` was complete: waiting for nothing
            self.head_since = self.body_since = None
        elif req.headers_finished:
            if self.body_since is None:
                self.head_since, self.body_since, self.body_length = None, now, max(req.content_length, 0)
        elif self.head_since is None:  # a complete request, then the start of the next one
            self.head_since, self.body_since = now, None
        return done

    def overdue(self, now: float, limits: Limits) -> bool:
        if self.head_since is not None and now - self.head_since > limits.header_timeout_s:
            return True
        return self.body_since is not None and now - self.body_since > (
            limits.body_timeout_s + self.body_length / limits.body_min_rate)

    def evictable_since(self) -> float | None:
        """Since when it has waited for a head (or sat idle): the older, the sooner it makes room; None: keep."""
        if self.requests or self.will_close or self.close_when_flushed or self.total_outbufs_len:
            return None  # a request being answered
        if self.body_since is not None:
            return None  # a body on its way: its own deadline ends it
        return self.head_since if self.head_since is not None else self.last_activity - time.time() + time.monotonic()


class GuardedServer(TcpWSGIServer):
    """``TcpWSGIServer`` with head and body deadlines and room made at the connection limit."""

    channel_class = GuardedChannel
    limits: Limits = Limits()
    next_channel_cleanup: float = 0
    evicted = 0  # connections closed to let a new one in
    overdue_closed = 0  # connections closed for a head or body past its deadline
    _stop: threading.Event

    def maintenance(self, now: float) -> None:
        super().maintenance(now)  # idle connections (channel_timeout)
        mono = time.monotonic()
        for channel in list(self.active_channels.values()):
            if isinstance(channel, GuardedChannel) and not channel.requests and not channel.will_close \
                    and channel.overdue(mono, self.limits):
                channel.will_close = True
                self.overdue_closed += 1

    def readable(self) -> bool:
        now = time.time()
        if now >= self.next_channel_cleanup:
            self.next_channel_cleanup = now + self.adj.cleanup_interval
            self.maintenance(now)
        if not self.accepting:
            return False
        if len(self._map) < self.adj.connection_limit:
            return True
        self._make_room()  # accepted on a later turn of the loop, once that connection is closed
        return False

    def _make_room(self) -> None:
        closing = sum(1 for c in self.active_channels.values() if c.will_close)
        if len(self._map) - closing < self.adj.connection_limit:
            return  # room is being made already
        waiting = [(since, id(c), c) for c in self.active_channels.values()
                   if isinstance(c, GuardedChannel) and (since := c.evictable_since()) is not None]
        if waiting:
            min(waiting, key=lambda t: (t[0], t[1]))[2].will_close = True
            self.evicted += 1

    def run(self) -> None:
        """Serve until ``stop``; then close every connection and the workers."""
        from waitress import wasyncore

        try:
            while not self._stop.is_set():
                wasyncore.loop(timeout=self.limits.poll_s, map=self._map, use_poll=True, count=1)
        finally:
            for obj in list(self._map.values()):
                try:
                    obj.close()
                except OSError:
                    pass
            self.task_dispatcher.shutdown(cancel_pending=True, timeout=5)

    def stop(self) -> None:
        """Ask ``run`` to return (from any thread or a signal handler)."""
        self._stop.set()
        try:
            self.pull_trigger()
        except OSError:
            pass

    @property
    def port(self) -> int:
        return int(self.effective_port)


def make_server(wsgi_app: Any, host: str, port: int, limits: Limits = Limits(), admit: Admit | None = None,
                nofile: int | None = None) -> GuardedServer:
    """A server bound to ``host:port`` (0: any free port), not yet running: call ``run()`` (``stop()`` ends it).
    Raises OSError when the address cannot be bound."""
    parser = type("AdmittingParser", (_Parser,), {"admit": staticmethod(admit) if admit else None})
    channel = type("AdmittingChannel", (GuardedChannel,), {"parser_class": parser})
    server_class = type("DashboardServer", (GuardedServer,), {"channel_class": channel, "limits": limits})
    conn_limit = effective_connection_limit(limits, open_files_limit() if nofile is None else nofile)
    adj = Adjustments(
        host=host, port=port, threads=limits.threads, connection_limit=conn_limit,
        channel_timeout=limits.idle_timeout_s, cleanup_interval=max(1, int(limits.poll_s)),
        max_request_header_size=limits.max_header_bytes, max_request_body_size=limits.max_body_bytes,
        asyncore_use_poll=True, asyncore_loop_timeout=max(1, int(limits.poll_s)), ident="ncclscope",
        expose_tracebacks=False)
    dispatcher = ThreadedTaskDispatcher()
    dispatcher.set_thread_count(adj.threads)
    server: GuardedServer = server_class(wsgi_app, map={}, dispatcher=dispatcher, adj=adj, sockinfo=adj.listen[0])
    server._stop = threading.Event()
    return server
