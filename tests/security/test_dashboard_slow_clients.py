"""Slow clients must not take the dashboard down: hundreds of connections sending a byte every few seconds
(more than the server may hold open) and a normal request is still answered; a head or a body past its
deadline is closed. Loopback only, a bounded number of sockets; every wait ends on the event it waits for
(its bound only ends a test that has failed)."""
from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from ncclscope.dashboard.server import Limits, effective_connection_limit, make_server

ROOT = Path(__file__).resolve().parents[2]
SLOW = 200  # slow connections
OPEN_FILES = 128  # the server's open-file limit: fewer than the slow connections
BYTE_EVERY_S = 2.0
BOUND_S = 120  # a bound for a failing test only


class SlowClients:
    """``n`` connections that each send a request head one byte every ``every`` seconds, never finishing it."""

    def __init__(self, port: int, n: int, every: float = BYTE_EVERY_S) -> None:
        self.socks: list[socket.socket] = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=BOUND_S)
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            self.socks.append(s)
        self.every = every
        self.stopped = threading.Event()
        self.sent_round = threading.Event()
        self.thread = threading.Thread(target=self._drip, name="slow-clients", daemon=True)
        self.thread.start()

    def _drip(self) -> None:
        while not self.stopped.wait(self.every):
            for s in list(self.socks):
                try:
                    s.send(b"X")
                except OSError:  # closed by the server: that one is done
                    self.socks.remove(s)
            self.sent_round.set()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(BOUND_S)
        for s in self.socks:
            s.close()


def _get(port: int, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND_S)
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


LIMITED_SERVE = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_NOFILE, ({n}, {n})); "
                 "sys.argv = ['ncclscope', 'serve', '--port', '{port}']; runpy.run_module('ncclscope', run_name='__main__')")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[int, str]]:
    """``ncclscope serve`` (an upload-only dashboard) with at most OPEN_FILES open files; (port, token)."""
    token = "slow-clients-test-token-0123456789"
    env = dict(os.environ, NCCLSCOPE_DASHBOARD_TOKEN=token, TMPDIR=str(tmp_path))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-c", LIMITED_SERVE.format(n=OPEN_FILES, port=port)], cwd=ROOT, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        printed = threading.Event()

        def wait_for_url() -> None:
            assert p.stderr is not None
            for line in p.stderr:
                if re.search(r"ncclscope dashboard: http://", line):
                    break
            printed.set()

        threading.Thread(target=wait_for_url, daemon=True).start()
        assert printed.wait(BOUND_S) and p.poll() is None, "serve did not start"
        # the URL is printed just before the server runs: wait until it answers
        while True:
            try:
                _get(port, "/_dash-layout", {"Authorization": f"Bearer {token}"})
                break
            except ConnectionRefusedError:
                assert p.poll() is None, "serve ended"
        yield port, token
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_hundreds_of_slow_connections_leave_a_normal_request_answered(served: tuple[int, str]) -> None:
    """More slow connections than the server has files for: the one that waited longest for its head makes
    room for the next, so a normal request gets in and is answered."""
    port, token = served
    slow = SlowClients(port, SLOW)
    try:
        assert slow.sent_round.wait(BOUND_S)  # the slow clients are at it
        status, body = _get(port, "/_dash-layout", {"Authorization": f"Bearer {token}"})
        assert status == 200 and b"props" in body
        assert _get(port, "/_dash-layout", {})[0] == 403  # answered, and still behind the token
    finally:
        slow.close()


def _serve(limits: Limits, nofile: int = 4096):  # type: ignore[no-untyped-def]
    def app(_environ, start_response):  # type: ignore[no-untyped-def]
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"answered"]

    srv = make_server(app, "127.0.0.1", 0, limits, nofile=nofile)
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    return srv, t


def _closed_by_server(s: socket.socket) -> bool:
    """Blocks until the server closes ``s`` (True) or the bound passes (False)."""
    s.settimeout(BOUND_S)
    try:
        while True:
            data = s.recv(4096)
            if not data:
                return True
    except TimeoutError:
        return False
    except OSError:
        return True


def test_a_head_past_its_deadline_is_closed() -> None:
    srv, t = _serve(Limits(header_timeout_s=1.0, idle_timeout_s=600, poll_s=0.2))
    slow = SlowClients(srv.port, 1, every=0.2)  # never idle, never done
    try:
        assert _closed_by_server(slow.socks[0]) and srv.overdue_closed == 1
    finally:
        slow.close()
        srv.stop()
        t.join(10)


def test_a_body_past_its_deadline_is_closed() -> None:
    srv, t = _serve(Limits(body_timeout_s=1.0, body_min_rate=1e12, idle_timeout_s=600, poll_s=0.2))
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=BOUND_S)
    s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
    stop = threading.Event()

    def drip() -> None:
        while not stop.wait(0.2):
            try:
                s.send(b"x")
            except OSError:
                return

    dripper = threading.Thread(target=drip, daemon=True)
    dripper.start()
    try:
        assert _closed_by_server(s) and srv.overdue_closed == 1
    finally:
        stop.set()
        dripper.join(10)
        s.close()
        srv.stop()
        t.join(10)


def test_at_the_connection_limit_the_longest_waiting_head_makes_room() -> None:
    srv, t = _serve(Limits(connection_limit=10, header_timeout_s=600, idle_timeout_s=600, poll_s=0.2))
    slow = SlowClients(srv.port, 30)
    try:
        assert _get(srv.port, "/", {}) == (200, b"answered")
        assert srv.evicted >= 1
        assert srv.adj.connection_limit == 10
    finally:
        slow.close()
        srv.stop()
        t.join(10)


def test_the_connection_limit_stays_within_the_open_file_limit() -> None:
    assert effective_connection_limit(Limits(connection_limit=500), 128) == 64
    assert effective_connection_limit(Limits(connection_limit=500), 1 << 20) == 500
