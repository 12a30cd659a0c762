"""The dashboard against another site and against big uploads: Host allow-list (DNS rebinding),
same-origin POSTs, one unpack budget per upload, a capped streaming body, uploads gone on exit."""
from __future__ import annotations

import base64
import http.client
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from ncclscope.dashboard import data as dash_data
from ncclscope.dashboard.app import create_app
from ncclscope.dashboard.data import RunStore

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "gpu_hang"


@pytest.fixture
def store(tmp_path: Path):
    rs = RunStore(tmp_path / "store")
    yield rs
    rs.close()


def _data_url(blob: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(blob).decode()


@pytest.mark.parametrize(("host", "header", "ok"), [
    ("127.0.0.1", "127.0.0.1:8050", True), ("127.0.0.1", "localhost:8050", True), ("127.0.0.1", "[::1]:8050", True),
    ("127.0.0.1", "evil.example:8050", False), ("127.0.0.1", "evil.example", False),
    ("127.0.0.1", "127.0.0.1.evil.example", False), ("10.1.2.3", "10.1.2.3:8050", True),
    ("10.1.2.3", "attacker.example", False), ("0.0.0.0", "anything.example", True)])
def test_host_header_allow_list(store, host, header, ok):
    app = create_app(run_store=store, host=host)
    auth = f"Bearer {app.server.config['ncclscope_token']}"
    status = app.server.test_client().get("/_dash-layout", headers={"Host": header, "Authorization": auth}).status_code
    assert (status == 200) == ok, status


def test_cross_origin_post_refused(store):
    app = create_app(run_store=store)
    client = app.server.test_client()
    auth = f"Bearer {app.server.config['ncclscope_token']}"  # even with the token: the Origin is checked
    body = {"output": "x.children", "outputs": {"id": "x", "property": "children"}, "inputs": [], "changedPropIds": []}
    evil = client.post("/_dash-update-component", json=body,
                       headers={"Host": "127.0.0.1:8050", "Origin": "http://evil.example", "Authorization": auth})
    assert evil.status_code == 403
    null = client.post("/_dash-update-component", json=body,
                       headers={"Host": "127.0.0.1:8050", "Origin": "null", "Authorization": auth})
    assert null.status_code == 403
    same = client.post("/_dash-update-component", json=body,
                       headers={"Host": "127.0.0.1:8050", "Origin": "http://127.0.0.1:8050", "Authorization": auth})
    assert same.status_code != 403


def _zip_of(files: list[Path], prefix: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p in files:
            z.write(p, f"{prefix}/{p.name}")
    return buf.getvalue()


def test_one_budget_for_all_archives_of_an_upload(store, monkeypatch):
    logs = sorted(SAMPLE.glob("*.log"))
    one = sum(p.stat().st_size for p in logs)
    monkeypatch.setattr(dash_data, "MAX_EXTRACT_BYTES", int(one * 2.5))  # each zip fits; three do not
    blobs = [_zip_of(logs, f"part{i}") for i in range(3)]
    key = store.submit_upload([f"p{i}.zip" for i in range(3)], [_data_url(b) for b in blobs])
    store.wait(key)
    st = store.status(key)
    assert st["state"] == "error" and "in all" in st["message"], st
    assert not any(store.workdir.iterdir())  # the refused upload is deleted
    # two of them fit the same budget
    key = store.submit_upload([f"p{i}.zip" for i in range(2)], [_data_url(b) for b in blobs[:2]])
    store.wait(key)
    assert store.status(key)["state"] == "done", store.status(key)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_chunked_body_is_cut_at_the_limit(store):
    """No Content-Length: the body streams in chunks; it is refused at the limit, not read whole."""
    from werkzeug.serving import make_server

    app = create_app(run_store=store)
    auth = f"Bearer {app.server.config['ncclscope_token']}"  # the owner's own request: only the size refuses it
    app.server.config["MAX_CONTENT_LENGTH"] = 1 << 20
    srv = make_server("127.0.0.1", 0, app.server, threaded=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", srv.server_port, timeout=30)
        chunk = b"a" * 65536

        def body():
            yield b'{"inputs": "'
            for _ in range(200):  # 12.5 MB, over the 1 MB limit
                yield chunk

        try:
            conn.request("POST", "/_dash-update-component", body=body(), encode_chunked=True,
                         headers={"Content-Type": "application/json", "Host": f"127.0.0.1:{srv.server_port}",
                                  "Authorization": auth})
            status = conn.getresponse().status
        except (ConnectionError, BrokenPipeError):
            status = 411  # the server stopped reading and closed: also refused, not buffered
        assert status == 411
        # a declared length over the limit: refused before the body is read
        conn = http.client.HTTPConnection("127.0.0.1", srv.server_port, timeout=30)
        conn.putrequest("POST", "/_dash-update-component", skip_host=True)
        conn.putheader("Host", f"127.0.0.1:{srv.server_port}")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Authorization", auth)
        conn.putheader("Content-Length", str(10 << 30))
        conn.endheaders()
        conn.send(b'{"inputs": ')
        assert conn.getresponse().status == 413
    finally:
        srv.shutdown()
        t.join(5)


def test_uploads_deleted_when_serve_is_terminated(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    port = _free_port()
    env = dict(os.environ, TMPDIR=str(tmp))
    p = subprocess.Popen([sys.executable, "-m", "ncclscope", "serve", "--port", str(port)], cwd=ROOT, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 600  # a safety net: the wait is on the event
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        workdirs = list(tmp.glob("ncclscope-serve-*"))
        assert workdirs, "the server made no upload folder"
        (workdirs[0] / "u-planted").mkdir()  # as an upload would
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=600)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert not list(tmp.glob("ncclscope-serve-*")), "uploads left on disk after the server ended"


def test_fifo_alerts_file_leaks_no_thread_per_poll(tmp_path, store):
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "alerts.jsonl")
    store.start_live(run)
    before = threading.active_count()
    results = []
    for _ in range(5):
        t = threading.Thread(target=lambda: results.append(dash_data.newest_alert(run / "alerts.jsonl")),
                             daemon=True)
        t.start()
        t.join(2)
        assert not t.is_alive(), "reading a FIFO alerts file blocked"
    assert results == [None] * 5
    assert threading.active_count() <= before


def test_log_view_skips_a_log_swapped_for_a_fifo(tmp_path, store):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run, ignore=shutil.ignore_patterns(".ncclscope-cache"))
    key = store.analyze([run], "run")
    entry = store.get(key)
    assert "stderr.log" in entry.files
    (run / "stderr.log").unlink()
    os.mkfifo(run / "stderr.log")
    done = []
    t = threading.Thread(target=lambda: done.append(dash_data.build_log_index(entry)), daemon=True)
    t.start()
    t.join(30)
    assert done, "the log view blocked on a FIFO"
    assert "stderr.log" not in set(done[0]["file"].astype(str)) and len(done[0])
