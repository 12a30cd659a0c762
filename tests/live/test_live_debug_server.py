"""PyTorch's debug server as a live source (``watch DIR --debug-server URL``): its pages read, what is fetched and
what is refused, and a real gloo job that starts the server and hangs, alerted from the server's Flight Recorder state.

The page fixtures are written in the shape of torch 2.13's frontend (``torch/distributed/debug/_frontend.py``:
``JSON_RESP_TEMPLATE``, ``<h2>Rank N: ADDR</h2>`` then ``<pre>`` and the dump, or ``<p>Failed to fetch: status=N</p>``)
with dumps in the Flight Recorder's JSON shape (``version``, ``pg_config``, ``pg_status``, ``entries``), own values.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ncclscope.live.debug_server import (
    DebugServerError,
    FrFeed,
    ServerUrl,
    Snapshot,
    fetch,
    parse_fr_page,
    parse_server_url,
)
from ncclscope.live.monitor import LiveConfig, LiveMonitor


def entry(seq: int, *, retired: bool, state: str = "scheduled", t_ns: int = 1_796_600_000_000_000_000) -> dict:
    return {"collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq, "pg_id": 0, "process_group": ["0", "default_pg"],
            "profiling_name": "gloo:all_reduce", "input_sizes": [[1024]], "input_dtypes": ["Float"],
            "output_sizes": [[1024]], "output_dtypes": ["Float"], "is_p2p": False, "record_id": seq - 1,
            "state": state, "retired": retired, "time_created_ns": t_ns + seq * 1_000_000,
            "time_discovered_started_ns": 0, "time_discovered_completed_ns": 0, "timeout_ms": 1_800_000}


def dump(done: int, enq: int, last_completed: int) -> dict:
    return {"version": "2.10", "comm_lib_version": "", "pg_config": {"": {"name": "", "desc": "", "ranks": "[0, 1]"}},
            "pg_status": {"0": {"last_enqueued_collective": str(enq), "last_started_collective": "-1",
                                "last_completed_collective": str(last_completed)}},
            "entries": [entry(s, retired=s <= done) for s in range(1, enq + 1)]}


def page(sections: list[tuple[int, str, dict | None, str]]) -> str:
    """The frontend's JSON page: a section a rank, its dump (indent 2, unescaped) or the worker's failure."""
    body = []
    for rank, addr, d, err in sections:
        body.append(f"        <h2>Rank {rank}: {addr}</h2>\n        \n")
        if d is None:
            body.append(f"            <p>Failed to fetch: status=503</p>\n            <pre>{err}</pre>\n")
        else:
            body.append(f"            <pre>{json.dumps(d, indent=2)}</pre>\n")
    return ("<!doctype html>\n<head>\n    <title>FlightRecorder - PyTorch Distributed</title>\n</head>\n<nav>\n"
            "    <h1>Torch Distributed Debug Server</h1>\n</nav>\n<section class=\"content\">\n    <h1>FlightRecorder</h1>\n"
            + "".join(body) + "</section>\n")


HUNG = page([(0, "http://trn-04:41527/handler/fr_trace_json?", dump(done=3, enq=4, last_completed=2), ""),
             (1, "http://trn-05:38811/handler/fr_trace_json?", dump(done=3, enq=3, last_completed=3), "")])


def test_the_frontends_page_reads_to_each_ranks_dump() -> None:
    with_failure = page([(0, "http://trn-04:41527/handler/fr_trace_json?", dump(3, 4, 2), ""),
                         (1, "http://trn-05:38811/handler/fr_trace_json?", None, "ConnectionError: refused </pre> x")])
    out = parse_fr_page(with_failure, "http://127.0.0.1:25999/fr_trace_json")
    assert [(d.rank, d.host, d.dump is not None) for d in out] == [(0, "trn-04", True), (1, "trn-05", False)]
    assert out[0].dump is not None and out[0].dump.rank == 0 and out[0].dump.pg_status["0"]["last_enqueued"] == 4
    assert len(out[0].dump.entries) == 4 and out[0].dump.file.endswith("#rank0")
    assert out[1].error is not None and out[1].error.startswith("status 503: ConnectionError")


def test_an_escaped_page_is_read_too() -> None:
    escaped = HUNG.replace('"', "&#34;")
    assert [d.dump is not None for d in parse_fr_page(escaped, "x")] == [True, True]


def test_the_dumps_become_the_monitors_records() -> None:
    snap = Snapshot(100.0, tuple(parse_fr_page(HUNG, "x")))
    feed = FrFeed()
    recs = feed.records(snap)
    kinds = [(r, t) for r, t, _ in recs]
    assert kinds.count((0, "coll")) == 4 and kinds.count((0, "done")) == 3 and kinds.count((1, "coll")) == 3
    start = next(d for r, t, d in recs if (r, t) == (0, "start"))
    assert start == {"world": 2, "host": "trn-04", "backend": "gloo"}
    coll = next(d for r, t, d in recs if (r, t) == (0, "coll") and d["seq"] == 4)
    assert (coll["pg"], coll["op"], coll["numel"], coll["dtype"]) == ("0", "gloo:all_reduce", 1024, "float32")
    hb = next(d for r, t, d in recs if (r, t) == (0, "hb"))
    assert hb == {"t": 100.0, "pgs": {"0": {"enq": 4, "done": 3}}}  # gloo's lagging count (2) raised by the entries
    again = feed.records(Snapshot(105.0, snap.dumps))
    assert [t for _, t, _ in again] == ["start", "hb", "start", "hb"]  # each collective is fed once


def test_a_hang_is_alerted_from_the_servers_state(tmp_path: Path) -> None:
    mon = LiveMonitor(tmp_path, LiveConfig(stall_seconds=3.0, console=False, write=False), clock=lambda: 0.0)
    dumps = tuple(parse_fr_page(HUNG, "x"))
    mon.feed_debug_server([Snapshot(100.0, dumps)])
    assert mon.poll_once(now=101.0) == []
    mon.feed_debug_server([Snapshot(105.0, dumps)])  # nothing moved, every rank answered
    alerts = mon.poll_once(now=105.0)
    assert [(a["kind"], a["culprit_ranks"], a["stuck"]) for a in alerts] == [
        ("hang", [1], {"pg": "0", "seq": 4, "op": "allreduce"})]
    assert alerts[0]["waiting_ranks"] == [0]


def test_ranks_that_move_on_clear_it(tmp_path: Path) -> None:
    mon = LiveMonitor(tmp_path, LiveConfig(stall_seconds=3.0, console=False, write=False), clock=lambda: 0.0)
    mon.feed_debug_server([Snapshot(100.0, tuple(parse_fr_page(HUNG, "x")))])
    assert [a["kind"] for a in mon.poll_once(now=110.0)] == ["hang"]
    moved = page([(0, "a", dump(done=5, enq=5, last_completed=5), ""), (1, "b", dump(done=5, enq=5, last_completed=5), "")])
    mon.feed_debug_server([Snapshot(111.0, tuple(parse_fr_page(moved, "x")))])
    assert [a["kind"] for a in mon.poll_once(now=111.0)] == ["cleared"]


# --- what is fetched, what is refused ----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("25999", ServerUrl("http", "127.0.0.1", 25999)),
    (":25999", ServerUrl("http", "127.0.0.1", 25999)),
    ("trn-04:26001", ServerUrl("http", "trn-04", 26001)),
    ("http://10.0.3.7:25999/", ServerUrl("http", "10.0.3.7", 25999)),
    ("https://trn-04.cluster:8443", ServerUrl("https", "trn-04.cluster", 8443)),
    ("http://[::1]:25999", ServerUrl("http", "::1", 25999)),
])
def test_the_server_named(text: str, want: ServerUrl) -> None:
    assert parse_server_url(text) == want


@pytest.mark.parametrize(("text", "why"), [
    ("file:///etc/passwd", "only http"), ("ftp://h:21", "only http"), ("http://user:pw@h:25999", "credentials"),
    ("http://h:25999/fr_trace", "server only"), ("http://h:25999/?x=1", "server only"), ("http://:25999", "no host"),
    ("http://h:99999", "port"), ("http://h:port", "port"),
])
def test_urls_refused(text: str, why: str) -> None:
    with pytest.raises(DebugServerError, match=why):
        parse_server_url(text)


class Site:
    """A local HTTP server whose answers a test sets (path -> (status, headers, body, delay)), recording requests."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, dict[str, str], bytes, float]] = {}
        self.seen: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.seen.append(self.path)
                status, headers, body, delay = site.routes.get(self.path, (404, {}, b"no", 0.0))
                time.sleep(delay)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> ServerUrl:
        return ServerUrl("http", "127.0.0.1", self.port)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def sites() -> Iterator[list[Site]]:
    made = [Site(), Site()]
    yield made
    for s in made:
        s.close()


