"""Alert sinks: alerts.jsonl lines, a real HTTP webhook on 127.0.0.1, a command, the console."""
from __future__ import annotations

import io
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from ncclscope.live.alerts import CommandSink, ConsoleSink, FileSink, WebhookSink, make_alert

CONTRACT_KEYS = ["ts", "time", "kind", "verdict", "culprit_ranks", "stuck", "message", "where"]


class _Server:
    def __init__(self, statuses: list[int], hold: threading.Event | None = None) -> None:
        """``hold``: each request, once read (``arrived`` set), is answered only after ``hold`` is set."""
        self.bodies: list[dict] = []
        self.statuses = statuses
        self.hits = 0
        self.arrived = threading.Event()
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                outer.hits += 1
                code = outer.statuses[min(outer.hits - 1, len(outer.statuses) - 1)]
                outer.arrived.set()
                if hold is not None:
                    hold.wait(600)  # a safety net: the test releases it
                if code == 200:
                    outer.bodies.append(json.loads(body))
                self.send_response(code)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *a: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.handle_error = lambda *a: None  # type: ignore[method-assign]  # clients that timed out
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server([200])
    yield s
    s.close()


def _alert(**kw: object) -> dict:
    return make_alert("hang", "hang", [1], {"pg": "0", "seq": 126, "op": "allreduce"},
                      "rank 1 never joined allreduce #126", {1: "train.py:88 in main (time.sleep)"}, ts=1795980460.52,
                      **kw)


def test_alert_has_contract_fields_in_order() -> None:
    a = _alert()
    assert list(a)[:8] == CONTRACT_KEYS
    assert a["time"] == "2026-11-29T19:27:40.520Z" and a["where"] == {"1": "train.py:88 in main (time.sleep)"}


def test_file_sink_appends_one_object_a_line(tmp_path: Path) -> None:
    s = FileSink(tmp_path / "alerts.jsonl")
    s.emit(_alert())
    s.emit(make_alert("cleared", "healthy", [], None, "moves again"))
    lines = (tmp_path / "alerts.jsonl").read_text().splitlines()
    assert [json.loads(x)["kind"] for x in lines] == ["hang", "cleared"]
    bad = FileSink(tmp_path / "missing" / "alerts.jsonl")
    bad.emit(_alert())
    assert bad.errors and "cannot append" in bad.errors[0]


def test_webhook_posts_slack_text_and_fields(server: _Server) -> None:
    s = WebhookSink(server.url)
    s.emit(_alert())
    s.close()
    assert not s.errors
    (body,) = server.bodies
    assert body["text"].startswith("*ncclscope hang*: rank 1 never joined")
    assert "rank 1: train.py:88" in body["text"]
    assert {k: body[k] for k in CONTRACT_KEYS} == _alert()


def test_webhook_retries_server_errors_then_succeeds() -> None:
    srv = _Server([500, 503, 200])
    try:
        s = WebhookSink(srv.url, retries=3, backoff_s=0.05)
        s.emit(_alert())
        s.close()
        assert srv.hits == 3 and len(srv.bodies) == 1 and not s.errors
    finally:
        srv.close()


def test_webhook_gives_up_without_blocking_the_caller() -> None:
    srv = _Server([404])
    try:
        s = WebhookSink(srv.url, retries=3, backoff_s=0.05)
        s.emit(_alert())
        s.close()
        assert srv.hits == 1 and "HTTP 404" in s.errors[0]  # a client error is not retried
    finally:
        srv.close()
    held = threading.Event()
    slow = _Server([200], hold=held)
    try:  # an endpoint that does not answer: the sink times out and says so
        s = WebhookSink(slow.url, timeout_s=0.3, retries=2, backoff_s=0.05)
        s.emit(_alert())
        s.close()
        assert s.errors and not s.sent
    finally:
        held.set()
        slow.close()
    held = threading.Event()
    slow = _Server([200], hold=held)
    try:  # emit only enqueues: it returns while the sink's one sender is blocked in a POST the server holds
        # a synchronous emit would return only once this timeout passed, with an error
        s = WebhookSink(slow.url, timeout_s=300, retries=1, backoff_s=0.05)
        s.emit(_alert())
        assert slow.arrived.wait(600), "the first alert never reached the server"  # a safety net
        for _ in range(3):
            s.emit(_alert())
        assert (s.sent, s.errors, slow.bodies) == (0, [], [])  # the first POST is still unanswered
        held.set()
        s.close()
        assert (s.sent, s.errors, len(slow.bodies)) == (4, [], 4)
    finally:
        held.set()
        slow.close()
    dead = WebhookSink("http://127.0.0.1:9/nothing", timeout_s=0.5, retries=2, backoff_s=0.05)
    dead.emit(_alert())
    dead.close()
    assert dead.errors and "2 attempt" in dead.errors[0]


def test_command_gets_the_alert_on_stdin(tmp_path: Path) -> None:
    out = tmp_path / "got.json"
    s = CommandSink(f"{sys.executable} -c \"import sys; open('{out}', 'w').write(sys.stdin.read())\"")
    s.emit(_alert())
    s.close()
    assert json.loads(out.read_text())["culprit_ranks"] == [1]
    f = CommandSink("exit 7")
    f.emit(_alert())
    f.close()
    assert f.errors == ["alert command exited 7"]


def test_console_block() -> None:
    from rich.console import Console

    buf = io.StringIO()
    ConsoleSink(Console(file=buf, width=100, force_terminal=False)).emit(_alert())
    text = buf.getvalue()
    assert "ncclscope hang" in text and "rank 1: train.py:88 in main (time.sleep)" in text
