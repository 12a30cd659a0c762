"""Another user of the node must not read a run through the dashboard: every route of every bind asks for the
start's token (loopback included), compared in constant time; ``serve`` and ``run --dashboard`` print the URL
with it; ``run`` hands it over in the environment, never on a command line, and keeps its log private."""
from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ncclscope.dashboard import access
from ncclscope.dashboard.app import create_app
from ncclscope.dashboard.data import RunStore
from ncclscope.dashboard.server import Limits, make_server

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "gpu_hang"
UP_WITHIN_S = 120  # a bound for a failing test only: the waits end on what they wait for


@pytest.fixture
def store(tmp_path: Path):
    rs = RunStore(tmp_path / "store")
    yield rs
    rs.close()


def _routes(app) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(method, path) of every route the Flask server has, converters filled with a plausible value."""
    out = []
    for rule in app.server.url_map.iter_rules():
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", lambda m: "x.js" if "path" in m[1] or "filename" in m[1] else "x",
                      rule.rule)
        out += [(m, path) for m in sorted(rule.methods - {"HEAD", "OPTIONS"})]
    return out


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "0.0.0.0", "10.1.2.3"])
def test_every_route_of_every_bind_needs_the_token(store, host):
    app = create_app(run_store=store, host=host)
    token = app.server.config["ncclscope_token"]
    client = app.server.test_client()
    name = "[::1]" if host == "::1" else ("127.0.0.1" if host == "0.0.0.0" else host)
    routes = _routes(app)
    assert ("GET", "/metrics") in routes and ("POST", "/_dash-update-component") in routes and len(routes) > 5
    for method, path in routes + [("GET", "/topology"), ("GET", "/logs")]:
        resp = client.open(path, method=method, headers={"Host": f"{name}:8050"}, json={} if method == "POST" else None)
        assert resp.status_code == 403, (method, path, resp.status_code)
        assert b"access token" in resp.data
    ok = client.get("/_dash-layout", headers={"Host": f"{name}:8050", "Authorization": f"Bearer {token}"})
    assert ok.status_code == 200


def test_metrics_takes_a_bearer_token_or_the_query_and_compares_in_constant_time(store, monkeypatch):
    app = create_app(path=SAMPLE, run_store=store, wait=True)
    token = app.server.config["ncclscope_token"]
    compared: list[bytes] = []
    real = access.hmac.compare_digest

    def recording(a: bytes, b: bytes) -> bool:
        compared.append(a)
        return real(a, b)

    monkeypatch.setattr(access.hmac, "compare_digest", recording)
    client = app.server.test_client()
    assert client.get("/metrics", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert token.encode() in compared
    resp = client.get(f"/metrics?token={token}")  # no redirect: a scraper keeps no cookie
    assert resp.status_code == 200 and b"ncclscope_" in resp.data
    assert client.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 403
    assert client.get("/metrics", headers={"Authorization": f"Basic {token}"}).status_code == 403
    assert client.get(f"/metrics?token={token[:-1]}").status_code == 403


def test_tokens_differ_between_starts(store):
    assert create_app(run_store=store).server.config["ncclscope_token"] != \
        create_app(run_store=store).server.config["ncclscope_token"]
    assert len(access.new_token()) >= access.MIN_TOKEN_CHARS


def test_a_body_without_the_token_is_refused_before_it_is_read(store):
    """The server asks for the token once a request's head is in: 100 MB announced, none of it sent, refused."""
    app = create_app(run_store=store)
    token = app.server.config["ncclscope_token"]
    srv = make_server(app.server, "127.0.0.1", 0, Limits(), admit=lambda h, q: access.headers_carry_token(token, h, q))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=UP_WITHIN_S)
        conn.putrequest("POST", "/_dash-update-component")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(100 << 20))
        conn.endheaders()
        resp = conn.getresponse()
        assert resp.status == 403 and b"access token" in resp.read()
    finally:
        srv.stop()
        t.join(10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read_url(stream, proc: subprocess.Popen) -> str:  # type: ignore[no-untyped-def]
    """The URL ``serve`` prints on stderr (the process ending first fails the test)."""
    got: list[str] = []
    done = threading.Event()

    def read() -> None:
        for line in stream:
            m = re.search(r"ncclscope dashboard: (\S+)", line)
            if m:
                got.append(m[1])
                done.set()
                return
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(UP_WITHIN_S) and got, f"serve printed no URL (exit {proc.poll()})"
    return got[0]


def _status(port: int, path: str, headers: dict[str, str] | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=UP_WITHIN_S)
    conn.request("GET", path, headers=headers or {})
    status = conn.getresponse().status
    conn.close()
    return status


def test_serve_on_loopback_asks_for_the_token_it_prints(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != access.TOKEN_ENV}
    p = subprocess.Popen([sys.executable, "-m", "ncclscope", "serve", "--port", str(port)], cwd=ROOT, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        url = _read_url(p.stderr, p)
        m = re.fullmatch(rf"http://127\.0\.0\.1:{port}/\?token=([\w-]{{32}})", url)
        assert m, url
        assert _status(port, "/") == 403
        assert _status(port, "/metrics") == 403
        assert _status(port, "/_dash-layout", {"Authorization": f"Bearer {m[1]}"}) == 200
        assert _status(port, f"/?token={m[1]}") == 302
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(30)


def test_serve_warns_about_a_token_on_the_command_line_and_refuses_a_short_one():
    from click.testing import CliRunner
    from ncclscope.commands.serve import command

    short = CliRunner().invoke(command, ["--token", "abc", "--port", str(_free_port())])
    assert short.exit_code != 0 and "at least 16 characters" in short.output


def test_run_dashboard_prints_the_token_and_keeps_it_off_the_command_line(tmp_path):
    from ncclscope import run_dashboard

    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    notes: list[str] = []
    d = run_dashboard.start(run, 0, notes.append, held=False)
    assert d is not None
    try:
        assert re.search(r"dashboard: http://127\.0\.0\.1:\d+/\?token=[\w-]{32} \(live;", notes[-1]), notes
        assert d.token and d.token not in Path(f"/proc/{d.proc.pid}/cmdline").read_bytes().decode()
        port = int(d.url.rsplit(":", 1)[1].strip("/"))
        deadline = time.monotonic() + UP_WITHIN_S
        status = None
        while time.monotonic() < deadline and d.proc.poll() is None:
            try:
                status = _status(port, "/_dash-layout", {"Authorization": f"Bearer {d.token}"})
                break
            except OSError:
                time.sleep(0.2)
        assert status == 200, d.log.read_text()[-2000:] if d.log.exists() else "no log"
        assert _status(port, "/_dash-layout") == 403
        assert stat.S_IMODE(d.log.stat().st_mode) == 0o600  # it holds the URL with the token
    finally:
        run_dashboard.finish(d, None, notes.append)