def test_a_page_is_fetched_and_a_same_server_redirect_followed(sites: list[Site]) -> None:
    a, _ = sites
    a.routes["/fr_trace_json"] = (302, {"Location": "/fr_trace_json2"}, b"", 0.0)
    a.routes["/fr_trace_json2"] = (200, {}, HUNG.encode(), 0.0)
    assert fetch(a.url, "/fr_trace_json") == HUNG.encode()
    assert a.seen == ["/fr_trace_json", "/fr_trace_json2"]


def test_a_redirect_to_another_server_is_not_followed(sites: list[Site]) -> None:
    a, b = sites
    a.routes["/fr_trace_json"] = (302, {"Location": f"http://127.0.0.1:{b.port}/fr_trace_json"}, b"", 0.0)
    b.routes["/fr_trace_json"] = (200, {}, HUNG.encode(), 0.0)
    with pytest.raises(DebugServerError, match="another server"):
        fetch(a.url, "/fr_trace_json")
    assert b.seen == []


def test_an_answer_past_the_bound_is_refused(sites: list[Site]) -> None:
    a, _ = sites
    a.routes["/big"] = (200, {}, b"x" * 5000, 0.0)  # no Content-Length: counted as it arrives
    a.routes["/said"] = (200, {"Content-Length": "5000"}, b"x" * 5000, 0.0)
    for path in ("/big", "/said"):
        with pytest.raises(DebugServerError, match="read at most"):
            fetch(a.url, path, max_bytes=4096)


def test_an_answer_too_slow_is_given_up(sites: list[Site]) -> None:
    a, _ = sites
    a.routes["/slow"] = (200, {}, b"late", 2.0)
    with pytest.raises((DebugServerError, OSError)):
        fetch(a.url, "/slow", timeout_s=0.3)


def test_no_proxy_is_asked(sites: list[Site], monkeypatch: pytest.MonkeyPatch) -> None:
    a, proxy = sites
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    a.routes["/fr_trace_json"] = (200, {}, b"ok", 0.0)
    assert fetch(a.url, "/fr_trace_json") == b"ok"
    assert proxy.seen == []


def test_an_http_error_is_said(sites: list[Site]) -> None:
    a, _ = sites
    with pytest.raises(DebugServerError, match="HTTP 404"):
        fetch(a.url, "/fr_trace_json")


# --- a real job --------------------------------------------------------------------------------------------------

def _missing() -> str | None:
    """Why the debug server cannot run here, or None."""
    try:
        from torch.distributed import debug
    except ImportError:
        return "torch with torch.distributed.debug (2.10+) is not installed"
    if not hasattr(debug, "start_debug_server"):
        return "the installed torch has no torch.distributed.debug.start_debug_server (torch 2.10+)"
    if importlib.util.find_spec("jinja2") is None or importlib.util.find_spec("tabulate") is None:
        return "torch's debug server frontend needs jinja2 and tabulate, not installed"
    return None


JOB = """
import os, sys, time
import torch, torch.distributed as dist
from torch.distributed.debug import start_debug_server

def main():
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo")
    start_debug_server(port=int(os.environ["DEBUG_SERVER_PORT"]), dump_interval=1.0)
    t = torch.ones(256)
    for _ in range(3):
        dist.all_reduce(t)
    print(f"rank {rank}: 3 all_reduce done", flush=True)
    if rank == 1:
        time.sleep(600)  # the hang: rank 1 never calls the 4th
    dist.all_reduce(t)

if __name__ == "__main__":
    main()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
@pytest.mark.skipif(_missing() is not None, reason=_missing() or "")
def test_a_real_job_that_hangs_is_alerted_from_its_debug_server(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    port = free_port()
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": "2",
           "DEBUG_SERVER_PORT": str(port), "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1",
           "CUDA_VISIBLE_DEVICES": ""}
    procs = [subprocess.Popen([sys.executable, str(job)], env={**env, "RANK": str(r)}, start_new_session=True,
                              stdout=(run_dir / f"rank{r}.log").open("w"), stderr=subprocess.STDOUT) for r in (0, 1)]
    mon = LiveMonitor(run_dir, LiveConfig(stall_seconds=3.0, console=False, write=False, debug_server=str(port)))
    assert mon.debug_server is not None
    try:
        deadline = time.monotonic() + 180
        alerts: list[dict] = []
        while time.monotonic() < deadline and not any(a["kind"] == "hang" for a in alerts):
            assert all(p.poll() is None for p in procs), (run_dir / "rank0.log").read_text()[-2000:]
            mon.debug_server.poll()  # on this thread: the poller's own thread is for watch
            alerts += mon.poll_once()
            time.sleep(0.5)
        hang = next(a for a in alerts if a["kind"] == "hang")
        assert hang["culprit_ranks"] == [1] and hang["stuck"] == {"pg": "0", "seq": 4, "op": "allreduce"}
        assert hang["waiting_ranks"] == [0]
        assert mon.state.gloo and {r: s.host for r, s in mon.state.ranks.items()}.keys() == {0, 1}
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=600)
        mon.sinks.close()


# --- damaged pages ----------------------------------------------------------------------------------------------



@pytest.mark.parametrize("junk", ["[", "[]", "[::1", "]"])
def test_a_bracket_spliced_into_a_workers_url_is_no_host(junk: str) -> None:
    """A bracket inside a worker's URL (``http://[...``) is a malformed IPv6 host to urlsplit: no host, no raise."""
    at = HUNG.index("http") + len("http://")
    dumps = parse_fr_page(HUNG[:at] + junk + HUNG[at:], "x")
    FrFeed().records(Snapshot(1.0, tuple(dumps)))
    assert all(d.host is None or isinstance(d.host, str) for d in dumps)


def test_a_malformed_server_url_is_a_clear_error() -> None:
    with pytest.raises(DebugServerError):
        parse_server_url("http://[::1")


@settings(max_examples=200, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(HUNG)), st.integers(0, len(HUNG)), st.text(max_size=60))
def test_a_damaged_page_never_raises(cut: int, at: int, junk: str) -> None:
    """A page cut short (a connection dropped at the bound) or with anything spliced in reads to the sections that
    are whole; what it yields still feeds the monitor's records."""
    for text in (HUNG[:cut], HUNG[:at] + junk + HUNG[at:]):
        dumps = parse_fr_page(text, "x")
        assert all(d.dump is not None or d.error for d in dumps)
        FrFeed().records(Snapshot(1.0, tuple(dumps)))
